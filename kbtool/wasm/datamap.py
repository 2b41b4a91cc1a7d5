"""Constant addresses -> the data they point at (strings, data words), for the decoder's
facts and shape hash, the lifter and the fingerprints.

:class:`DataMap` covers the active data segments with a constant offset plus the passive
segments whose address ``memory.init`` sequences give away (:func:`passive_addresses`);
:func:`static_region` is the address range of static data (``.data`` + ``.bss``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import active
from .reader import DataSegment, Module

#: names whose home is the pure data map (:mod:`.decoder.dmap`), still importable from here
#: (this module was their home) but looked up when first asked for: importing them at start
#: would import the whole pure decoder package beside its compiled twin (~10 ms of a small
#: module's ingest, which uses neither)
_FROM_DMAP = frozenset(
    {
        "_RUN",
        "MAX_CSTRING",
        "MAX_RUN",
        "MAX_STR_LEN",
        "MIN_STRING",
        "_mask_words",
        "_plausible",
        "_printable_text",
    }
)


def __getattr__(name: str) -> Any:  # PEP 562: ``from kbtool.wasm.datamap import MAX_RUN``
    if name in _FROM_DMAP:
        from .decoder import dmap

        return getattr(dmap, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the decoder twin's class when the compiled decoder runs (the decoder asks it for every
#: constant address in data), else the pure one (:mod:`.decoder.dmap`, the reference)
DataMap = active.DMAP.DataMap
if TYPE_CHECKING:  # both classes have the same source
    from .decoder.dmap import DataMap as DataMapT

_INIT_RE = re.compile(
    rb"\x41([\x80-\xff]{0,4}[\x00-\x7f])\x41\x00\x41([\x80-\xff]{0,4}[\x00-\x7f])"
    rb"\xfc\x08([\x80-\xff]{0,4}[\x00-\x7f])\x00",
    re.DOTALL,
)


def _leb_bytes(b: bytes, signed: bool) -> int:
    n = len(b)
    if n == 1:  # most segment indices and sizes: one byte
        c = b[0]
        return (c & 0x7F) - 0x80 if signed and c & 0x40 else c & 0x7F
    if n == 2:
        x = (b[0] & 0x7F) | ((b[1] & 0x7F) << 7)
        return x - 0x4000 if signed and b[1] & 0x40 else x
    x = 0
    shift = 0
    for c in b:
        x |= (c & 0x7F) << shift
        shift += 7
    if signed and b[-1] & 0x40:
        x -= 1 << shift
    return x


_INIT_BEFORE = 14  # most bytes of the pattern before its memory.init opcode (0xfc 0x08)
_INIT_AFTER = 8  # and from that opcode to the pattern's end
_INIT_OP = re.compile(rb"\xfc\x08")  # memory.init (overlapping finds: its bytes differ)
#: windows closer than this are searched as one (a run of memory.init sequences is one
#: search): no match starts between two windows, as every match lies in its opcode's window
_INIT_GAP = 64


def _init_matches(data: bytes, lo: int, hi: int) -> list[re.Match[bytes]]:
    """``_INIT_RE.finditer(data, lo, hi)``, searched only around the ``memory.init`` opcodes:
    every match holds one, so the regex runs on the merged windows around them (a C-speed
    literal search over the code instead of the regex trying every ``i32.const`` byte). With
    the compiled decoder the windows come from its :func:`.decoder.dmap.init_windows` (the
    opcode's first byte found by ``memchr``: ffmpeg 146 -> 98 M instructions); the same ones."""
    if active.PATH == "compiled":  # the same windows, the opcode found by memchr
        w = active.DMAP.init_windows(data, lo, hi, _INIT_BEFORE, _INIT_AFTER, _INIT_GAP)
        return [mt for i in range(0, len(w), 2) for mt in _INIT_RE.finditer(data, w[i], w[i + 1])]
    windows: list[list[int]] = []
    for found in _INIT_OP.finditer(data, lo, hi):  # the regex's literal search: C speed
        q = found.start()
        a, b = max(lo, q - _INIT_BEFORE), min(hi, q + _INIT_AFTER)
        if windows and a <= windows[-1][1] + _INIT_GAP:
            windows[-1][1] = b
        else:
            windows.append([a, b])
    return [mt for a, b in windows for mt in _INIT_RE.finditer(data, a, b)]


def passive_addresses(data: bytes, m: Module) -> dict[int, int]:
    """Addresses of passive data segments inferred from ``i32.const addr; i32.const 0;
    i32.const size; memory.init seg`` sequences (Emscripten/LLVM ``__wasm_init_memory``
    in threaded builds). Only segments with one consistent address are returned.

    Kept on the module for its bytes (ingest asks four times: the decoder's data map, the
    fingerprints', the data model and its store; each a search of the whole code)."""
    passive = {i for i, s in enumerate(m.data_segments) if s.passive}
    if not passive or not m.code:
        return {}
    key = (id(data), len(data), data[m.code[0][0] : m.code[0][0] + 64])
    cached = m.__dict__.get("_passive_addresses")
    if cached is not None and cached[0] == key:
        return dict(cached[1])
    found = _passive_addresses(data, m, passive)
    m.__dict__["_passive_addresses"] = (key, found)
    return dict(found)


def _passive_addresses(data: bytes, m: Module, passive: set[int]) -> dict[int, int]:
    lo = m.code[0][0]
    hi = m.code[-1][1]
    found: dict[int, set[int]] = {}
    segments = m.data_segments
    for mt in _init_matches(data, lo, hi):
        addr_b, size_b, seg_b = mt.groups()
        seg = _leb_bytes(seg_b, False)
        if seg not in passive:
            continue
        size = _leb_bytes(size_b, True) & 0xFFFFFFFF
        if size != len(segments[seg].data):
            continue
        found.setdefault(seg, set()).add(_leb_bytes(addr_b, True) & 0xFFFFFFFF)
    return {s: next(iter(a)) for s, a in found.items() if len(a) == 1}


def build_data_map(
    data: bytes, m: Module, sized_first: bool = False, passive: dict[int, int] | None = None
) -> DataMapT:
    """The data map of ``m``; ``passive`` is :func:`passive_addresses` when known already
    (a preparation read back from disk: no search of the code)."""
    segs = [(s.offset, s.data) for s in m.data_segments if not s.passive and s.offset is not None]
    if passive is None:
        passive = passive_addresses(data, m)
    for i, addr in passive.items():
        seg: DataSegment = m.data_segments[i]
        segs.append((addr, seg.data))
    wasm32 = not (m.memories and m.memories[0].memory64)
    return DataMap(segs, wasm32, sized_first)


def static_region(m: Module, dmap: DataMapT) -> tuple[int, int]:
    """The address range of static data (``.data`` + ``.bss``) as far as the module shows it.

    Linkers lay out ``[data][bss]`` from the lowest data segment on; its end is not written
    down, so: when the stack pointer (the first mutable i32 global with a constant
    initialiser) starts above the data, the stack follows ``.bss`` (wasm-ld's default,
    Emscripten) and its initial value bounds the region; otherwise (``--stack-first``) the
    initial memory size does. Addresses in this range are build-dependent: the shape hash
    replaces them by a placeholder (or, inside a data segment, by the bytes there).
    """
    if dmap.hi <= dmap.lo:
        return 1, 0
    sp = next(
        (
            g.init
            for g in m.globals
            if g.mutable and g.valtype == "i32" and not g.imported and isinstance(g.init, int)
        ),
        None,
    )
    if sp is not None and sp > dmap.hi:
        return dmap.lo, sp
    mem = m.memories[0] if m.memories else None
    # the reader bounds min and page size (at most 2**64 bytes): a plain shift is safe
    mem_bytes = (mem.min << mem.page_size_log2) if mem is not None else 0
    return dmap.lo, max(dmap.hi, mem_bytes)
