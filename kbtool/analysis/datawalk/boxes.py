"""The data walk's shared target ints: a reference's target as one int object per address
(a direct-mapped table of the last ones boxed), not a new object per reference.

ffmpeg's walk makes ~336k data references to ~73k targets: each boxed anew is an int object
made (and freed with the references), ~8 MB more of the walk's peak and as many objects for
the later passes (marks, counts, columns) to read. Part of the walk's compiled twin (mypyc);
the values are the same ints either way."""

from __future__ import annotations

from typing import Final

try:  # mypyc: native 64-bit ints (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): a native array of the keys
    from librt.vecs import vec
except ImportError:  # the pure path without it: a plain list
    from kbtool.wasm.opbuf import vec  # type: ignore[assignment]

_SLOTS: Final = 8192
_MASK: Final = _SLOTS - 1
# targets from 0 below this are kept (the rest: boxed as before); a short int constant, so
# compiled the test is native (2**62 would be a boxed int compared by a call)
_MAX: Final = 1 << 48


class Boxes:
    """The last int object made per slot, with its value (-1: none yet)."""

    def __init__(self) -> None:
        self.keys: vec[i64] = vec[i64]([-1] * _SLOTS)
        self.objs: list[object] = [None] * _SLOTS


def box(x: int, b: Boxes | None) -> object:
    """``x`` as an int object: the one kept for its value when its slot holds it, else a
    new one (kept there). Without ``b``: a new one."""
    if b is None or x < 0 or x >= _MAX:
        return x
    xi: i64 = x
    h: i64 = (xi ^ (xi >> 13)) & _MASK
    keys = b.keys
    if keys[h] == xi:
        return b.objs[h]
    o: object = x
    keys[h] = xi
    b.objs[h] = o
    return o
