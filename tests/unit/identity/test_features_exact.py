"""The pair similarity's weighted Jaccard by exact integer weights gives the very floats of
the reference form (two ``math.fsum`` over the intersection and the symmetric difference),
and the bigram cosine's dot product is the plain one."""

from __future__ import annotations

import math
import random
from collections import Counter

from kbtool.identity import features as F


def test_exact_weighted_jaccard_is_the_fsum_one() -> None:
    rnd = random.Random(5)
    n = 5000
    idf = {k: math.log(n / rnd.randint(1, n)) + 0.05 for k in range(3000)}
    default = math.log(n)
    wt = F._Weights(idf, default)
    for t in range(20000):
        # keys past 3000 are not in idf: the default weight
        a = frozenset(rnd.sample(range(3100), rnd.randint(0, 40)))
        if t % 3:
            b = frozenset(rnd.sample(range(3100), rnd.randint(0, 40)))
        else:  # a large overlap
            b = frozenset([*list(a)[: rnd.randint(0, len(a))], *rnd.sample(range(3100), 3)])
        want = F._weighted_jaccard(a, b, idf, default)
        got = F._weighted_jaccard_exact(a, wt.total(a), b, wt.total(b), wt)
        assert got == want, (a, b)


def test_cosine_is_the_plain_dot_product() -> None:
    rnd = random.Random(9)
    for _ in range(2000):
        a = Counter({rnd.randint(0, 60): rnd.randint(1, 9) for _ in range(rnd.randint(0, 30))})
        b = Counter({rnd.randint(0, 60): rnd.randint(1, 9) for _ in range(rnd.randint(0, 30))})
        na = math.sqrt(sum(v * v for v in a.values())) or 1.0
        nb = math.sqrt(sum(v * v for v in b.values())) or 1.0
        if not a or not b:
            want = 1.0 if not a and not b else 0.0
        else:
            want = sum(v * b[k] for k, v in a.items() if k in b) / (na * nb)
        assert F._cosine(a, na, b, nb) == want


def test_store_weights_are_each_keys_own(demo_kb_master) -> None:
    """The idf weights computed once per distinct document frequency are the floats each
    key's own ``log(n / df) + c`` gives, and the exact integer weights follow them."""
    from kbtool.identity.records import records_from_rows
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro

    conn = open_ro(demo_kb_master)
    try:
        old = records_from_rows(queries.matching_rows(conn, 1))
        new = records_from_rows(queries.matching_rows(conn, 2))
    finally:
        conn.close()
    st = F._Store(old, new)
    assert st.idf_s and st.idf_c
    assert st.idf_s == {k: math.log(st.n / v) + 0.1 for k, v in st.df_s.items()}
    assert st.idf_c == {k: math.log(st.n / v) + 0.05 for k, v in st.df_c.items()}
    for w, idf in ((st.w_s, st.idf_s), (st.w_c, st.idf_c)):
        den = max(x.as_integer_ratio()[1] for x in (st.default_idf, *idf.values()))
        assert w.scale == den and w.default == F._exact(st.default_idf, den)
        assert set(w.w) == set(idf)
        assert {k: w.weight(k) for k in w.w} == {k: F._exact(v, den) for k, v in idf.items()}


def test_equal_op_streams_share_one_histogram() -> None:
    """Features made with the store's histogram cache equal those made alone; records with
    the same op stream (another bytes object) share the histogram."""
    rnd = random.Random(3)
    cache: dict = {}
    streams = [bytes(rnd.randrange(256) for _ in range(2 * rnd.randint(0, 300))) for _ in range(60)]
    streams += [bytes(bytearray(s)) for s in streams[:20]]  # equal content, other objects
    streams.append(bytes(2 * (2 * F._MAX_OPS + 40)))  # sampled head and tail
    made = [F._Feat(s, F._NO_IDS, F._NO_IDS, cache) for s in streams]
    for s, f in zip(streams, made, strict=True):
        alone = F._Feat(s)
        assert f.bigrams == alone.bigrams and f.bnorm == alone.bnorm
    assert all(made[60 + i].hist()[0] is made[i].hist()[0] for i in range(20))


def test_typed_set_weights_are_the_set_sums() -> None:
    """The twin's loops (:mod:`weights`' ``_total_typed``, ``_inter_typed``) give the sums of
    the C-level forms, past 2**62 too (string keys, defaults), and ``float(x) * inv`` is
    ``x / scale`` for the exact weights' ints."""
    from kbtool.identity.matcher import weights as W

    rnd = random.Random(11)
    n = 40000
    idf = {f"s{k}": math.log(n / rnd.randint(1, n)) + 0.1 for k in range(2000)}
    wt = W._Weights(idf, math.log(n))
    keys = [f"s{k}" for k in range(2100)]  # the last 100 take the default weight
    for _ in range(3000):
        a = frozenset(rnd.sample(keys, rnd.randint(0, 300)))
        b = frozenset(rnd.sample(keys, rnd.randint(0, 300)))
        want_a = sum(wt.weight(x) for x in a)
        assert W._total_typed(a, wt.w, wt.by, wt.default) == want_a == wt.total(a)
        want_i = sum(wt.weight(x) for x in a & b)
        assert W._inter_typed(a, b, wt.w, wt.by, wt.default) == want_i
        assert W._inter_typed(b, a, wt.w, wt.by, wt.default) == want_i
        assert float(want_a) * wt.inv == want_a / wt.scale
    big = 2**62 + 2**52 + 1
    assert float(big) * wt.inv == big / wt.scale


def test_features_take_the_stores_ids_and_its_weights_from_df() -> None:
    """A record's features hold the store's sorted ids of its distinct strings and constants
    (empty sets alike), a record outside the store gets ids too (a key no store record
    holds: an id of its own, the default weight), the totals and Jaccards by ids are those of
    the key sets (exact weights and the fsum reference), and the exact weights made straight
    from the document frequencies are those of the idf dict."""
    from kbtool.identity.records import FuncRecord

    rnd = random.Random(11)

    def rec(i: int, extra: tuple = ()) -> FuncRecord:
        strings = tuple(rnd.choice("abcdefgh") for _ in range(rnd.randint(0, 6))) + extra
        consts = tuple(rnd.randint(0, 9) for _ in range(rnd.randint(0, 6)))
        return FuncRecord(index=i, strings=strings, consts=consts, ops=b"\x01\x00\x02\x00")

    old, new = [rec(i) for i in range(40)], [rec(i) for i in range(35)]
    fc = F.FeatureCache(old, new)
    st = fc._store
    assert st.df_s == Counter(x for rs in (old, new) for r in rs for x in set(r.strings))
    assert st.df_c == Counter(x for rs in (old, new) for r in rs for x in set(r.consts))

    def keys(voc: F._Vocab, ids: object) -> frozenset:
        back = {k: x for x, k in voc.ids.items()}
        got = list(ids)  # type: ignore[call-overload]
        assert got == sorted(set(got))  # (distinct, sorted)
        return frozenset(back[k] for k in got)

    outsiders = [rec(99, ("zz", "a")), rec(98, ("zz", "yy"))]
    feats = []
    for side, recs in ((0, old), (1, new + outsiders)):
        for r in recs:
            f = fc.feat(side, r)
            assert keys(st.voc_s, f.sids) == frozenset(r.strings)
            assert keys(st.voc_c, f.cids) == frozenset(r.consts)
            assert f.tstrings == st.w_s.total(frozenset(r.strings))
            assert f.tconsts == st.w_c.total(frozenset(r.consts))
            feats.append((side, r, f))
    assert st.df_s == Counter(x for rs in (old, new) for r in rs for x in set(r.strings))
    olds = [(r, f) for side, r, f in feats if side == 0]
    news = [(r, f) for side, r, f in feats if side == 1]
    for ro, fo in olds:
        for rn, fn in news:
            want = []
            for w, a, b in (
                (st.w_c, frozenset(ro.consts), frozenset(rn.consts)),
                (st.w_s, frozenset(ro.strings), frozenset(rn.strings)),
            ):
                exact = F._weighted_jaccard_exact(a, w.total(a), b, w.total(b), w)
                want.append(exact)
            assert fc._jaccards(fo, fn) == tuple(want)
    # the fsum reference (the outsiders' own keys weigh the default)
    ro, fo = olds[3]
    for rn, fn in news[-4:]:
        c, s = fc._jaccards(fo, fn)
        a, b = frozenset(ro.strings), frozenset(rn.strings)
        assert s == F._weighted_jaccard(a, b, st.idf_s, st.default_idf)
    for w, idf in ((st.w_s, st.idf_s), (st.w_c, st.idf_c)):
        ref = F._Weights(idf, st.default_idf)
        assert (w.scale, w.default, set(w.w)) == (ref.scale, ref.default, set(ref.w))
        assert all(w.weight(k) == ref.weight(k) for k in ref.w)
        assert w.w == st.df_c if w is st.w_c else w.w == st.df_s  # (a key's class: its df)


def test_id_sums_are_the_set_sums() -> None:
    """:mod:`weights`' sums over sorted id arrays (``_ids_total``, ``_ids_inter``: native
    merges in the twin, exact weights split in two parts) are the plain sums, past 2**62."""
    from kbtool.identity.matcher import weights as W

    rnd = random.Random(17)
    wid_list = [rnd.randrange(1, 1 << 62) for _ in range(500)]
    wid = W.vec[W.i64](wid_list)
    for _ in range(2000):
        a = sorted(rnd.sample(range(500), rnd.randint(0, 60)))
        b = sorted(rnd.sample(range(500), rnd.randint(0, 60)))
        va, vb = W.vec[W.i64](a), W.vec[W.i64](b)
        assert W._ids_total(va, wid) == sum(wid_list[k] for k in a)
        shared = sum(wid_list[k] for k in set(a) & set(b))
        assert W._ids_inter(va, vb, wid) == shared == W._ids_inter(vb, va, wid)
    for n in (0, 1, 2, 5, 12, 13, 14, 47, 120, 1000):
        ids = rnd.sample(range(10_000), n)
        assert list(W._sorted_ids(W.vec[W.i64](ids))) == sorted(ids)
