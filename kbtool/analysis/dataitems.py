"""Data items of the data model (:mod:`kbtool.analysis.datamodel`): the initial memory
image, segments cut at referenced addresses and string ends, each piece classified and
labelled; Go string headers; ``.bss`` items."""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from kbtool.wasm import ModuleAnalysis

from . import datawalk_active
from .datatypes import (
    MAX_IMAGE,
    DataItem,
    DataRef,
    RefTuple,
)

#: the items' hot part: the data walk twin's (compiled) when it runs, else the pure module
_items = datawalk_active.ITEMS
_cstring_at = _items._cstring_at  # (re-exported: the recognizers' tests read them here)
_cstring_len = _items._cstring_len
_utf8_text = _items._utf8_text
ItemRow = tuple[int, int, str, int, str | None, str, str, int, str]  # (datawalk.items)

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
    for (mid, _p), other in _SEG_CACHE.items():
        # an equal map of another identity (each ``passive_addresses`` call gives a copy:
        # ffmpeg's 7,320 segments were sorted three times)
        if mid == key[0] and other[0]() is mod and other[2] == n and other[1] == passive:
            return other[3]
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


_slug = _items._slug  # (the recognizers' labels use it too)


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
    parts: list[bytes] = []  # segments apart, by address: their bytes and gaps joined once
    at = lo
    for b, d, _k in segs:
        if b < at:  # (overlapping segments: the later one's bytes win, copied below)
            break
        if b > at:
            parts.append(bytes(b - at))
        parts.append(d)
        at = b + len(d)
    else:
        return lo, b"".join(parts)
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


def build_items(
    analysis: ModuleAnalysis,
    refs: list[RefTuple],
    table_range: tuple[int, int] | None = None,
    bss_hi: int = 0,
    passive: Passive = None,
) -> tuple[list[DataItem], bool]:
    """Cut every segment at the referenced addresses (``refs``: :data:`RefTuple`) and at
    string ends; classify the pieces. Referenced addresses in ``[end of the data, bss_hi)``
    become ``bss`` items (variables with no initial bytes), each up to the next referenced
    address. The cutting is :func:`.datawalk.items.cut_items` (compiled with the walk)."""
    segs = segments(analysis, passive)
    if not segs:
        return [], False
    marks = getattr(datawalk_active.IMPL, "ref_marks", None)  # (None: the pure scan)
    if marks is not None:  # the same three reads, one compiled pass
        cuts, fptr, gostr = marks(refs)
    else:
        cuts = {r[4] for r in refs if r[3] == "data"}
        fptr = {r[4] for r in refs if r[2] == "funcptr"}
        gostr = {r[4]: r[5] for r in refs if r[2] == "gostring"}
    return _items.cut_items(segs, cuts, fptr, gostr, table_range, bss_hi)


def item_rows(
    items: list[DataItem],
    image: bytes,
    base: int,
    memory: Callable[[int, int], bytes | None],
    null: Any = None,
) -> list[ItemRow]:
    """The ``data_items`` rows of ``items`` with their data ids
    (:func:`.datawalk.items.item_rows`, compiled with the walk); ``null`` where an item has
    no text (ingest: the store's NULL, bound without pysqlite's adapter lookup of a None)."""
    return _items.item_rows(items, image, base, memory, null)


def label_items(items: list[DataItem]) -> None:
    """Labels from content: ``s_<text>`` for strings, ``<kind>_<hex address>`` otherwise;
    a label taken twice gets the address as a suffix (:func:`.datawalk.items.label_items`,
    compiled with the walk)."""
    _items.label_items(items)
