"""The data model of one module: globals with roles, data items, references from code.

Pure (no DB): what IDA or Ghidra show beside the functions of a binary.

- **Globals**: index (imports first, as wasm numbers them), type, mutability, constant
  initial value, import/export names, an inferred ``role`` and a ``name`` when the role or
  the binary says one (``__stack_pointer``, ``__heap_base``, Go's ``SP``/``g``...).
- **Data items**: the active data segments cut at every address the code or a pointer
  table refers to, each piece classified: ``cstring``, ``utf16``, ``pointer_table``,
  ``funcptr_table``, ``numeric``, ``zero``; strings get a label from their text
  (``s_create_table``), tables a label from their address (``ptrs_1234``).
- **References**: per function, every instruction that touches a data address or a global:
  ``(func_index, offset, kind, target_kind, target)``; ``offset`` is the file offset of the
  instruction, ``kind`` one of ``load``, ``store``, ``addr`` (an address computed or passed
  on), ``read``/``write`` (globals), ``call_indirect`` (a table).

The operand tracking is a small symbolic stack over straight-line code: a constant that a
load or store consumes as its address is a ``load``/``store`` of ``const + memarg offset``
(clang's ``i32.const 0; i32.load offset=G`` for a global variable), any other constant
inside the data range is ``addr``. Control flow and calls reset the stack (no guessing).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from kbtool.wasm import ModuleAnalysis
from kbtool.wasm.datamap import passive_addresses

from . import datawalk_active
from .dataitems import (
    build_items,
    go_string_headers,
    item_rows,
    label_items,
    memory_image,
    read_memory,
    segments,
)
from .datalabels import ERRNO_FUNCS, MALLOC_FAMILY, role_labels
from .datarefs import function_refs, function_refs_careful
from .datascan import max_offset, might_touch_data, module_refs, parallel_refs
from .datatypes import (
    GETTER_GLOBALS,
    GO_GLOBALS,
    KNOWN_GLOBAL_NAMES,
    MAX_BSS,
    MAX_REFS,
    DataItem,
    DataModel,
    DataRef,
    GlobalInfo,
    RefTuple,
)

__all__ = [
    "ERRNO_FUNCS",
    "MALLOC_FAMILY",
    "DataItem",
    "DataModel",
    "DataRef",
    "GlobalInfo",
    "build_data_model",
    "build_items",
    "bss_end",
    "function_refs",
    "function_refs_careful",
    "global_infos",
    "go_string_headers",
    "item_rows",
    "label_items",
    "memory_image",
    "read_memory",
    "ref_columns",
    "role_labels",
    "segments",
]

# ----------------------------------------------------------------------------- globals


def global_infos(
    analysis: ModuleAnalysis,
    stack_pointer: int | None,
    go: bool = False,
    getters: dict[int, str] | None = None,
) -> list[GlobalInfo]:
    """Every global with its role and name."""
    m = analysis.module
    imports = [i for i in m.imports if i.kind == "global"]
    exports: dict[int, list[str]] = {}
    for e in m.exports:
        if e.kind == "global":
            exports.setdefault(e.index, []).append(e.name)
    out = []
    for gi, g in enumerate(m.globals):
        imp = imports[gi] if g.imported and gi < len(imports) else None
        ex = exports.get(gi, [])
        name, role, conf = None, None, 0.0
        known = [n for n in ([imp.field] if imp else []) + ex if n in KNOWN_GLOBAL_NAMES]
        if known:
            name, role, conf = known[0], known[0].strip("_"), 1.0
        elif imp is not None and imp.field.startswith(("GOT.mem.", "GOT.func.")):
            name, role, conf = imp.field, "got", 1.0
        elif gi == stack_pointer:
            name, role, conf = "__stack_pointer", "stack_pointer", 0.95
        elif go and not g.imported and gi < len(GO_GLOBALS):
            name, role, conf = GO_GLOBALS[gi], "go_" + GO_GLOBALS[gi].lower(), 0.9
        elif getters and gi in getters:
            name, role, conf = getters[gi], getters[gi].strip("_"), 0.9
        elif ex:
            name, role, conf = ex[0], "exported", 1.0
        elif imp is not None:
            name, role, conf = f"{imp.module}.{imp.field}", "imported", 1.0
        out.append(
            GlobalInfo(
                index=gi,
                type=g.valtype,
                mutable=g.mutable,
                initial=g.init if isinstance(g.init, int | float) else None,
                imported=g.imported,
                import_name=f"{imp.module}.{imp.field}" if imp else None,
                exports=ex,
                role=role,
                name=name,
                confidence=conf,
            )
        )
    return out


def _getter_globals(analysis: ModuleAnalysis, data: bytes) -> dict[int, str]:
    """Globals read by Emscripten's stack getters (``global.get G; end`` bodies)."""
    named: dict[int, str] = {}
    for f in analysis.functions:
        if f.imported or f.instr_count > 3:
            continue
        for n in list(f.export_names) + ([f.raw_name] if f.raw_name else []):
            want = GETTER_GLOBALS.get(n)
            if want and len(f.globals_used) == 1:
                named.setdefault(f.globals_used[0], want)
    return named


# ----------------------------------------------------------------------------- whole module


def bss_end(analysis: ModuleAnalysis, data_end: int, stack_pointer: int | None) -> int:
    """Where the zero-initialised data after the segments ends: ``__data_end`` or else
    ``__heap_base`` when the module exports it, else the stack pointer's start when it lies above the data (wasm-ld
    puts the stack after .bss unless --stack-first), else the data end (no .bss assumed)."""
    m = analysis.module
    for want in ("__data_end", "__heap_base"):  # __data_end: the end of .bss itself
        for e in m.exports:
            if e.kind == "global" and e.name == want and 0 <= e.index < len(m.globals):
                init = m.globals[e.index].init
                if isinstance(init, int) and init > data_end:
                    return init
    for e in m.exports:
        if e.kind == "global" and e.name == "__heap_base" and 0 <= e.index < len(m.globals):
            init = m.globals[e.index].init
            if isinstance(init, int) and init > data_end:
                return init
    if stack_pointer is not None and 0 <= stack_pointer < len(m.globals):
        init = m.globals[stack_pointer].init
        if isinstance(init, int) and data_end < init <= data_end + MAX_BSS:
            return init
    if m.memories and not m.memories[0].memory64:
        # stack first (the stack below the data): .bss runs on into the heap; bounded by the
        # initial memory size
        return max(data_end, min(m.memories[0].min * 65536, data_end + MAX_BSS))
    return data_end


_TEXT_KINDS = frozenset({"cstring", "utf16", "gostring"})


def _row(r: DataRef) -> RefTuple:
    """``r`` as the model holds it (a plain tuple of its fields)."""
    return (r.func_index, r.offset, r.kind, r.target_kind, r.target, r.width)


def ref_columns() -> Callable[..., list[tuple[str, bytes]]] | None:
    """The compiled pass that packs the references into their stored columns
    (:func:`.datawalk.columns.ref_columns`, for :func:`kbtool.kb.datarefs.pack`), or None
    when the data walk is not compiled (run pure it is slower than the store's own packing,
    which then runs)."""
    return None if datawalk_active.COLUMNS is None else datawalk_active.COLUMNS.ref_columns


def _count_refs(
    refs: list[RefTuple],
    items: list[DataItem],
    starts: list[int],
    readers: dict[int, set[int]],
    writers: dict[int, set[int]],
) -> list[RefTuple]:
    """The references without the loads and stores at a constant address strictly inside a
    string literal: code reads a literal from its start (``hex[i]``, a lowered ``memcpy``)
    and never writes one; a memarg offset landing inside one is a big struct's field offset
    (ffmpeg's contexts: ``i32.load offset=23001``), not a use of the text. In the same
    pass: each item's reference count, and the functions reading/writing each global."""
    if datawalk_active.IMPL is not None:  # the same loop, compiled
        return datawalk_active.IMPL.count_item_refs(refs, items, starts, readers, writers)
    out = []
    keep = out.append
    for r in refs:
        fi, _off, kind, tk, t, _w = r
        if tk == "data":
            k = bisect_right(starts, t) - 1
            if k >= 0:
                it = items[k]
                if (
                    it.kind in _TEXT_KINDS
                    and it.address < t < it.address + it.size
                    and kind in ("load", "store")
                ):
                    continue
                it.refs += 1
        elif tk == "global":
            (readers if kind == "read" else writers).setdefault(t, set()).add(fi)
        keep(r)
    return out


def scan_plan(
    analysis: ModuleAnalysis, lo: int, mem_hi: int
) -> list[tuple[int, int, int, int, int]]:
    """``(func_index, body_offset, body_size, mode, floor)`` of every defined body, by index:
    mode 2 when its facts say it may touch data in ``[lo, mem_hi)``, 1 when it only
    reads/writes globals or calls through a table, 0 when it has nothing to find; ``floor``
    is ``lo`` minus its largest memarg offset (see :func:`.datascan.data_refs`)."""
    if datawalk_active.IMPL is not None:  # the same loop, compiled
        return datawalk_active.IMPL.scan_plan(analysis.functions, lo, mem_hi)
    out = []
    for f in analysis.functions:
        if f.imported or not f.body_size:
            continue
        if lo < mem_hi and might_touch_data(f.consts, f.mem_ops, lo, mem_hi):
            mode = 2
        else:
            mode = 1 if f.globals_used or f.call_indirect else 0
        out.append((f.index, f.body_offset, f.body_size, mode, lo - max_offset(f.mem_ops)))
    return out


def scan_bounds(
    analysis: ModuleAnalysis, data: bytes, stack_pointer: int | None
) -> tuple[dict[int, int], int, int, int]:
    """``(passive, lo, hi, mem_hi)`` of the reference scan: the passive segments' addresses,
    the data's start (at least 1024 when the data reaches past it: address 0 and tiny
    constants are never data), the end of the initialised data, and of .bss."""
    passive = passive_addresses(data, analysis.module)
    segs = segments(analysis, passive)
    lo = segs[0][0] if segs else 0
    data_end = max((b + len(d) for b, d, _ in segs), default=0)
    mem_hi = bss_end(analysis, data_end, stack_pointer) if segs else 0
    hi = data_end
    lo = max(lo, 1024) if hi > 1024 else lo
    return passive, lo, hi, mem_hi


def walk_refs_flat(
    data: bytes,
    plan: list[tuple[int, int, int, int, int]],
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
    hot: tuple[bytes, bytes] | None = None,
    nimp: int = 0,
) -> tuple[list[RefTuple], bool] | None:
    """The references (plain tuples) of every body of ``plan`` by the compiled walk
    (:mod:`.datawalk`, one process: it costs less than a pool's start), joined in plan
    order and cut after the body that reaches :data:`MAX_REFS`: ``(refs, truncated)``, what
    :func:`build_data_model` joins from the pure scan's per-body lists. None when the walk
    is not built (the pure scan of :mod:`.datascan` then runs) or fails on a body (the pure
    scan decides). ``hot``: the decoder's stops (:attr:`kbtool.wasm.facts.ModuleAnalysis.hot`,
    ``nimp`` imported functions), which the walk jumps between."""
    if datawalk_active.IMPL is None:
        return None
    try:
        return datawalk_active.IMPL.module_refs_flat(
            data, plan, lo, hi, go, mem_hi, MAX_REFS, hot, nimp
        )
    except (IndexError, TypeError, AttributeError, ValueError) as e:
        import logging

        logging.getLogger("kbtool.analysis").warning(
            "compiled data walk failed (%s); the pure scan runs", e
        )
        return None


def build_data_model(
    analysis: ModuleAnalysis,
    data: bytes,
    *,
    stack_pointer: int | None = None,
    go: bool = False,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> DataModel:
    """The data model of one module (see the module docstring). Passive segments count
    where ``memory.init`` code gives their address (Emscripten's threaded builds).
    ``workers`` > 1: big modules are scanned on that many forked processes (same result)."""
    passive, lo, hi, mem_hi = scan_bounds(analysis, data, stack_pointer)
    refs: list[RefTuple] = []
    truncated = False
    plan = scan_plan(analysis, lo, mem_hi)
    hot = getattr(analysis, "hot", None)
    if hot is not None:
        analysis.hot = None  # (14 MB on ffmpeg: read once, by this walk)
    flat = walk_refs_flat(data, plan, lo, hi, go, mem_hi, hot, analysis.module.num_func_imports)
    per_body: list[list[RefTuple]] | None = None
    if flat is None:
        pooled = parallel_refs(data, plan, lo, hi, go, mem_hi, workers, progress)
        if pooled is not None:
            per_body = [[_row(r) for r in body] for body in pooled]
    else:
        refs, truncated = flat
    step = 512
    for n in range(0, len(plan) if flat is None else 0, step):
        if progress is not None and per_body is None:
            progress(n, len(plan))
        chunk = plan[n : n + step]
        found = (
            per_body[n : n + step]
            if per_body is not None
            else [[_row(r) for r in body] for body in module_refs(data, chunk, lo, hi, go, mem_hi)]
        )
        for refs_of_body in found:
            refs.extend(refs_of_body)
            if len(refs) >= MAX_REFS:
                truncated = True
                break
        if truncated:
            break
    if progress is not None:
        progress(len(plan), len(plan))
    if go:
        headers = go_string_headers(analysis, lo, hi, passive)
        # code that takes a header's address uses its string: the string's xref too
        by_header = {h.offset: h for h in headers}
        refs.extend(
            (r[0], r[1], "via_header", "data", by_header[r[4]].target, 0)
            for r in list(refs)
            if r[3] == "data" and r[4] in by_header
        )
        refs.extend(_row(h) for h in headers)
    elems = [e for e in analysis.module.elements if e.mode == "active" and e.offset is not None]
    table_range = (
        (min(e.offset for e in elems), max(e.offset + len(e.func_indices) for e in elems))
        if elems
        else None
    )
    items, cut = build_items(analysis, refs, table_range, mem_hi, passive)
    label_items(items)
    starts = datawalk_active.ITEMS.item_starts(items)  # (compiled with the walk)
    readers: dict[int, set[int]] = {}
    writers: dict[int, set[int]] = {}
    refs = _count_refs(refs, items, starts, readers, writers)
    gl = global_infos(analysis, stack_pointer, go=go, getters=_getter_globals(analysis, data))
    for g in gl:
        g.reads = len(readers.get(g.index, ()))
        g.writes = len(writers.get(g.index, ()))
    return DataModel(gl, items, refs, lo, max(hi, mem_hi), truncated or cut, starts)
