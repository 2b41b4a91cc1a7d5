"""Native-int tables for the decoder's hot loop (:func:`.analyze_range`): :class:`I64Map`
(the data addresses and memory accesses a range has met) and :class:`BigConsts` (a body's
distinct large constants).

Part of the decoder's compiled twin: there both are native classes over ``librt.vecs``
arrays (no int object made and no dict or set probed per lookup: the keys are plain 64-bit
ints); pure (``_COMPILED`` false) the same methods answer from a dict, the quicker way in
Python. Open addressing with linear probing."""

from __future__ import annotations

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

_COMPILED: Final = not __file__.endswith(".py")
_FIRST_SLOTS: Final = 1024
_BIG_SLOTS: Final = 4096
_BIG_MASK: Final = _BIG_SLOTS - 1
#: a body's distinct large constants the table takes (then the decoder goes on in a set)
BIG_MAX: Final = _BIG_SLOTS // 2


def _filled(n: i64, v: i64) -> vec[i64]:
    out = vec[i64]()
    for _ in range(n):
        out = _vappend(out, v)
    return out


def _slot(key: i64, mask: i64) -> i64:
    """Where ``key``'s probe starts (its bits folded: addresses share their low bits)."""
    return (key ^ (key >> 9) ^ (key >> 19) ^ (key >> 37)) & mask


class I64Map:
    """``key -> value`` for 64-bit int keys and values ``>= 0``; :meth:`get` is ``-1`` for a
    key not put. Grown to stay at most half full."""

    def __init__(self) -> None:
        self.mask: i64 = _FIRST_SLOTS - 1 if _COMPILED else 0
        self.n: i64 = 0
        self.keys = _filled(self.mask + 1, 0)
        self.vals = _filled(self.mask + 1, -1)
        self.d: dict[int, int] = {}  # (pure)

    def get(self, key: i64) -> i64:
        """The value put for ``key``, or -1."""
        if not _COMPILED:
            return self.d.get(key, -1)
        mask = self.mask
        keys = self.keys
        vals = self.vals
        h = _slot(key, mask)
        while True:
            v = vals[h]
            if v < 0 or keys[h] == key:
                return v
            h = (h + 1) & mask

    def put(self, key: i64, value: i64) -> None:
        """Record ``key -> value`` (``key`` not put before, ``value >= 0``)."""
        if not _COMPILED:
            self.d[key] = value
            return
        if 2 * (self.n + 1) > self.mask + 1:
            self._grow()
        mask = self.mask
        h = _slot(key, mask)
        while self.vals[h] >= 0:
            h = (h + 1) & mask
        self.keys[h] = key
        self.vals[h] = value
        self.n += 1

    def _grow(self) -> None:
        old_keys = self.keys
        old_vals = self.vals
        size: i64 = 2 * (self.mask + 1)
        self.mask = size - 1
        self.n = 0
        self.keys = _filled(size, 0)
        self.vals = _filled(size, -1)
        for j in range(len(old_vals)):
            if old_vals[j] >= 0:
                self.put(old_keys[j], old_vals[j])


class BigConsts:
    """Which large constants each body has listed: a slot is in use for a body when its
    stamp is the body's code index (a new body starts with none, nothing is cleared)."""

    def __init__(self) -> None:
        self.keys = _filled(_BIG_SLOTS if _COMPILED else 0, 0)
        self.stamps = _filled(_BIG_SLOTS if _COMPILED else 0, -1)
        self.d: dict[int, int] = {}  # (pure: constant -> the last body that listed it)

    def first(self, x: i64, ci: i64) -> bool:
        """Whether ``x`` is new to body ``ci`` (then recorded); at most :data:`BIG_MAX`
        constants a body."""
        if not _COMPILED:
            if self.d.get(x) == ci:
                return False
            self.d[x] = ci
            return True
        keys = self.keys
        stamps = self.stamps
        h: i64 = (x ^ (x >> 12) ^ (x >> 24) ^ (x >> 40)) & _BIG_MASK
        while True:
            if stamps[h] != ci:
                stamps[h] = ci
                keys[h] = x
                return True
            if keys[h] == x:
                return False
            h = (h + 1) & _BIG_MASK
