"""The decoder's op-id buffer where mypyc's runtime library (``librt``, installed with
mypy) is absent: :class:`librt.strings.BytesWriter`'s ``append`` and ``getvalue`` on a
``bytearray`` (the pure path; the compiled twin appends natively)."""

from __future__ import annotations


class BytesWriter(bytearray):
    """A ``bytearray`` with ``getvalue``."""

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self)
