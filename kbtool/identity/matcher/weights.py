"""Exact idf-weighted Jaccard similarity of two sets for the diff matcher's features (pure,
stdlib only; :mod:`.features` uses it): weights as exact integers, so the float of a pair is
the one two :func:`math.fsum` give, in any order of the sets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from .bigrams import append, i64, vec


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


# ------------------------------------------------------------------ keys by id (the store's)

#: the ids of a record without keys of one kind (never appended to: read only)
_NO_IDS: vec[i64] = vec[i64]()
# an exact weight split in two for the typed sums (each part summed in a native int)
_LOW_BITS: Final = 31
_LOW_MASK: Final = (1 << 31) - 1
# every exact weight is below this (see ``_Vocab.weigh``): both parts fit a native int
_WEIGHT_LIMIT: Final = 1 << 62


class _Vocab:
    """The distinct keys of one kind (the records' strings, or their constants) over a
    store's records: each key's id (first-seen order), its document frequency (how many
    records hold it) and its exact weight (:class:`_Weights`' integer for that frequency),
    by id; each record's keys as its distinct ids, sorted (:meth:`add`). A set's total
    weight and two sets' shared weight are then sums over native arrays (the twin merges
    two sorted id arrays): the very ints ``_Weights.total`` of the key sets gives."""

    __slots__ = ("ids", "df", "stamp", "wid", "wt", "stored")

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}
        self.df: vec[i64] = vec[i64]()  # by id: how many records hold the key
        self.stamp: vec[i64] = vec[i64]()  # by id: the last record (:meth:`add`'s no) counted
        self.wid: vec[i64] = vec[i64]()  # by id: the exact weight (after :meth:`weigh`)
        self.wt: _Weights | None = None
        self.stored: i64 = 0  # the store's keys' ids are below (keys met later: above)

    def add(self, keys: Sequence, no: i64) -> vec[i64]:
        """One store record's distinct keys as ids (in the keys' order: see
        :func:`_sorted_ids`), each counted once in its frequency (``no``: the record's
        number, distinct per record, above 0)."""
        if not keys:
            return _NO_IDS
        if not _TYPED:
            return self._add_pure(keys, no)
        ids = self.ids
        df, stamp = self.df, self.stamp
        out = vec[i64](capacity=len(keys))
        k: i64 = 0
        for x in keys:
            got = ids.get(x)
            if got is None:
                k = len(df)
                ids[x] = k
                df = append(df, 1)
                stamp = append(stamp, no)
                out = append(out, k)
            else:
                k = got
                if stamp[k] != no:
                    stamp[k] = no
                    df[k] += 1
                    out = append(out, k)
        self.df, self.stamp = df, stamp
        return out

    def _add_pure(self, keys: Sequence, no: i64) -> vec[i64]:
        """:meth:`add` in pure Python (the twin's loop is native): the distinct keys by
        ``dict.fromkeys`` (first-seen order, in C), then one id lookup per distinct key;
        the same ids, counts and stamps."""
        ids = self.ids
        get = ids.get
        df, stamp = self.df, self.stamp
        out = []
        for x in dict.fromkeys(keys):
            k = get(x)
            if k is None:
                k = ids[x] = len(df)
                df = append(df, 1)
                stamp = append(stamp, no)
            else:
                df[k] += 1
                stamp[k] = no
            out.append(k)
        self.df, self.stamp = df, stamp
        return vec[i64](out)

    def weigh(self, n: int, add: float, default: float) -> None:
        """The exact weights by id, as ``_Weights({key: log(n / df) + add}, default)``
        gives them (the same distinct floats, one per frequency: the same scale)."""
        df = self.df
        ws = {v: math.log(n / v) + add for v in set(df)}
        wt = _Weights(ws, default)  # (its ``w``: frequency -> class)
        by = [0] * (max(ws) + 1 if ws else 1)
        cls, exact = wt.w, wt.by
        for v, c in cls.items():
            by[v] = exact[c]
        wt.by = by  # by frequency (``_Weights`` in two levels: see ``features._Store``)
        wt.w = {}  # (the key -> frequency dict only on demand: ``_Store.w_s``)
        # every float is at least min(add, log 2) and below 64 (n < e**63), so the scale
        # is at most 2**57 and an exact weight below 2**62: both split parts are native
        if max(by) >= _WEIGHT_LIMIT or wt.default >= _WEIGHT_LIMIT:
            raise ValueError("an exact weight past 2**62")
        self.wid = vec[i64]([by[v] for v in df])
        self.wt = wt
        self.stored = len(df)

    def outside(self, keys: Sequence) -> vec[i64]:
        """The distinct keys of a record outside the store as sorted ids; a key none of the
        store's records holds gets an id of its own past theirs, weighing the default."""
        if not keys:
            return _NO_IDS
        wt = self.wt
        assert wt is not None
        ids = self.ids
        got: set[int] = set()
        for x in keys:
            k = ids.get(x)
            if k is None:
                k = ids[x] = len(self.wid)
                self.wid = append(self.wid, wt.default)
            got.add(k)
        return vec[i64](sorted(got))

    def inv(self) -> float:
        """``1 / scale`` of the exact weights (after :meth:`weigh`)."""
        wt = self.wt
        assert wt is not None
        return wt.inv

    def stored_df(self) -> dict:
        """The store's keys and their document frequencies (what a ``Counter`` of the
        records' key sets counts)."""
        df, stored = self.df, self.stored
        return {x: int(df[k]) for x, k in self.ids.items() if k < stored}


# an id array this short is sorted by insertion, a longer one by a heap sort (in place)
_SHORT_SORT = 12


def _sorted_ids(a: vec[i64]) -> vec[i64]:
    """The ids of ``a`` in ascending order (distinct ids: the order is the only one), ``a``
    itself sorted in place in the twin (native reads and writes), a new list otherwise.
    The store's features sort their records' ids when made (``FeatureCache.feat``): only
    the records some pair reads."""
    n: i64 = len(a)
    if n <= 1:
        return a
    if not _TYPED:
        return vec[i64](sorted(a))
    if n <= _SHORT_SORT:
        for i in range(1, n):
            x: i64 = a[i]
            j: i64 = i - 1
            while j >= 0 and a[j] > x:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return a
    start: i64 = n // 2 - 1
    while start >= 0:
        _sift_down(a, start, n)
        start -= 1
    end: i64 = n - 1
    while end > 0:
        top: i64 = a[0]
        a[0] = a[end]
        a[end] = top
        _sift_down(a, 0, end)
        end -= 1
    return a


def _sift_down(a: vec[i64], root: i64, n: i64) -> None:
    """The heap sort's step: ``a[root]`` moved down the max-heap ``a[:n]``."""
    x: i64 = a[root]
    while True:
        child: i64 = 2 * root + 1
        if child >= n:
            break
        if child + 1 < n and a[child + 1] > a[child]:
            child += 1
        if a[child] <= x:
            break
        a[root] = a[child]
        root = child
    a[root] = x


def _ids_total(a: vec[i64], wid: vec[i64]) -> int:
    """The exact total weight of a set of ids (``_Weights.total`` of its keys)."""
    if not _TYPED:
        return sum(map(wid.__getitem__, a))
    hi: i64 = 0
    lo: i64 = 0
    for t in range(len(a)):
        x: i64 = wid[a[t]]
        hi += x >> _LOW_BITS
        lo += x & _LOW_MASK
    return (int(hi) << _LOW_BITS) + int(lo)


def _ids_inter(a: vec[i64], b: vec[i64], wid: vec[i64]) -> int:
    """The exact weight of the ids two sorted id arrays share (0: none; every weight is
    positive): one merge in the twin, no hashing."""
    if not _TYPED:
        return sum(map(wid.__getitem__, set(a).intersection(b)))
    na: i64 = len(a)
    nb: i64 = len(b)
    i: i64 = 0
    j: i64 = 0
    hi: i64 = 0
    lo: i64 = 0
    while i < na and j < nb:
        x: i64 = a[i]
        y: i64 = b[j]
        if x < y:
            i += 1
        elif y < x:
            j += 1
        else:
            w: i64 = wid[x]
            hi += w >> _LOW_BITS
            lo += w & _LOW_MASK
            i += 1
            j += 1
    if hi == 0:
        return int(lo)
    return (int(hi) << _LOW_BITS) + int(lo)


def _jaccard_ids(a: vec[i64], ta: int, b: vec[i64], tb: int, wid: vec[i64], inv: float) -> float:
    """:func:`_weighted_jaccard_exact` of two key sets given as sorted ids (their exact
    totals ``ta``, ``tb``; ``inv``: ``1 / scale``): the same float."""
    if not len(a) and not len(b):
        return -1.0
    wsi = _ids_inter(a, b, wid)
    if not wsi:
        return 0.0
    wi = float(wsi) * inv  # == wsi / scale == fsum of the intersection's weights
    wu = wi + float(ta + tb - 2 * wsi) * inv  # ... plus fsum of the symmetric difference's
    return wi / wu if wu > 0 else 0.0
