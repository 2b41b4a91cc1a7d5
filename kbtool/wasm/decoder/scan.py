"""The decoder's LEB and type scanners (part of the decoder twin, compiled with it): each
accepts exactly what the pure readers in :mod:`kbtool.wasm.leb` / :mod:`kbtool.wasm.instr` do,
and raises :class:`_Bad` where the fast loop must diagnose carefully."""

from __future__ import annotations

from typing import Final

try:  # mypyc: native 64-bit ints (see the package's __init__)
    from mypy_extensions import i64
except ImportError:  # the pure path without it: plain ints
    i64 = int  # type: ignore[misc,assignment]

from ..decoder_tables import abs_heap_table, vt_table


class _Bad(Exception):
    """Internal: the fast loop met something it does not accept; diagnose carefully."""


# LEB helpers
def _uleb_cont(data: bytes, p: i64, x: int, maxshift: int = 28) -> tuple[int, i64]:
    """Continue an unsigned LEB whose first byte ``x`` (>= 0x80) was consumed
    (``maxshift`` 28: u32, at most 5 bytes; 63: u64, at most 10 bytes). The unused high
    bits of a last byte at ``maxshift`` must be zero, as in :func:`kbtool.wasm.leb.read_uleb`."""
    x &= 0x7F
    shift = 7
    while True:
        c = data[p]
        p += 1
        if c < 0x80:
            if shift == maxshift and c >> (4 if maxshift == 28 else 1):
                raise _Bad
            return x | (c << shift), p
        x |= (c & 0x7F) << shift
        shift += 7
        if shift > maxshift:
            raise _Bad


def _sleb_cont(data: bytes, p: i64, x: int, bits: int = 32) -> tuple[int, i64]:
    """Continue a signed LEB (``bits`` 32, 33 or 64) whose first byte ``x`` (>= 0x80) was
    consumed; the unused bits of a full-length last byte must extend the sign."""
    maxshift = 63 if bits > 35 else 28
    x &= 0x7F
    shift = 7
    while True:
        c = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            if shift == maxshift:
                used = bits - maxshift
                top = c >> (used - 1)
                if top and top != (1 << (8 - used)) - 1:
                    raise _Bad
            shift += 7
            if c & 0x40:
                x -= 1 << shift
            return x, p
        shift += 7
        if shift > maxshift:
            raise _Bad


def _skip(data: bytes, p: i64) -> i64:
    """Skip a u32 LEB whose first byte at ``p`` has the continuation bit set."""
    q = p + 1
    while data[q] & 0x80:
        q += 1
        if q - p > 4:
            raise _Bad
    if q - p == 4 and data[q] > 0x0F:  # 5th byte: only 4 value bits
        raise _Bad
    return q + 1


_VT: Final = vt_table()
_ABS_HEAP: Final = abs_heap_table()


def _heaptype_end(data: bytes, p: i64) -> i64:
    """End of the heap type at ``p``; accepts exactly what :func:`instr.read_heaptype` does."""
    b = data[p]
    if _ABS_HEAP[b]:
        return p + 1
    if b == 0x65:
        if _ABS_HEAP[data[p + 1]]:
            return p + 2
        raise _Bad
    if b == 0x62:  # exact type index (u32)
        return p + 2 if data[p + 1] < 0x80 else _skip(data, p + 1)
    if b < 0x40:  # one-byte type index
        return p + 1
    if b < 0x80:  # negative one-byte s33: not a heap type
        raise _Bad
    x, q = _sleb_cont(data, p + 1, b, 33)
    if x < 0:
        raise _Bad
    return q


def _valtype_end(data: bytes, p: i64) -> i64:
    """End of the value type at ``p``; accepts exactly what :func:`instr.read_valtype` does."""
    c = _VT[data[p]]
    if c == 1:
        return p + 1
    if c == 2:
        return _heaptype_end(data, p + 1)
    if c == 3:
        return _heaptype_end(data, p)
    raise _Bad


def _blocktype_end(data: bytes, p: i64, x: int) -> i64:
    """End of a block type whose first byte ``x`` is in 0x40..0x7F (empty or a value type)."""
    if x == 0x40 or _VT[x] == 1:
        return p + 1
    return _valtype_end(data, p)


def _br_table_end(data: bytes, p: i64, end: i64) -> i64:
    """The end of a ``br_table``'s immediates at ``p`` (a count, then one label more)."""
    x = data[p]
    p += 1
    if x >= 0x80:
        x, p = _uleb_cont(data, p, x)
    if x > end - p:
        raise _Bad
    for _ in range(x + 1):
        p = p + 1 if data[p] < 0x80 else _skip(data, p)
    return p


def _select_end(data: bytes, p: i64, end: i64) -> i64:
    """The end of a typed ``select``'s value types at ``p``."""
    x = data[p]
    p += 1
    if x >= 0x80:
        x, p = _uleb_cont(data, p, x)
    if x > end - p:
        raise _Bad
    for _ in range(x):
        p = _valtype_end(data, p)
    return p


def _catches_end(data: bytes, p: i64, end: i64) -> i64:
    """The end of a ``try_table``'s catch clauses at ``p`` (after its block type)."""
    x = data[p]
    p += 1
    if x >= 0x80:
        x, p = _uleb_cont(data, p, x)
    if x > end - p:
        raise _Bad
    for _ in range(x):
        c = data[p]
        p += 1
        if c > 3:
            raise _Bad
        if c < 2:
            p = p + 1 if data[p] < 0x80 else _skip(data, p)
        p = p + 1 if data[p] < 0x80 else _skip(data, p)
    return p


def _br_on_cast_end(data: bytes, p: i64) -> i64:
    """The end of ``br_on_cast(_fail)``'s flags, label and two heap types at ``p``."""
    p += 1
    p = p + 1 if data[p] < 0x80 else _skip(data, p)
    p = _heaptype_end(data, p)
    return _heaptype_end(data, p)
