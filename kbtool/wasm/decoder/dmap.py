"""Constant addresses -> the data they point at: :class:`DataMap` (see :mod:`..datamap`).

Part of the decoder's compiled twin (``kbtool.wasm._cdecoder.dmap``, mypyc; :mod:`..active`
picks the same twin as for the decoder loop): the decoder asks it for every distinct
constant address inside data (64k on ffmpeg). :mod:`kbtool.wasm.datamap` re-exports the
chosen class; the pure one here is the reference."""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from typing import Final

try:  # mypyc: native 64-bit ints (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): vec[i64] compiles to a native array
    from librt.vecs import append as _vappend
    from librt.vecs import vec
except ImportError:  # the pure path without it: plain lists of ints
    from ..opbuf import vec  # type: ignore[assignment]
    from ..opbuf import vec_append as _vappend  # type: ignore[assignment]

_RUN = re.compile(
    rb"(?:[\t\n\r\x20-\x7e]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}"
    rb"|[\xf0-\xf4][\x80-\xbf]{3})*"
)
MIN_STRING = 4
MAX_CSTRING = 4096  # bytes scanned for a NUL-terminated string
MAX_RUN = 200  # characters kept of an unterminated run (Rust-style str data)
MAX_STR_LEN = 4096  # largest length accepted from a (ptr, len) pair


def _printable_text(b: bytes) -> str | None:
    """``b`` decoded if it is entirely printable UTF-8 text (\\t \\n \\r allowed).

    No ``_RUN.fullmatch`` first (it was): every string a strict decode gives whose
    characters are printable or \\t \\n \\r is encoded by ``_RUN``'s characters (ASCII
    \\t \\n \\r and 0x20-0x7e; a valid UTF-8 sequence of two, three or four bytes has the
    lead and continuation bytes ``_RUN`` lists), and whatever ``_RUN`` refuses either fails
    the strict decode (a stray or overlong byte) or decodes to a control the printable check
    refuses; the same answer (tested on crafted bytes and every corpus module's entries)."""
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if s.isprintable():  # (then it holds no \n \t \r: nothing to remove)
        return s
    if not s.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return None
    return s


def _plausible(s: str) -> bool:
    """Conservative test for text that is not NUL-terminated (Rust str data)."""
    if len(s) < MIN_STRING:
        return False
    letters = sum(map(str.isalpha, s))
    return letters >= 3 and letters * 2 >= len(s)


#: what :meth:`DataMap.entry` gives: ``(shape_repl, immediate, fallback, seg, rel)``
#: (a plain tuple object for mypyc: the one stored in the cache is the one returned)
Entry = tuple

_PRINTABLE_ASCII = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}
#: the same as a table by byte (an index, no set lookup per address)
_PRINTABLE_BYTE: Final = bytes(1 if b in _PRINTABLE_ASCII else 0 for b in range(256))
_RUNS = re.compile(_RUN.pattern[:-1] + b"+")  # maximal non-empty runs of printable text


def _run_end(seg: bytes, rel: int, lim: int) -> int:
    """Where ``_RUN.match(seg, rel, lim)`` ends (``rel < len(seg)``), for less: no regex
    when the byte at ``rel`` starts no character of it (numbers, pointers), the one-byte
    characters by a byte loop over the same class (what most text is), and ``_RUN`` itself only
    from the first byte that may start a longer character (its characters are
    self-delimiting: a match from there continues the one from ``rel``)."""
    b = seg[rel]
    if not _PRINTABLE_BYTE[b] and not 0xC2 <= b <= 0xF4:
        return rel
    # the longest run of _RUN's one-byte characters ([\t\n\r\x20-\x7e]) from rel before
    # lim, as a byte loop (compiled: no regex call and match object per address)
    n = len(seg)
    stop = lim if lim < n else n
    e = rel
    while e < stop and _PRINTABLE_BYTE[seg[e]]:
        e += 1
    if e < lim and e < len(seg) and 0xC2 <= seg[e] <= 0xF4:
        mt = _RUN.match(seg, e, lim)
        if mt is not None:
            e = mt.end()
    return e


def _segment_at(starts: list[int], addr: int) -> int:
    """``bisect_right(starts, addr) - 1`` as a plain loop (compiled: no call, no object
    compared per step)."""
    a = 0
    b = len(starts)
    while a < b:
        mid = (a + b) >> 1
        if addr < starts[mid]:
            b = mid
        else:
            a = mid + 1
    return a - 1


def _segment_at64(starts: vec[i64], addr: i64) -> i64:
    """:func:`_segment_at` on a native array of the starts (compiled: no list read, no
    boxed compare per step)."""
    a: i64 = 0
    b: i64 = len(starts)
    while a < b:
        mid = (a + b) >> 1
        if addr < starts[mid]:
            b = mid
        else:
            a = mid + 1
    return a - 1


_I64_MAX: Final = 0x7FFFFFFFFFFFFFFF
_UNSET: Final = -0x4000000000000000  # a segment's direct budget not yet set

_CONT = range(0x80, 0xC0)  # UTF-8 continuation bytes
#: a data word's replacement head by its length (0-16 bytes): no tuple and bytes per address
_D_HEADS: Final = [b"\xffD" + bytes((n,)) for n in range(17)]


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

    TEXT_BUDGET_FACTOR: int = 16
    TEXT_BUDGET_MIN: int = 1 << 22
    DIRECT_SCAN_FACTOR: int = 2

    def __init__(
        self, segs: list[tuple[int, bytes]], wasm32: bool = True, sized_first: bool = False
    ) -> None:
        segs = sorted((o, d) for o, d in segs if d)
        self.starts: list[int] = [o for o, _ in segs]
        self.ends: list[int] = [o + len(d) for o, d in segs]
        self.datas: list[bytes] = [d for _, d in segs]
        self.lo: int = self.starts[0] if segs else 1
        self.hi: int = max(self.ends) if segs else 0
        self.wasm32: bool = wasm32
        self.sized_first: bool = sized_first
        self.cache: dict[int, Entry | None] = {}
        self.runs: dict[int, tuple[list[int], list[int]]] = {}
        # per segment: bytes direct matches may scan (_UNSET: not yet set), a native array
        # (no boxed key and dict probe per address)
        self.direct_left = vec[i64]()
        for _ in self.datas:
            self.direct_left = _vappend(self.direct_left, _UNSET)
        # the starts as a native array when every one fits (a bisection on native ints)
        self.vstarts = vec[i64]()
        self.narrow: bool = self.hi <= _I64_MAX
        if self.narrow:
            for o in self.starts:
                self.vstarts = _vappend(self.vstarts, o)
        self.sized_cache: dict[tuple[int, int, int], str | None] = {}
        total = sum(len(d) for d in self.datas)
        self.text_budget: int = max(self.TEXT_BUDGET_MIN, self.TEXT_BUDGET_FACTOR * total)
        #: Go: ``(lo, hi, glo, ghi)``: 8-byte words of a data window that are static
        #: addresses (``lo <= v < hi``) or function values (``glo <= v < ghi``) are masked
        #: in the shape replacement (they relocate with every build)
        self.ptr_mask: tuple[int, int, int, int] | None = None

    def _segment(self, addr: int) -> int:
        """``bisect_right(self.starts, addr) - 1``, no generic call."""
        if self.narrow and addr <= _I64_MAX:
            return _segment_at64(self.vstarts, addr)
        return _segment_at(self.starts, addr)

    def locate(self, addr: int) -> tuple[bytes, int] | None:
        i = self._segment(addr)
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
        # (the runs are found once a segment's budget is spent: until then none are)
        left: i64 = self.direct_left[i]
        if left == _UNSET:
            left = self.DIRECT_SCAN_FACTOR * len(seg)
        if left > 0:
            e_ = _run_end(seg, rel, rel + MAX_CSTRING)  # _RUN.match(...).end()
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

    def entry(self, addr: int) -> Entry | None:
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
        cache = self.cache
        if addr in cache:
            return cache[addr]
        i = self._segment(addr)
        if i < 0 or addr >= self.ends[i]:
            self.cache[addr] = None
            return None
        seg = self.datas[i]
        rel = addr - self.starts[i]
        cstr: str | None = None
        indirect: str | None = None
        run: str | None = None
        e_ = self._match_end(i, seg, rel)
        at_start = rel == 0 or not _PRINTABLE_BYTE[seg[rel - 1]]
        n = e_ - rel
        if n >= MIN_STRING and (at_start or self.sized_first):
            if at_start and e_ < len(seg) and seg[e_] == 0:
                cstr = self._text(seg[rel:e_])
            if cstr is not None and not self.sized_first:
                # the C string is the answer (no run is reported): only the run's share of
                # the budget is taken, as before (the C string's own text when it is short)
                if self.text_budget >= MAX_RUN:
                    self.text_budget -= (
                        len(cstr)
                        if n <= MAX_RUN
                        else len(seg[rel : rel + MAX_RUN].decode("utf-8", "ignore"))
                    )
            elif self.text_budget >= MAX_RUN:
                r = seg[rel : min(e_, rel + MAX_RUN)].decode("utf-8", "ignore")
                self.text_budget -= len(r)
                if (
                    _plausible(r)
                    and r.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()
                ):
                    run = r
        if self.wasm32 and rel + 8 <= len(seg) and (cstr is None or self.sized_first):
            # the little-endian (pointer, length) words at the address (no call per address)
            l2 = seg[rel + 4] | seg[rel + 5] << 8 | seg[rel + 6] << 16 | seg[rel + 7] << 24
            if MIN_STRING <= l2 <= MAX_STR_LEN:
                p2 = seg[rel] | seg[rel + 1] << 8 | seg[rel + 2] << 16 | seg[rel + 3] << 24
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
            repl = _D_HEADS[len(w)] + w
        # (made by a call typed ``Entry``: a tuple literal here would be built natively and
        # boxed anew for the cache and again for the return, three tuples per address)
        if self.sized_first:
            e = _entry(repl, None, indirect or run, seg, rel)
        else:
            e = _entry(repl, cstr, cstr or indirect or run, seg, rel)
        self.cache[addr] = e
        return e

    def sized_text(self, e: Entry, length: int) -> str | None:
        """Text of ``length`` bytes at an entry's address (Rust ``(ptr, len)`` args);
        cached per (address, length)."""
        seg, rel = e[3], e[4]
        key = (id(seg), rel, length)
        cache = self.sized_cache
        if key in cache:
            return cache[key]
        t = None if rel + length > len(seg) else self._text(seg[rel : rel + length])
        self.sized_cache[key] = t
        return t


def _entry(repl: bytes, immediate: str | None, fallback: str | None, seg: bytes, rel: int) -> Entry:
    """:meth:`DataMap.entry`'s tuple, as one object."""
    return (repl, immediate, fallback, seg, rel)


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


def init_windows(data: bytes, lo: int, hi: int, before: int, after: int, gap: int) -> list[int]:
    """The windows :func:`kbtool.wasm.datamap._init_matches` searches, flat (``[a0, b0, a1,
    b1, ...]``): around each ``memory.init`` opcode (``0xfc 0x08``) in ``data[lo:hi]``,
    ``[max(lo, q - before), min(hi, q + after))``, merged when one starts within ``gap`` of
    the previous one's end. Compiled: ``0xfc`` found by ``bytes.find`` (``memchr``; 54k on
    ffmpeg's 27 MB of code) and the next byte read natively, where the regex's two-byte
    literal search steps through every byte (~6 instructions a byte)."""
    out: list[int] = []
    n: i64 = 0  # entries in out
    end: i64 = (hi if hi < len(data) else len(data)) - 1  # (the pair's second byte: < hi)
    q: i64 = data.find(b"\xfc", lo, end) if lo < end else -1
    while q >= 0:
        if data[q + 1] == 8:
            a: i64 = q - before
            if a < lo:
                a = lo
            b: i64 = q + after
            if b > hi:
                b = hi
            if n and a <= out[n - 1] + gap:
                out[n - 1] = b
            else:
                out.append(a)
                out.append(b)
                n += 2
        q = data.find(b"\xfc", q + 1, end)
    return out
