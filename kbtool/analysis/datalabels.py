"""Labels of data items from the functions around them (:mod:`kbtool.analysis.datamodel`):
errno, the malloc family's state, function-pointer and string tables."""

from __future__ import annotations

from bisect import bisect_right

from kbtool.wasm import ModuleAnalysis

from . import datawalk_active
from .dataitems import _slug, read_memory
from .datatypes import DataItem, DataModel

MALLOC_FAMILY = frozenset(
    {
        "malloc",
        "free",
        "realloc",
        "calloc",
        "memalign",
        "posix_memalign",
        "aligned_alloc",
        "malloc_usable_size",
        "internal_memalign",
        "dispose_chunk",
        "sys_alloc",
        "tmalloc_large",
        "tmalloc_small",
        "prepend_alloc",
        "release_unused_segments",
        "sys_trim",
        "init_top",
        "init_bins",
        "add_segment",
        "emscripten_builtin_malloc",
        "emscripten_builtin_free",
    }
)
ERRNO_FUNCS = frozenset({"__errno_location", "___errno_location", "__errno"})


def _base_name(name: str) -> str:
    n = name.lstrip("_")
    return n[2:] if n.startswith("dl") and n[2:] in MALLOC_FAMILY else n


def role_labels(model: DataModel, analysis: ModuleAnalysis, names: dict[int, str]) -> None:
    """Labels from what the code around an item is known to be (``names``: function index
    -> name, e.g. the recognizers' and the KB's): ``errno`` (the address ``__errno_location``
    returns or its only static access), ``dlmalloc_state`` / ``malloc_state`` (the static
    variables the malloc family reads and writes, merged into one item), function-pointer
    tables named from the functions they hold (``ftable_<common prefix>``), tables of string
    pointers from their first string (``strtab_<text>``). Mutates ``model`` in place."""
    if not model.items:
        return
    item_starts = datawalk_active.ITEMS.item_starts

    def item_of(addr: int) -> int | None:
        # the model's own starts (what ``item_at`` reads): every change of the items here
        # empties them, and they are made again on the next lookup (a compiled pass)
        if not model._starts:
            model._starts = item_starts(model.items)
        k = bisect_right(model._starts, addr) - 1
        if k < 0:
            return None
        it = model.items[k]
        return k if it.address <= addr < it.address + max(it.size, 1) else None

    # errno: what __errno_location touches (no pass over the functions when no name is one
    # of its names: the pass finds nothing then)
    has_errno = not ERRNO_FUNCS.isdisjoint(names.values())
    for f in analysis.functions if has_errno else ():
        # (the name's test without a generator per function: ffmpeg has 22k)
        if f.imported or names.get(f.index, "") not in ERRNO_FUNCS:
            continue
        hits: set[int] = {
            k
            for r in model.ref_rows
            if r[0] == f.index and r[3] == "data" and (k := item_of(r[4])) is not None
        }
        if not hits:  # `i32.const ADDR; end`: an address into .bss is not a reference
            consts = {c for c in f.consts if model.data_start <= c < model.data_end}
            if len(consts) == 1:
                # what it returns is errno's own address: an item starts there
                k = _split_at(model, consts.pop())
                hits = set() if k is None else {k}
        if len(hits) == 1:
            model.items[hits.pop()].label = "errno"
    # the malloc family's static state, merged into one item
    fam = {i for i, n in names.items() if _base_name(n) in MALLOC_FAMILY}
    # ... and the unnamed functions they call (malloc as a wrapper of the allocator proper)
    funcs = analysis.functions
    fam |= {
        c
        for i in list(fam)
        if 0 <= i < len(funcs)
        for c in funcs[i].calls
        if c not in names and 0 <= c < len(funcs) and not funcs[c].imported
    }
    if fam:
        total: dict[int, int] = {}
        mine: dict[int, int] = {}
        for fi, _off, _kind, tk, target, _w in model.ref_rows:
            if tk != "data" or fi < 0:
                continue
            k = item_of(target)
            if k is None:
                continue
            total[k] = total.get(k, 0) + 1
            if fi in fam:
                mine[k] = mine.get(k, 0) + 1
        cand = {
            k
            for k, n in mine.items()
            if n * 10 >= total[k] * 6 and model.items[k].kind in ("bss", "zero", "numeric")
        }
        # contiguous runs of candidates; the run the family touches most is its state
        runs: list[list[int]] = []
        for k in sorted(cand):
            prev = model.items[k - 1] if k > 0 else None
            if (
                runs
                and runs[-1][-1] == k - 1
                and prev is not None
                and prev.address + prev.size == model.items[k].address
            ):
                runs[-1].append(k)
            else:
                runs.append([k])
        best = max(runs, key=lambda r: (sum(mine[k] for k in r), -r[0]), default=None)
        if best is not None and sum(mine[k] for k in best) >= 4:
            lo_k, hi_k = best[0], best[-1]
            first, last = model.items[lo_k], model.items[hi_k]
            merged = DataItem(
                address=first.address,
                size=last.address + last.size - first.address,
                kind=first.kind,
                segment=first.segment,
                label="dlmalloc_state"
                if any(names.get(i, "").lstrip("_").startswith("dl") for i in fam)
                else "malloc_state",
                refs=sum(model.items[k].refs for k in best),
            )
            model.items[lo_k : hi_k + 1] = [merged]
            model._starts = []
    # tables named from what they hold, their bounds on the array alignment first
    align_tables(model, analysis)
    if not model._starts:  # (for item_of and item_at below)
        model._starts = item_starts(model.items)
    # (the tables' positions found by a compiled pass: no Python step per item)
    kind_positions = datawalk_active.ITEMS.kind_positions
    ftables = kind_positions(model.items, "funcptr_table")
    tables = ftables + kind_positions(model.items, "pointer_table")
    tables.sort()
    slot_func: dict[int, int] = {}  # (read by function-pointer tables only)
    for e in analysis.module.elements if ftables else ():
        if e.mode == "active" and e.offset is not None:
            for j, fi in enumerate(e.func_indices):
                if fi is not None:
                    slot_func[e.offset + j] = fi
    for t_k in tables:
        it = model.items[t_k]
        if it.kind == "funcptr_table" and it.targets:
            fnames = [n for t in it.targets if t and (n := names.get(slot_func.get(t, -1)))]
            if fnames:
                prefix = _common_prefix(fnames).rstrip("_")
                base = prefix if len(prefix) >= 3 else fnames[0]
                it.label = "ftable_" + (_slug(base) or f"{it.address:x}")
        elif it.kind == "pointer_table" and it.targets:
            k = item_of(next((t for t in it.targets if t), -1))
            tgt = model.items[k] if k is not None else None
            if (
                tgt is not None
                and tgt.kind in ("cstring", "utf16", "gostring")
                and tgt.text
                and _points_at_strings(it.targets, model, analysis)
            ):
                it.label = "strtab_" + (_slug(tgt.text) or f"{it.address:x}")
    datawalk_active.ITEMS.unique_labels(model.items)  # (compiled with the walk)


def _points_at_strings(targets: list[int], model: DataModel, analysis: ModuleAnalysis) -> bool:
    """Whether a table's words read as pointers to strings: its first non-null word and
    half of them point into string items (at their start or a merged suffix of one), one
    in five at a string's first byte, and they are not all round numbers (sizes like
    0x2000, 0x4000 that fall in the data)."""
    nonzero = [t for t in targets if t]
    if not nonzero or (len(nonzero) >= 2 and all(t % 64 == 0 for t in nonzero)):
        return False
    hits = starts = 0
    for n, t in enumerate(nonzero):
        it = model.item_at(t)
        ok = it is not None and (it.address == t or it.kind in ("cstring", "utf16"))
        if n == 0 and not ok:
            return False
        hits += ok
        # a pointer at a string's first byte, not a number that lands inside one
        if it is not None and ok and (it.address == t or not 32 <= _byte(analysis, t - 1) < 127):
            starts += 1
    return hits * 2 >= len(nonzero) and starts * 5 >= len(nonzero)


def _into_string(model: DataModel, t: int) -> bool:
    it = model.item_at(t)
    return it is not None and (it.address == t or it.kind in ("cstring", "utf16"))


def _byte(analysis: ModuleAnalysis, addr: int) -> int:
    b = read_memory(analysis, addr, 1)
    return b[0] if b else 0


def _split_at(model: DataModel, addr: int) -> int | None:
    """The index of the item starting at ``addr``, the item around it cut there first
    (the new item takes the rest of its bytes, labelled by address); None outside."""
    starts = [it.address for it in model.items]
    k = bisect_right(starts, addr) - 1
    if k < 0:
        return None
    it = model.items[k]
    if it.address == addr:
        return k
    if not addr < it.address + max(it.size, 1):
        return None
    rest = it.address + it.size - addr
    it.size = addr - it.address
    it.text = None if it.kind in ("cstring", "utf16", "gostring") else it.text
    kind = it.kind if it.kind in ("bss", "zero") else "numeric"
    prefix = {"bss": "bss", "zero": "zero"}.get(kind, "data")
    new = DataItem(address=addr, size=rest, kind=kind, segment=it.segment)
    new.label = f"{prefix}_{addr:x}"
    model.items.insert(k + 1, new)
    model._starts = []
    return k + 1


#: arrays of 16 bytes or more start on a 16-byte boundary (clang and LLVM-based toolchains)
ARRAY_ALIGN = 16


def align_tables(model: DataModel, analysis: ModuleAnalysis) -> None:
    """Pointer tables cut where code indexes them with a bias (``azType[i - 1]`` reads
    ``azType - 4``, ``typenames[t + 1]`` reads ``typenames + 4``) start where the array
    does: leading null words before a 16-byte boundary go back to the bytes before the
    table; the string pointers of the item before it, from a 16-byte boundary on, join
    it. Mutates ``model`` in place."""
    items = model.items
    # the pointer tables' positions at the start (a compiled pass); a change below inserts
    # or deletes only at or before the table it looks at, so a later table is at its
    # position plus the count inserted minus the count deleted so far
    shift = 0
    for c in datawalk_active.ITEMS.kind_positions(items, "pointer_table"):
        k = c + shift
        it = items[k]
        a = it.address
        if a % ARRAY_ALIGN == 0 or a % 4 or it.size < 8:
            continue
        up = a + (-a) % ARRAY_ALIGN
        lead = (up - a) // 4
        if up < a + it.size and it.targets[:lead] == [0] * lead and any(it.targets[lead:]):
            # null words, then the array at the boundary: the nulls are padding
            it.address, it.size, it.targets = up, it.size - (up - a), it.targets[lead:]
            pad = DataItem(address=a, size=up - a, kind="zero", segment=it.segment)
            pad.label = f"zero_{a:x}"
            items.insert(k, pad)
            model._starts = []
            shift += 1
            continue
        down = a - a % ARRAY_ALIGN
        prev = items[k - 1] if k > 0 else None
        if (
            prev is not None
            and prev.kind in ("numeric", "pointer_table")
            and prev.address <= down
            and prev.address + prev.size == a
        ):
            raw = read_memory(analysis, down, a - down) or b""
            words = [int.from_bytes(raw[q : q + 4], "little") for q in range(0, len(raw), 4)]
            if words and all(_into_string(model, w) for w in words if w) and any(words):
                it.address, it.size, it.targets = down, it.size + (a - down), words + it.targets
                if prev.address == down:
                    del items[k - 1]
                    shift -= 1
                else:
                    prev.size = down - prev.address
                    prev.targets = []
                model._starts = []


def _common_prefix(words: list[str]) -> str:
    a, b = min(words), max(words)
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]
