"""The data walk's immediate readers (LEBs, block, value and heap types, memargs), part of
its compiled twin (``kbtool.analysis._cdatawalk.leb``; calls from :func:`.body_refs` are
native calls within the twin). The module has been validated by the decoder before: no
checks beyond the reads' own bounds."""

from __future__ import annotations

try:  # mypyc: native 64-bit ints (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]


def _uleb(data: bytes, p: i64) -> tuple[int, i64]:
    """An unsigned LEB at ``p``: (value, end). Its first eight bytes (56 bits) on native
    ints (compiled: no boxed int per byte), the rest, if any, on Python's."""
    x: i64 = 0
    shift: i64 = 0
    while shift < 56:
        c: i64 = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, p
        shift += 7
    return _uleb_long(data, p, x, shift)


def _uleb_long(data: bytes, p: i64, x0: i64, shift0: i64) -> tuple[int, i64]:
    """:func:`_uleb` past its native bytes: ``x0`` their value, ``shift0`` their bits."""
    x: int = x0
    shift: int = shift0
    while True:
        c = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, p
        shift += 7


def _sleb(data: bytes, p: i64) -> tuple[int, i64]:
    """A signed LEB at ``p``: (value, end). Its first eight bytes (56 bits) on native
    ints, the rest, if any, on Python's (as :func:`_uleb`)."""
    x: i64 = 0
    shift: i64 = 0
    while shift < 56:
        c: i64 = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            if c & 0x40:
                # ``1 << shift`` from a native value (mypyc emits a constant ``1 << n`` as
                # a C int shift: wrong past 31 bits)
                x -= (c & 0x40) << (shift - 6)
            return x, p
    return _sleb_long(data, p, x, shift)


def _sleb_long(data: bytes, p: i64, x0: i64, shift0: i64) -> tuple[int, i64]:
    """:func:`_sleb` past its native bytes: ``x0`` their value (not sign-extended),
    ``shift0`` their bits."""
    x: int = x0
    shift: int = shift0
    while True:
        c = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            if c & 0x40:
                x -= 1 << shift
            return x, p


def _skip_leb(data: bytes, p: i64) -> i64:
    while data[p] >= 0x80:
        p += 1
    return p + 1


def _skip_heaptype(data: bytes, p: i64) -> i64:
    b = data[p]
    if b == 0x65:  # shared + abstract heap type
        return p + 2
    if b == 0x62:  # exact type index
        return _skip_leb(data, p + 1)
    return _skip_leb(data, p)


def _skip_valtype(data: bytes, p: i64) -> i64:
    b = data[p]
    if b == 0x63 or b == 0x64:
        return _skip_heaptype(data, p + 1)
    if b == 0x65:
        return p + 2
    return p + 1


def _skip_blocktype(data: bytes, p: i64) -> i64:
    b = data[p]
    if b == 0x40:
        return p + 1
    if b == 0x63 or b == 0x64 or b == 0x65:
        return _skip_valtype(data, p)
    return _skip_leb(data, p)  # a one-byte value type or an s33 type index


def _memarg(data: bytes, p: i64) -> tuple[int, i64]:
    """(offset, end) of the memarg at ``p``."""
    a: int = data[p]
    if a < 0x80:
        p += 1
    else:
        a, p = _uleb(data, p)
    if a & 0x40:
        p = _skip_leb(data, p)
    x = data[p]
    if x < 0x80:
        return x, p + 1
    return _uleb(data, p)
