"""The decoder's op-id buffer: the op ids are written two little-endian bytes each, into
mypyc's :class:`librt.strings.BytesWriter` (its runtime library, installed with mypy: the
compiled twin appends natively) or, where that is absent, into this module's
:class:`BytesWriter` (``append``, ``write`` and ``getvalue`` on a ``bytearray``: the pure
path) with :func:`write_i16_le`."""

from __future__ import annotations

import sys
from array import array

_BIG_ENDIAN = sys.byteorder == "big"


class BytesWriter(bytearray):
    """A ``bytearray`` with ``getvalue``."""

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self)

    def write(self, b: bytes | bytearray) -> None:
        """Append the bytes ``b``."""
        self.extend(b)


def write_i16_le(b: BytesWriter, n: int) -> None:
    """:func:`librt.strings.write_i16_le`: ``n`` (0 <= n < 2**15 here: op ids) as two
    little-endian bytes."""
    b.append(n & 0xFF)
    b.append(n >> 8)


def write_i32_le(b: BytesWriter, n: int) -> None:
    """:func:`librt.strings.write_i32_le`: ``n`` as four little-endian bytes (signed)."""
    b.extend(n.to_bytes(4, "little", signed=True))


def read_i32_le(b: bytes, index: int) -> int:
    """:func:`librt.strings.read_i32_le`: the signed little-endian i32 at ``b[index:]``."""
    if index < 0 or index + 4 > len(b):
        raise IndexError("read_i32_le past the end")
    return int.from_bytes(b[index : index + 4], "little", signed=True)


class _ListVec:
    """``vec[T]()`` without :mod:`librt.vecs`: a plain list."""

    def __getitem__(self, item: object) -> type[list]:
        return list


vec = _ListVec()


def vec_append(v: list, x: object) -> list:
    """:func:`librt.vecs.append` on a list: appended in place, returned."""
    v.append(x)
    return v


def native_order(v: bytes) -> bytes:
    """Little-endian 16-bit op ids as ``array("H", ids).tobytes()`` gives them (the stored
    form: native order)."""
    if not _BIG_ENDIAN:
        return v
    a = array("H")
    a.frombytes(v)
    a.byteswap()
    return a.tobytes()
