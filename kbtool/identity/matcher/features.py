"""Per-function features and pairwise similarity for the diff matcher (pure, stdlib only).

Everything here is computed lazily and cached per record: the matcher only asks for the
features of functions that are candidates of some still-unmatched function, so a large
module that mostly matches by hash never pays for histograms.

Inside :func:`shared_features` (one pairing: the matcher, its review and the pairing's own
review checks), every :class:`FeatureCache` over the same two record lists shares one store:
the per-record features and every pair's content similarity are computed once for the
whole pairing instead of once per stage (issue 30: a pair's review asks for the same
similarities many times). The values are the same either way (pure functions of the records).

Inside :func:`feature_pool` (a later release's ingest: the matcher runs on the records of
the new module, the pairing that stores the report on records read back from the KB), a
store is also shared by CONTENT: a cache over other record objects whose every input of
the store (per index: ops, strings, constants, size, loops, call_indirect) is equal gets
the store already made, so the pairing's review checks find the matcher's features and
similarities instead of computing them again.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

from ..names import _MINIFIED_RE, _SHORT3_RE, is_minified_name, module_is_minified  # noqa: F401
from .bigrams import (  # noqa: F401  (the histograms' names, read here and by the tests)
    _LOCAL_IDS,
    _MAX_OPS,
    _TYPED,
    _bigrams,
    _cosine,
    _cosine_words,
    _pair_counts,
    hist_dict,
    i64,
    vec,
)
from .weights import (  # noqa: F401  (the reference forms: read by the tests)
    _NO_IDS,
    _exact,
    _ids_total,
    _jaccard_ids,
    _sorted_ids,
    _Vocab,
    _weighted_jaccard,
    _weighted_jaccard_exact,
    _Weights,
)

__all__ = [
    "FeatureCache",
    "hist_dict",
    "shared_features",
    "feature_pool",
    "is_minified_name",
    "module_is_minified",
    "size_ratio",
]


def size_ratio(a: int, b: int) -> float:
    if a == b:
        return 1.0
    if a < b:
        lo, hi = a, b
    else:
        lo, hi = b, a
    if hi <= 0:
        return 1.0
    if lo < 0:
        lo = 0
    return lo / hi  # (the same float as max(lo, 0) / hi: no tuple, no builtin call)


class _Feat:
    """One record's features. The op-bigram histogram is counted on first use
    (:meth:`hist`): the sets are enough for :meth:`FeatureCache.content_bound`."""

    __slots__ = (
        "sids",
        "cids",
        "tstrings",
        "tconsts",
        "size",
        "loops",
        "calli",
        "_ops",
        "_cache",
        "_hist",
    )

    def __init__(
        self,
        ops: bytes,
        sids: vec[i64] = _NO_IDS,
        cids: vec[i64] = _NO_IDS,
        bigrams: dict[bytes, tuple[Any, float]] | None = None,
        counts: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        # the record's distinct strings and constants as sorted ids of the store's
        # vocabularies (``_Vocab``: made once per record by the store)
        self.sids = sids
        self.cids = cids
        self.tstrings = self.tconsts = 0  # exact total weights (set by FeatureCache.feat)
        # the record's instr_count, loops and call_indirect, read by every pair score
        # (native ints in the compiled twin: no attribute lookup on the record per pair)
        self.size: int = counts[0]
        self.loops: int = counts[1]
        self.calli: int = counts[2]
        self._ops: bytes | None = ops
        # ``bigrams``: the histograms already counted, by op stream (a pure function of the
        # ops: records with equal streams share one, never changed once made)
        self._cache = bigrams if type(ops) is bytes else None
        self._hist: tuple[Any, float] | None = None

    def hist(self) -> tuple[Any, float]:
        """The op-bigram histogram (:func:`_bigrams`) and its Euclidean norm."""
        got = self._hist
        if got is None:
            cache, ops = self._cache, self._ops
            assert ops is not None  # (dropped once the histogram is made)
            if cache is None:
                got = _bigrams(ops)
            else:
                got = cache.get(ops)
                if got is None:
                    got = cache[ops] = _bigrams(ops)
            self._hist = got
            self._ops = self._cache = None
        return got

    @property
    def bigrams(self) -> dict[int, int]:
        """The histogram as a dict (either form: see :func:`_bigrams`)."""
        return hist_dict(self.hist()[0])

    @property
    def bnorm(self) -> float:
        return self.hist()[1]


# the largest bigram cosine a pair can get (1 and a margin far above float rounding)
_COS_MAX = 1.0 + 1e-9
# added to a ratio of set weights bounding a weighted Jaccard (FeatureCache.weight_bound):
# far above the few units in the last place either float is off its real value
_RATIO_SLACK = 1e-9


class _Store:
    """What every FeatureCache over the same two record lists computes alike: idf weights,
    per-record features and pair similarities (see :func:`shared_features`)."""

    __slots__ = (
        "recs",
        "n",
        "_idf",
        "default_idf",
        "feats",
        "bigrams",
        "sims",
        "jacs",
        "voc_s",
        "voc_c",
        "_w",
        "sets",
    )

    def __init__(
        self, old_recs: Sequence, new_recs: Sequence, part: StorePart | None = None
    ) -> None:
        self.recs = (old_recs, new_recs)  # held: the ids in the registry key stay theirs
        n = len(old_recs) + len(new_recs)
        # each record's distinct strings and constants as ids, made once (its
        # features take them: ``sets``, by the features' key ``index << 1 | side``), each
        # key counted once per record holding it (the counts of a ``Counter`` of the sets),
        # the old records first (``part``: their counts made ahead, the same state)
        got = part.take(old_recs) if part is not None else None
        if got is None:
            got = StorePart(old_recs).take(old_recs)
            assert got is not None
        voc_s, voc_c, sets, no, top = got
        no, top = _add_records(new_recs, 1, voc_s, voc_c, sets, no, top)
        self.sets = sets
        self.n = max(n, 2)
        logn = math.log(self.n)
        self.default_idf = logn
        # the exact weights straight from the document frequencies (the idf floats only on
        # demand: :attr:`idf_s`); the weight of a frequency once per distinct frequency (a
        # few hundred for 10^5 keys): the very float each key's own computation gives
        voc_s.weigh(self.n, 0.1, logn)
        voc_c.weigh(self.n, 0.05, logn)
        self.voc_s = voc_s
        self.voc_c = voc_c
        self._w: tuple[_Weights, _Weights] | None = None
        self._idf: tuple[dict, dict] | None = None
        # the features made so far by ``index << 1 | side`` (0 old, 1 new), a dense list
        # (None: not made yet; grown for a record past the store's indices)
        self.feats: list[_Feat | None] = [None] * (top + 1)
        self.bigrams: dict[bytes, tuple[Any, float]] = {}
        # each pair's content sum by one int key, ``old index << 32 | new index``
        self.sims: dict[int, tuple[float, float]] = {}
        # a bounded pair's two weighted Jaccards (constants, strings), same key, until its
        # content sum is made (then dropped): what the bound and the sum both read
        self.jacs: dict[int, tuple[float, float]] = {}

    @property
    def df_s(self) -> dict:
        """Each string's document frequency (made on demand: only tests read it)."""
        return self.voc_s.stored_df()

    @property
    def df_c(self) -> dict:
        """Each constant's document frequency (made on demand)."""
        return self.voc_c.stored_df()

    @property
    def w_s(self) -> _Weights:
        """The strings' exact weights by key (``_Weights``; made on demand: the features
        read them by id, ``voc_s``)."""
        return self._weights()[0]

    @property
    def w_c(self) -> _Weights:
        """The constants' exact weights by key (made on demand)."""
        return self._weights()[1]

    def _weights(self) -> tuple[_Weights, _Weights]:
        got = self._w
        if got is None:
            logn = self.default_idf
            got = self._w = (
                _weights_by_df(self.df_s, self.n, 0.1, logn),
                _weights_by_df(self.df_c, self.n, 0.05, logn),
            )
        return got

    def _idfs(self) -> tuple[dict, dict]:
        got = self._idf
        if got is None:
            n = self.n
            got = self._idf = (
                {k: math.log(n / v) + 0.1 for k, v in self.df_s.items()},
                {k: math.log(n / v) + 0.05 for k, v in self.df_c.items()},
            )
        return got

    @property
    def idf_s(self) -> dict:
        """Each string's idf weight, ``log(n / df) + 0.1`` (made on first use)."""
        return self._idfs()[0]

    @property
    def idf_c(self) -> dict:
        """Each constant's idf weight, ``log(n / df) + 0.05`` (made on first use)."""
        return self._idfs()[1]


def _add_records(
    recs: Sequence,
    side: int,
    voc_s: _Vocab,
    voc_c: _Vocab,
    sets: dict[int, tuple[vec[i64], vec[i64]]],
    no: i64,
    top: int,
) -> tuple[i64, int]:
    """One side's records added to a store's vocabularies (``no``: the records counted so
    far; ``top``: the largest features' key so far): the new ``no`` and ``top``."""
    for r in recs:
        i: int = r.index
        no += 1
        key = (i << 1) | side
        sets[key] = (voc_s.add(r.strings, no), voc_c.add(r.consts, no))
        if key > top:
            top = key
    return no, top


class StorePart:
    """A store's counts of its old records, made before the new records are known (a later
    release's ingest makes them while the new module is decoded: ``driver.prepare_old``).
    A store over these very old records (same objects, same order) continues from them, once:
    the same ids, counts and weights as a store made in one go (the old records come first
    there too)."""

    __slots__ = ("recs", "state")

    def __init__(self, old_recs: Sequence) -> None:
        self.recs = old_recs
        voc_s, voc_c = _Vocab(), _Vocab()
        sets: dict[int, tuple[vec[i64], vec[i64]]] = {}
        no, top = _add_records(old_recs, 0, voc_s, voc_c, sets, 0, -1)
        # (its vocabularies, record ids by features' key, records counted, largest key)
        self.state: tuple[_Vocab, _Vocab, dict[int, tuple[vec[i64], vec[i64]]], i64, int] | None
        self.state = (voc_s, voc_c, sets, no, top)

    def take(
        self, old_recs: Sequence
    ) -> tuple[_Vocab, _Vocab, dict[int, tuple[vec[i64], vec[i64]]], i64, int] | None:
        """The counts for a store over ``old_recs`` (None: other records, or taken)."""
        got = self.state
        mine = self.recs
        if got is None or len(mine) != len(old_recs):
            return None
        for a, b in zip(mine, old_recs, strict=True):
            if a is not b:
                return None
        self.state = None
        return got


def _weights_by_df(df: dict, n: int, add: float, default: float) -> _Weights:
    """``_Weights({k: log(n / v) + add for k, v in df.items()}, default)`` without the idf
    dict: the same distinct floats (one per distinct frequency), the same exact ints, each
    key's by its frequency."""
    ws = {v: math.log(n / v) + add for v in set(df.values())}
    wt = _Weights(ws, default)  # (scale and default from the same distinct floats)
    # two levels (see ``_Weights``): a key's class is its frequency, ``by`` indexed by it
    by = [0] * (max(ws) + 1 if ws else 1)
    cls, exact = wt.w, wt.by
    for v, c in cls.items():
        by[v] = exact[c]
    wt.by = by
    wt.w = dict(df)  # (a plain dict: the twin's ``get`` on it is the C one)
    return wt


# open shared_features scopes: key -> [store, how many scopes hold it]
_SHARED: dict[tuple, list] = {}
_SHARED_LOCK = threading.Lock()


def _key(old_recs: Sequence, new_recs: Sequence) -> tuple:
    return (tuple(map(id, old_recs)), tuple(map(id, new_recs)))


@contextmanager
def shared_features(old_recs: Sequence, new_recs: Sequence) -> Iterator[None]:
    """While open, every :class:`FeatureCache` made over these very record objects (same
    order) shares one store of features and pair similarities; scopes nest. The records
    must not change meanwhile (they do not: records are built once per pairing)."""
    key = _key(old_recs, new_recs)
    with _SHARED_LOCK:
        slot = _SHARED.get(key)
        if slot is None:
            slot = _SHARED[key] = [None, 0]
        slot[1] += 1
    try:
        yield
    finally:
        with _SHARED_LOCK:
            slot[1] -= 1
            if slot[1] <= 0:
                _SHARED.pop(key, None)


# open feature_pool scopes: [how many are open, [(id key, content key, store), ...]]
_POOL: list = [0, []]


@contextmanager
def feature_pool() -> Iterator[None]:
    """While open, a :class:`FeatureCache` over records equal in content to those of a
    store made meanwhile shares that store (see the module docstring); scopes nest, and the
    stores are dropped when the outermost closes."""
    with _SHARED_LOCK:
        _POOL[0] += 1
    try:
        yield
    finally:
        with _SHARED_LOCK:
            _POOL[0] -= 1
            if _POOL[0] <= 0:
                _POOL[1] = []


def _content_key(old_recs: Sequence, new_recs: Sequence) -> tuple:
    """Every input of a store's values, per side by index: features are keyed by index
    and made of the ops, strings and constants; the pair similarity reads the size, loops
    and call_indirect counts; the idf weights read the strings and constants of all."""

    def side(recs: Sequence) -> list:
        return sorted(
            (
                (r.index, r.ops, r.strings, r.consts, r.instr_count, r.loops, r.call_indirect)
                for r in recs
            ),
            key=itemgetter(0),
        )

    return (side(old_recs), side(new_recs))


def _pooled(
    key: tuple, old_recs: Sequence, new_recs: Sequence, part: StorePart | None = None
) -> _Store:
    """The pool's store for these records (by identity, else by content), else a new one
    added to the pool (called under the lock with a pool open)."""
    entries = _POOL[1]
    for k, _c, store in entries:
        if k == key:
            return store
    content = _content_key(old_recs, new_recs)
    for _k, c, store in entries:
        if c == content:
            entries.append((key, c, store))
            return store
    store = _Store(old_recs, new_recs, part)
    entries.append((key, content, store))
    return store


def _store_for(old_recs: Sequence, new_recs: Sequence, part: StorePart | None = None) -> _Store:
    if _SHARED or _POOL[0]:
        key = _key(old_recs, new_recs)
        with _SHARED_LOCK:
            slot = _SHARED.get(key)
            if slot is not None and slot[0] is not None:
                return slot[0]
            if _POOL[0]:
                store = _pooled(key, old_recs, new_recs, part)
            else:
                store = _Store(old_recs, new_recs, part)
            if slot is not None:
                slot[0] = store
            return store
    return _Store(old_recs, new_recs, part)


class FeatureCache:
    """Lazily computed features of the records of one match run (both sides).

    ``idf`` weights for constants and strings come from their document frequency over
    both modules, so a constant that appears everywhere (0, 1, 8, ...) says nothing and
    a rare string says a lot.
    """

    def __init__(
        self, old_recs: Sequence, new_recs: Sequence, part: StorePart | None = None
    ) -> None:
        # (``part``: the old records' counts made ahead, for a store made here)
        store = _store_for(old_recs, new_recs, part)
        self._old = old_recs
        self._new = new_recs
        self._cache = store.feats
        self._bigrams = store.bigrams
        self._sims = store.sims
        self._jacs = store.jacs
        self._sets = store.sets
        self._store = store
        self.n = store.n
        self.default_idf = store.default_idf
        self._voc_s = store.voc_s
        self._voc_c = store.voc_c
        self._inv_s = store.voc_s.inv()
        self._inv_c = store.voc_c.inv()

    @property
    def df_s(self) -> dict:
        return self._store.df_s

    @property
    def df_c(self) -> dict:
        return self._store.df_c

    @property
    def idf_s(self) -> dict:
        return self._store.idf_s

    @property
    def idf_c(self) -> dict:
        return self._store.idf_c

    def feat(self, side: int, rec, index: int = -1) -> _Feat:
        """The features of ``rec`` on one side (0 old, 1 new); ``index``: its index when
        the caller has read it (no attribute read of the record again)."""
        i: int = index if index >= 0 else rec.index  # (native ints in the twin)
        key = (i << 1) | side
        cache = self._cache
        f = cache[key] if 0 <= key < len(cache) else None
        if f is None:
            counts = (rec.instr_count, rec.loops, rec.call_indirect)
            got = self._sets.get(key)
            if got is None:  # (not one of the store's records: its ids made here)
                got = (self._voc_s.outside(rec.strings), self._voc_c.outside(rec.consts))
            sids, cids = _sorted_ids(got[0]), _sorted_ids(got[1])  # (what the merges read)
            f = _Feat(rec.ops, sids, cids, self._bigrams, counts)
            f.tstrings = _ids_total(f.sids, self._voc_s.wid)
            f.tconsts = _ids_total(f.cids, self._voc_c.wid)
            if key >= len(cache):
                cache.extend([None] * (key + 1 - len(cache)))
            if key >= 0:
                cache[key] = f
        return f

    def content_similarity(self, o, n, oi: int = -1, ni: int = -1) -> tuple[float, float]:
        """(weighted sum, total weight) of the features that do not depend on the match
        state: op histograms, op bigrams, size, constants, strings, loops, call_indirect.
        (``oi``, ``ni``: the records' indices when the caller knows them.)"""
        if oi < 0 or ni < 0:
            oi = o.index
            ni = n.index
        key = (oi << 32) | ni
        v = self._sims.get(key)
        if v is None:
            v = self._sims[key] = self._content_similarity(o, n)
        return v

    def _content_similarity(self, o, n) -> tuple[float, float]:
        oi: int = o.index
        ni: int = n.index
        fo = self.feat(0, o, oi)
        fn = self.feat(1, n, ni)
        ha, na = fo.hist()
        hb, nb = fn.hist()
        cos = _cosine_words(ha, na, hb, nb) if _TYPED else _cosine(ha, na, hb, nb)
        j = self._jacs.pop((oi << 32) | ni, None)
        if j is None:
            j = self._jaccards(fo, fn)
        return self._sum(fo, fn, cos, j)

    def content_bound(self, o, n) -> float:
        """An upper bound of the pair's ``total / wsum`` (:meth:`content_similarity`)
        without the op histograms: the same sum with the bigram cosine at its largest, 1
        (a float cosine exceeds 1 by a few units in the last place at most: ``_COS_MAX``).
        Every float step of the sum is monotone, so the bound is never below the value.
        The value itself when already computed."""
        total, wsum = self.content_bound_sum(o, n)
        return total / wsum if wsum else 0.0

    def weight_bound(self, o, n) -> float:
        """A cheaper upper bound than :meth:`content_bound` (no set intersections): each
        weighted Jaccard at its largest, the smaller total weight of the two sets over the
        larger (the intersection weighs at most the smaller, the union at least the
        larger), plus a margin far above the float rounding of both forms. Every later
        float step is the same and monotone, so the bound is never below
        :meth:`content_bound`."""
        fo, fn = self.feat(0, o), self.feat(1, n)
        # (the ratios of two exact weights, ints past 2**53, as two rounded doubles divided:
        # a few units in the last place off the exact ratio, far inside _RATIO_SLACK; no
        # long division of two ints)
        total = 0.35 * _COS_MAX
        wsum = 0.35
        total += 0.15 * size_ratio(fo.size, fn.size)
        wsum += 0.15
        a, b = fo.tconsts, fn.tconsts
        if a or b:
            if a and b:
                x, y = float(a), float(b)
                total += 0.15 * ((x / y if a < b else y / x) + _RATIO_SLACK)
            wsum += 0.15
        a, b = fo.tstrings, fn.tstrings
        if a or b:
            if a and b:
                x, y = float(a), float(b)
                total += 0.25 * ((x / y if a < b else y / x) + _RATIO_SLACK)
            wsum += 0.25
        if fo.loops or fn.loops:
            total += 0.05 * size_ratio(fo.loops, fn.loops)
            wsum += 0.05
        if fo.calli or fn.calli:
            total += 0.05 * size_ratio(fo.calli, fn.calli)
            wsum += 0.05
        return total / wsum

    def content_bound_sum(self, o, n, oi: int = -1, ni: int = -1) -> tuple[float, float]:
        """(weighted sum, total weight) of :meth:`content_bound`: the weight is the pair's
        own, the sum never below the pair's (the pair's own when already computed)."""
        if oi < 0 or ni < 0:
            oi = o.index
            ni = n.index
        key = (oi << 32) | ni
        v = self._sims.get(key)
        if v is None:
            fo, fn = self.feat(0, o, oi), self.feat(1, n, ni)
            j = self._jacs.get(key)
            if j is None:
                j = self._jacs[key] = self._jaccards(fo, fn)
            v = self._sum(fo, fn, _COS_MAX, j)
        return v

    def _jaccards(self, fo: _Feat, fn: _Feat) -> tuple[float, float]:
        """The pair's weighted Jaccards of constants and strings (-1: both sets empty)."""
        return (
            _jaccard_ids(fo.cids, fo.tconsts, fn.cids, fn.tconsts, self._voc_c.wid, self._inv_c),
            _jaccard_ids(fo.sids, fo.tstrings, fn.sids, fn.tstrings, self._voc_s.wid, self._inv_s),
        )

    def _sum(self, fo: _Feat, fn: _Feat, b: float, j: tuple[float, float]) -> tuple[float, float]:
        """(weighted sum, total weight) of the pair's features, ``b`` its bigram cosine,
        ``j`` its :meth:`_jaccards`."""
        total = 0.0
        wsum = 0.0
        # instruction mix
        total += 0.35 * b
        wsum += 0.35
        # size
        sr = size_ratio(fo.size, fn.size)
        total += 0.15 * sr
        wsum += 0.15
        # constants (idf-weighted)
        c, s = j
        if c >= 0:
            total += 0.15 * c
            wsum += 0.15
        if s >= 0:
            total += 0.25 * s
            wsum += 0.25
        if fo.loops or fn.loops:
            total += 0.05 * size_ratio(fo.loops, fn.loops)
            wsum += 0.05
        if fo.calli or fn.calli:
            total += 0.05 * size_ratio(fo.calli, fn.calli)
            wsum += 0.05
        return total, wsum
