"""Data items of the data model (:mod:`kbtool.analysis.datamodel`): the initial memory
image, segments cut at referenced addresses and string ends, each piece classified and
labelled; Go string headers; ``.bss`` items."""

from __future__ import annotations

import re
import weakref
from bisect import bisect_left, bisect_right
from struct import unpack_from as _unpack_from

from kbtool.wasm import ModuleAnalysis

from . import datawalk_active
from .datatypes import (
    MAX_BSS_ITEM,
    MAX_IMAGE,
    MAX_ITEMS,
    MAX_LABEL,
    MAX_TEXT,
    MIN_STRING,
    DataItem,
    DataRef,
    RefTuple,
)

# ----------------------------------------------------------------------------- memory image


Passive = dict[int, int] | None  # passive segment index -> its address (memory.init code)


def segments(analysis: ModuleAnalysis, passive: Passive = None) -> list[tuple[int, bytes, int]]:
    """``(address, bytes, segment index)`` of the active segments with a constant offset,
    and of the passive ones ``passive`` places (threaded builds copy them in with
    ``memory.init``: :func:`kbtool.wasm.datamap.passive_addresses`), by address (memory 0
    only)."""
    return list(_segment_index(analysis, passive)[0])


def _sorted_segments(analysis: ModuleAnalysis, passive: Passive) -> list[tuple[int, bytes, int]]:
    out = []
    for k, s in enumerate(analysis.module.data_segments):
        if s.memory_index != 0 or not s.data:
            continue
        if s.passive:
            if passive and k in passive:
                out.append((int(passive[k]), bytes(s.data), k))
            continue
        if s.offset is None:
            continue
        out.append((int(s.offset), bytes(s.data), k))
    out.sort()
    return out


_SegIndex = tuple[list[tuple[int, bytes, int]], list[int], int]  # segments, starts, longest
# a few modules' segment lists by (module, passive map): read_memory runs once per table
# word and per item (thousands of times on a module of 7,000 segments: ffmpeg's passive
# ones); the module is held weakly, the passive map strongly (its id stays its own)
_SEG_CACHE: dict[tuple[int, int], tuple[weakref.ref, Passive, int, _SegIndex]] = {}


def _segment_index(analysis: ModuleAnalysis, passive: Passive) -> _SegIndex:
    mod = analysis.module
    key = (id(mod), id(passive))
    hit = _SEG_CACHE.get(key)
    n = len(mod.data_segments) + (len(passive) if passive else 0)
    if hit is not None and hit[0]() is mod and hit[1] is passive and hit[2] == n:
        return hit[3]
    segs = _sorted_segments(analysis, passive)
    index = (segs, [b for b, _d, _k in segs], max((len(d) for _b, d, _k in segs), default=0))
    if len(_SEG_CACHE) >= 4:
        _SEG_CACHE.clear()
    # (dropped with the module: a long-lived server keeps no dead module's bytes)
    _SEG_CACHE[key] = (weakref.ref(mod, lambda _r: _SEG_CACHE.pop(key, None)), passive, n, index)
    return index


def read_memory(
    analysis: ModuleAnalysis, address: int, length: int, passive: Passive = None
) -> bytes | None:
    """The initial memory image at ``[address, address + length)`` (bytes no segment sets read
    as zero); None when the range touches no segment at all."""
    if address < 0 or length < 0:
        return None
    segs, starts, longest = _segment_index(analysis, passive)
    # only segments starting in (address - longest, address + length) can overlap the
    # range; they are visited in the same (address) order as the whole list
    first = bisect_right(starts, address - longest)
    last = bisect_left(starts, address + length)
    out = bytearray(length)
    hit = False
    for base, data, _k in segs[first:last]:
        lo, hi = max(base, address), min(base + len(data), address + length)
        if lo < hi:
            out[lo - address : hi - address] = data[lo - base : hi - base]
            hit = True
    return bytes(out) if hit else None


# ----------------------------------------------------------------------------- items


_NOT_SLUG = re.compile(r"[^0-9A-Za-z]+")


def _slug(text: str) -> str:
    s = _NOT_SLUG.sub("_", text).strip("_").lower()
    return s[:MAX_LABEL].rstrip("_")


# control characters C strings carry (terminal colours, bells, tabs): escaped where shown
_RARE_CONTROLS = "\x1b\x07\x08\x0b\x0c"
_CONTROLS = "\t\n\r" + _RARE_CONTROLS
_NO_CONTROLS = str.maketrans("", "", _CONTROLS)
_ASCII_OK = bytes(range(0x20, 0x7F)) + _CONTROLS.encode()  # printable ASCII, the controls
_RARE_BYTES = _RARE_CONTROLS.encode()
_NO_RARE = str.maketrans("", "", _RARE_CONTROLS)
_NO_LINE_CONTROLS = str.maketrans("", "", "\t\n\r")


def _cstring_at(mem: bytes, k: int) -> str | None:
    """The C string starting at ``mem[k]`` (printable UTF-8, NUL-terminated), if any."""
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1:
        return None
    return _c_text(mem[k:z])


def _cstring_len(mem: bytes, k: int) -> int:
    """The length in bytes of :func:`_cstring_at`'s string (its UTF-8 is those very bytes),
    -1 when there is none: what the item cuts need, without encoding the text again."""
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1 or _c_text(mem[k:z]) is None:
        return -1
    return z - k


def _c_text(raw: bytes) -> str | None:
    """``raw`` (a C string's bytes, no NUL) as text when it is printable UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isprintable():  # the common case, at C speed
        return text
    # every character printable or one of the controls, at C speed too: ASCII text on
    # its bytes (printable ASCII and the controls deleted, nothing may be left), other
    # text with the controls deleted
    if raw.isascii():
        if raw.translate(None, _ASCII_OK):
            return None
        rare = len(raw) - len(raw.translate(None, _RARE_BYTES))
    else:
        if not text.translate(_NO_CONTROLS).isprintable():
            return None
        rare = len(text) - len(text.translate(_NO_RARE))
    if rare * 4 > len(text):
        return None  # mostly control bytes: data, not text
    return text


def _utf8_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isprintable():
        return text or None
    return text if text.translate(_NO_LINE_CONTROLS).isprintable() else None


def memory_image(
    analysis: ModuleAnalysis, limit: int = MAX_IMAGE, passive: Passive = None
) -> tuple[int, bytes]:
    """``(lowest address, bytes)``: the initial memory from the lowest to the highest byte any
    segment of :func:`segments` sets (gaps read as zero); empty when that span exceeds
    ``limit``."""
    segs = segments(analysis, passive)
    if not segs:
        return 0, b""
    lo, hi = segs[0][0], max(b + len(d) for b, d, _ in segs)
    if hi - lo > limit:
        return lo, b""
    img = bytearray(hi - lo)
    for b, d, _k in segs:
        img[b - lo : b - lo + len(d)] = d
    return lo, bytes(img)


def go_string_headers(
    analysis: ModuleAnalysis, lo: int, hi: int, passive: Passive = None
) -> list[DataRef]:
    """Go string headers in data: 8-byte aligned (pointer, length) pairs of 64-bit words whose
    pointer lies in the data and whose bytes are text; as ``gostring`` references from the
    header's own address (function -1: data, not code). Go's linker trims the zero bytes at
    segment ends (a length's high bytes), so the scan runs over the whole memory image."""
    base, img = memory_image(analysis, passive=passive)
    out: list[DataRef] = []
    for q in range((-base) % 8, len(img) - 15, 8):
        ptr = int.from_bytes(img[q : q + 8], "little")
        if not lo <= ptr < hi:
            continue
        ln = int.from_bytes(img[q + 8 : q + 16], "little")
        if not 0 < ln <= 4096 or ptr + ln > hi:
            continue
        if _utf8_text(img[ptr - base : ptr - base + ln]) is not None:
            out.append(DataRef(-1, base + q, "gostring", "data", ptr, ln))
    return out


def _string_start(mem: bytes, k: int) -> int:
    """``k`` itself, or the start of the C string ``mem[k]`` lies inside (not at its start)."""
    if k == 0 or mem[k - 1] == 0 or not (0x20 <= mem[k - 1] < 0x7F):
        return k
    z = mem.rfind(b"\0", max(0, k - 4096), k)
    s0 = z + 1
    n = _cstring_len(mem, s0)
    if n >= MIN_STRING and s0 + n > k:
        return s0
    return k


def _utf16_at(mem: bytes, k: int) -> str | None:
    if k % 2:
        return None
    n = 0
    while k + 2 * n + 1 < len(mem) and mem[k + 2 * n + 1] == 0 and 0x20 <= mem[k + 2 * n] < 0x7F:
        n += 1
    if n < MIN_STRING or mem[k + 2 * n : k + 2 * n + 2] != b"\0\0":
        return None
    return mem[k : k + 2 * n].decode("utf-16-le")


def _classify(
    mem: bytes, base: int, lo: int, hi: int, table: tuple[int, int] | None, fptr: bool = False
) -> tuple[str, str | None, list[int]]:
    """Kind, text and targets of the bytes ``mem`` at address ``base``."""
    if not mem.strip(b"\0"):
        return "zero", None, []
    s = _cstring_at(mem, 0)
    if s is not None and (n := mem.find(b"\0")) >= MIN_STRING and not mem[n + 1 :].strip(b"\0"):
        return "cstring", s, []  # the string and the NUL padding after it
    u = _utf16_at(mem, 0)
    if u is not None:
        return "utf16", u, []
    if base % 4 == 0 and len(mem) >= 8 and len(mem) % 4 == 0:
        words = list(_unpack_from(f"<{len(mem) >> 2}I", mem))  # the little-endian words
        nonzero = [w for w in words if w]
        if nonzero and all(lo <= w < hi for w in nonzero) and len(nonzero) * 2 >= len(words):
            return "pointer_table", None, words
        # indexed and called through call_indirect: its words are function-table slots
        if fptr and table is not None and all(table[0] <= w < table[1] for w in nonzero):
            return "funcptr_table", None, words
    return "numeric", None, []


def build_items(
    analysis: ModuleAnalysis,
    refs: list[RefTuple],
    table_range: tuple[int, int] | None = None,
    bss_hi: int = 0,
    passive: Passive = None,
) -> tuple[list[DataItem], bool]:
    """Cut every segment at the referenced addresses (``refs``: :data:`RefTuple`) and at
    string ends; classify the pieces. Referenced addresses in ``[end of the data, bss_hi)`` become ``bss`` items (variables
    with no initial bytes), each up to the next referenced address."""
    segs = segments(analysis, passive)
    if not segs:
        return [], False
    lo, hi = segs[0][0], max(b + len(d) for b, d, _ in segs)
    marks = getattr(datawalk_active.IMPL, "ref_marks", None)  # (None: the pure scan)
    if marks is not None:  # the same three reads, one compiled pass
        cuts, fptr, gostr = marks(refs)
    else:
        cuts = {r[4] for r in refs if r[3] == "data"}
        fptr = {r[4] for r in refs if r[2] == "funcptr"}
        gostr = {r[4]: r[5] for r in refs if r[2] == "gostring"}
    for a, w in list(gostr.items()):
        cuts.add(a + w)  # a Go string ends where its length says (no NUL)
    items: list[DataItem] = []
    truncated = False
    ordered = sorted(cuts)
    for si, (base, mem, k) in enumerate(segs):
        end = base + len(mem)
        # the bytes up to the next segment (or the end of the data) are zeros no segment
        # sets: wasm-opt drops a segment's trailing zeros, so its last item and the
        # variables after it read on into them
        gap_end = segs[si + 1][0] if si + 1 < len(segs) else hi
        # a reference into the middle of a C string (``"directory" + 1``) is an interior
        # reference of that string, not the start of an item
        # (Go strings have no NUL: every cut stands)
        # (a string at the end lost its NUL with the zeros: they are read back for strings)
        memz = mem + bytes(min(gap_end - end, 8) if si + 1 < len(segs) else 8)
        mine = ordered[bisect_left(ordered, base) : bisect_left(ordered, end)]
        inside = sorted({a if gostr else _string_start(memz, a - base) + base for a in mine})
        # pointer tables point at more items: one level of their words as cuts
        starts = sorted(set([base] + inside))
        # strings run to their NUL: a new item starts after it when nothing else cuts there
        bounds: list[int] = []
        for i, a in enumerate(starts):
            bounds.append(a)
            nxt = starts[i + 1] if i + 1 < len(starts) else end
            q = a - base
            while q < nxt - base:
                n = _cstring_len(memz, q)
                if n < 0:
                    break
                if n < MIN_STRING:
                    # a short string between literals ("nan", "inf"): an item of its own
                    # when a literal follows it
                    q2 = q + n + 1
                    while q2 < nxt - base and mem[q2] == 0:
                        q2 += 1
                    if q2 >= nxt - base or _cstring_len(memz, q2) < MIN_STRING:
                        break
                    bounds.append(base + q2)
                    q = q2
                    continue
                q += n + 1
                while q < nxt - base and mem[q] == 0:
                    q += 1
                if q < nxt - base:
                    bounds.append(base + q)
        bounds = sorted(set(bounds))
        # ... and the referenced addresses in those zeros start items of their own
        allb = bounds + ordered[bisect_left(ordered, end) : bisect_left(ordered, gap_end)]
        for i, a in enumerate(allb):
            b = allb[i + 1] if i + 1 < len(allb) else gap_end
            if b > end:
                b = min(b, max(a, end) + MAX_BSS_ITEM)
            piece = mem[a - base : b - base]
            if b > end and piece:
                # the trimmed zeros back, up to a word (a string's NUL, a table's last word)
                piece += bytes(min(b - end, (-len(piece)) % 4 or 4))
            targets: list[int]
            if a in gostr and b - a == gostr[a] and _utf8_text(piece) is not None:
                kind, text, targets = "gostring", _utf8_text(piece), []
            else:
                kind, text, targets = _classify(piece, a, lo, hi, table_range, a in fptr)
            items.append(  # (address, size, kind, segment, text, label, targets: positional)
                DataItem(
                    a,
                    b - a,
                    kind,
                    k,
                    text[:MAX_TEXT] if text is not None else None,
                    None,
                    targets[:256],
                )
            )
            if len(items) >= MAX_ITEMS:
                return items, True
    bss = sorted(a for a in cuts if hi <= a < bss_hi)
    for i, a in enumerate(bss):
        b = bss[i + 1] if i + 1 < len(bss) else bss_hi
        items.append(DataItem(address=a, size=min(b - a, MAX_BSS_ITEM), kind="bss", segment=-1))
        if len(items) >= MAX_ITEMS:
            return items, True
    return items, truncated


def label_items(items: list[DataItem]) -> None:
    """Labels from content: ``s_<text>`` for strings, ``<kind>_<hex address>`` otherwise;
    a label taken twice gets the address as a suffix."""
    seen: dict[str, int] = {}
    for it in items:
        if it.kind in ("cstring", "utf16", "gostring") and it.text:
            base = "s_" + (_slug(it.text) or f"{it.address:x}")
        elif it.kind == "zero":
            base = f"zero_{it.address:x}"
        elif it.kind == "bss":
            base = f"bss_{it.address:x}"
        elif it.kind in ("pointer_table", "funcptr_table"):
            base = ("fptrs_" if it.kind == "funcptr_table" else "ptrs_") + f"{it.address:x}"
        else:
            base = f"data_{it.address:x}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        it.label = base if n == 0 else f"{base}_{it.address:x}"
