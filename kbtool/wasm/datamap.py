"""Constant addresses -> the data they point at (strings, data words), for the decoder's
facts and shape hash, the lifter and the fingerprints.

:class:`DataMap` covers the active data segments with a constant offset plus the passive
segments whose address ``memory.init`` sequences give away (:func:`passive_addresses`);
:func:`static_region` is the address range of static data (``.data`` + ``.bss``).
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right

from .reader import DataSegment, Module

_RUN = re.compile(
    rb"(?:[\t\n\r\x20-\x7e]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}"
    rb"|[\xf0-\xf4][\x80-\xbf]{3})*"
)
MIN_STRING = 4
MAX_CSTRING = 4096  # bytes scanned for a NUL-terminated string
MAX_RUN = 200  # characters kept of an unterminated run (Rust-style str data)
MAX_STR_LEN = 4096  # largest length accepted from a (ptr, len) pair


def _printable_text(b: bytes) -> str | None:
    """``b`` decoded if it is entirely printable UTF-8 text (\\t \\n \\r allowed)."""
    m = _RUN.fullmatch(b)
    if m is None:
        return None
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return None
    return s


def _plausible(s: str) -> bool:
    """Conservative test for text that is not NUL-terminated (Rust str data)."""
    if len(s) < MIN_STRING:
        return False
    letters = sum(map(str.isalpha, s))
    return letters >= 3 and letters * 2 >= len(s)


_PRINTABLE_ASCII = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}
_RUNS = re.compile(_RUN.pattern[:-1] + b"+")  # maximal non-empty runs of printable text
_CONT = range(0x80, 0xC0)  # UTF-8 continuation bytes


class DataMap:
    """Constant addresses -> the data they point at (active segments with a constant
    offset, plus passive segments whose address is inferred from ``memory.init``).

    ``sized_first`` (Rust, Go: strings are ``(ptr, len)`` pairs, not NUL-terminated)
    changes which evidence wins, see :meth:`entry`.

    Cost is linear in the data size: the text at an address is matched directly while the
    bytes matched in a segment stay under ``DIRECT_SCAN_FACTOR`` times its size (addresses
    point at the starts of short strings: ffmpeg's 825 KB segment needs 64k short matches
    instead of its 634k runs); past that, the printable runs of the segment are found once
    and each address costs a bisection. The text decoded for strings is bounded by
    ``text_budget`` (a multiple of the data size), so a crafted module cannot make string
    recovery quadratic.
    """

    TEXT_BUDGET_FACTOR = 16
    TEXT_BUDGET_MIN = 1 << 22
    DIRECT_SCAN_FACTOR = 2

    def __init__(
        self, segs: list[tuple[int, bytes]], wasm32: bool = True, sized_first: bool = False
    ) -> None:
        segs = sorted((o, d) for o, d in segs if d)
        self.starts = [o for o, _ in segs]
        self.ends = [o + len(d) for o, d in segs]
        self.datas = [d for _, d in segs]
        self.lo = self.starts[0] if segs else 1
        self.hi = max(self.ends) if segs else 0
        self.wasm32 = wasm32
        self.sized_first = sized_first
        self.cache: dict[int, tuple | None] = {}
        self.runs: dict[int, tuple[list[int], list[int]]] = {}
        self.direct_left: dict[int, int] = {}  # per segment: bytes direct matches may scan
        self.sized_cache: dict[tuple[int, int, int], str | None] = {}
        total = sum(len(d) for d in self.datas)
        self.text_budget = max(self.TEXT_BUDGET_MIN, self.TEXT_BUDGET_FACTOR * total)
        #: Go: ``(lo, hi, glo, ghi)``: 8-byte words of a data window that are static
        #: addresses (``lo <= v < hi``) or function values (``glo <= v < ghi``) are masked
        #: in the shape replacement (they relocate with every build)
        self.ptr_mask: tuple[int, int, int, int] | None = None

    def locate(self, addr: int):
        i = bisect_right(self.starts, addr) - 1
        if i < 0 or addr >= self.ends[i]:
            return None
        return self.datas[i], addr - self.starts[i]

    def _runs_of(self, i: int) -> tuple[list[int], list[int]]:
        r = self.runs.get(i)
        if r is None:
            starts: list[int] = []
            ends: list[int] = []
            for mt in _RUNS.finditer(self.datas[i]):
                starts.append(mt.start())
                ends.append(mt.end())
            r = self.runs[i] = (starts, ends)
        return r

    def _match_end(self, i: int, seg: bytes, rel: int) -> int:
        """Where ``_RUN.match(seg, rel, rel + MAX_CSTRING)`` ends: that match while the
        segment's direct budget lasts, then from the precomputed runs (a run's characters
        start at its non-continuation bytes, so a match from one of them ends at the run's
        end, or at the last whole character in the limit)."""
        if i not in self.runs:
            left = self.direct_left.get(i)
            if left is None:
                left = self.DIRECT_SCAN_FACTOR * len(seg)
            if left > 0:
                e_ = _RUN.match(seg, rel, rel + MAX_CSTRING).end()
                self.direct_left[i] = left - (e_ - rel) - 1
                return e_
        rs, rend = self._runs_of(i)
        j = bisect_right(rs, rel) - 1
        if j < 0 or rel >= rend[j] or seg[rel] in _CONT:
            return rel
        e_ = rend[j]
        if e_ - rel > MAX_CSTRING:
            e_ = rel + MAX_CSTRING
            while seg[e_] in _CONT:
                e_ -= 1
        return e_

    def _text(self, b: bytes) -> str | None:
        """:func:`_printable_text` within the text budget."""
        if self.text_budget < len(b):
            return None
        self.text_budget -= len(b)
        return _printable_text(b)

    def entry(self, addr: int):
        """Cached ``(shape_repl, immediate, fallback, seg, rel)`` for an address inside
        data, or None outside every segment.

        ``immediate``: a C string (NUL-terminated, printable, >= 4 chars, starting at the
        address: the byte before it is not printable text); reported as soon as it is
        seen, except in ``sized_first`` modules. ``fallback``: what is reported when no
        length follows the pointer: the C string (C-style modules), else the string an
        in-data ``(ptr, len)`` pair at the address refers to (Rust ``&str`` in a
        ``Location`` or a format-pieces array), else a conservative unterminated printable
        run (<= 200 chars). The decoder first tries a length given by the next
        instruction (``i32.const ptr; i32.const len``).
        """
        e = self.cache.get(addr, 0)
        if e != 0:
            return e
        i = bisect_right(self.starts, addr) - 1
        if i < 0 or addr >= self.ends[i]:
            self.cache[addr] = None
            return None
        seg = self.datas[i]
        rel = addr - self.starts[i]
        cstr = indirect = run = None
        e_ = self._match_end(i, seg, rel)
        at_start = rel == 0 or seg[rel - 1] not in _PRINTABLE_ASCII
        n = e_ - rel
        if n >= MIN_STRING and (at_start or self.sized_first):
            if at_start and e_ < len(seg) and seg[e_] == 0:
                cstr = self._text(seg[rel:e_])
            if self.text_budget >= MAX_RUN:
                r = seg[rel : min(e_, rel + MAX_RUN)].decode("utf-8", "ignore")
                self.text_budget -= len(r)
                if (
                    _plausible(r)
                    and r.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()
                ):
                    run = r
        if self.wasm32 and rel + 8 <= len(seg) and (cstr is None or self.sized_first):
            p2, l2 = struct.unpack_from("<II", seg, rel)
            if MIN_STRING <= l2 <= MAX_STR_LEN:
                loc2 = self.locate(p2)
                if loc2 is not None and loc2[1] + l2 <= len(loc2[0]):
                    t2 = self._text(loc2[0][loc2[1] : loc2[1] + l2])
                    if t2 is not None and any(c.isalpha() for c in t2):
                        indirect = t2
        if cstr is not None:
            repl = b"\xffS" + seg[rel:e_] + b"\x00"
        else:
            w = seg[rel : rel + 16]
            if self.ptr_mask is not None:
                w = _mask_words(w, self.ptr_mask)
            repl = b"\xffD" + bytes((len(w),)) + w
        if self.sized_first:
            e = (repl, None, indirect or run, seg, rel)
        else:
            e = (repl, cstr, cstr or indirect or run, seg, rel)
        self.cache[addr] = e
        return e

    def sized_text(self, e, length: int) -> str | None:
        """Text of ``length`` bytes at an entry's address (Rust ``(ptr, len)`` args);
        cached per (address, length)."""
        seg, rel = e[3], e[4]
        key = (id(seg), rel, length)
        t = self.sized_cache.get(key, 0)
        if t != 0:
            return t
        t = None if rel + length > len(seg) else self._text(seg[rel : rel + length])
        self.sized_cache[key] = t
        return t


def _mask_words(w: bytes, mask: tuple[int, int, int, int]) -> bytes:
    """``w`` with its little-endian 8-byte words that are addresses or Go function values
    replaced by ``0xfe`` bytes."""
    lo, hi, glo, ghi = mask
    out = bytearray(w)
    for i in range(0, len(w) - 7, 8):
        (v,) = struct.unpack_from("<Q", w, i)
        if lo <= v < hi or glo <= v < ghi:
            out[i : i + 8] = b"\xfe" * 8
    return bytes(out)


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
    literal search over the code instead of the regex trying every ``i32.const`` byte)."""
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
) -> DataMap:
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


def static_region(m: Module, dmap: DataMap) -> tuple[int, int]:
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
