"""Exact idf-weighted Jaccard similarity of two sets for the diff matcher's features (pure,
stdlib only; :mod:`.features` uses it): weights as exact integers, so the float of a pair is
the one two :func:`math.fsum` give, in any order of the sets."""

from __future__ import annotations

import math
from typing import Any, Final


def _probe() -> None:  # (only its kind is read: see ``_TYPED``)
    pass


#: True in the compiled twin (its functions have no code object): typed loops there
_TYPED: Final = not hasattr(_probe, "__code__")


def _weighted_jaccard(a: frozenset, b: frozenset, idf: dict, default: float) -> float:
    """The reference form (:func:`_weighted_jaccard_exact` gives the same float, faster)."""
    if not a and not b:
        return -1.0
    inter = a & b
    if not inter:
        return 0.0
    # fsum: exactly rounded, so the result does not depend on set iteration order
    wi = math.fsum([idf.get(x, default) for x in inter])
    wu = wi + math.fsum([idf.get(x, default) for x in a ^ b])
    return wi / wu if wu > 0 else 0.0


class _Weights:
    """idf weights as exact integers (each weight times ``scale``, a power of two no float
    weight has a finer bit than): sums of them are exact, and an int divided by an int is
    correctly rounded, as :func:`math.fsum` is. So a set's total weight is summed once per
    set and the union's weight of a pair is ``total(a) + total(b) - weight(a & b)``, the very
    float :func:`_weighted_jaccard` computes from two ``fsum`` over the sets.

    Two levels: ``w`` maps a key to a small int (its weight's class), ``by`` a class to the
    exact weight (a key outside ``w`` weighs ``default``). A store's weights come straight
    from its document frequencies: ``w`` is the frequencies themselves and ``by`` is indexed
    by frequency (``features._weights_by_df``), so no dict of exact weights is built."""

    __slots__ = ("w", "by", "default", "scale", "inv")

    def __init__(self, idf: dict, default: float) -> None:
        distinct = {default, *idf.values()}  # (a few hundred floats: see _Store)
        den = max((x.as_integer_ratio()[1] for x in distinct), default=1)
        self.scale: int = den
        # exact 1 / scale (a power of two): ``float(x) * inv`` is ``x / scale`` (both correctly
        # rounded, a power of two only moves the exponent) without a long division
        self.inv: float = 1.0 / den
        self.default: int = _exact(default, den)
        exact = {x: _exact(x, den) for x in distinct}
        cls = {x: i for i, x in enumerate(exact)}
        self.by: list[int] = list(exact.values())
        self.w: dict[Any, int] = {k: cls[v] for k, v in idf.items()}

    def weight(self, key: object) -> int:
        """The exact weight of one key."""
        c = self.w.get(key)
        return self.default if c is None else self.by[c]

    def total(self, s: frozenset) -> int:
        w, by, d = self.w, self.by, self.default
        if _TYPED:
            return _total_typed(s, w, by, d)
        try:
            return sum(map(by.__getitem__, map(w.__getitem__, s)))
        except KeyError:
            return sum(by[w[x]] if x in w else d for x in s)


def _total_typed(s: frozenset, w: dict[Any, int], by: list[int], d: int) -> int:
    """``_Weights.total`` by a typed loop in the twin (no bound method call per element)."""
    t = 0
    for x in s:
        c = w.get(x)
        t += d if c is None else by[c]
    return t


def _inter_typed(a: frozenset, b: frozenset, w: dict[Any, int], by: list[int], d: int) -> int:
    """The exact weight of ``a & b`` (0: nothing shared, every weight is positive), no set
    built (the twin)."""
    if len(a) > len(b):
        a, b = b, a
    t = 0
    for x in a:
        if x in b:
            c = w.get(x)
            t += d if c is None else by[c]
    return t


def _exact(x: float, den: int) -> int:
    n, d = x.as_integer_ratio()
    return n * (den // d)


def _weighted_jaccard_exact(a: frozenset, ta: int, b: frozenset, tb: int, wt: _Weights) -> float:
    """:func:`_weighted_jaccard` of two sets with their exact totals (``_Weights.total``)."""
    if not a and not b:
        return -1.0
    if _TYPED:
        wsi = _inter_typed(a, b, wt.w, wt.by, wt.default)
        if not wsi:
            return 0.0
    else:
        inter = a & b
        if not inter:
            return 0.0
        wsi = wt.total(inter)
    inv = wt.inv
    wi = float(wsi) * inv  # == wsi / scale == fsum of the intersection's weights
    wu = wi + float(ta + tb - 2 * wsi) * inv  # ... plus fsum of the symmetric difference's
    return wi / wu if wu > 0 else 0.0
