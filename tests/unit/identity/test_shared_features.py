"""One store of features and pair similarities per pairing (issue 30): the matcher and every
review check ask for the same similarities; inside ``shared_features`` each is computed once,
with the very values a private cache gives."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest

from kbtool.identity import pairing
from kbtool.identity.records import records_from_rows
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.matcher import pure_matcher, pure_part

# the pure package's parts: these tests patch or subclass them
features = pure_part("features")
FeatureCache, feature_pool, shared_features = (
    features.FeatureCache,
    features.feature_pool,
    features.shared_features,
)
match_functions_staged = pure_part().match_functions_staged


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


@pytest.fixture(scope="module")
def rows(demo_kb_master) -> tuple[list, list]:
    conn = open_ro(demo_kb_master)
    try:
        return queries.matching_rows(conn, 1), queries.matching_rows(conn, 2)
    finally:
        conn.close()


def test_caches_share_one_store_only_inside_the_scope(rows) -> None:
    old, new = records_from_rows(rows[0]), records_from_rows(rows[1])
    private = FeatureCache(old, new)
    with shared_features(old, new):
        a, b = FeatureCache(old, new), FeatureCache(old, new)
        with shared_features(old, new):  # scopes nest
            c = FeatureCache(old, new)
        assert a._sims is b._sims is c._sims and a._cache is b._cache
        assert FeatureCache(old, new)._sims is a._sims  # the inner exit kept it
        other = FeatureCache(list(old), new[:-1])  # other records: its own store
        assert other._sims is not a._sims
        for o, n in zip(old[-40:], new[-40:], strict=True):
            assert a.content_similarity(o, n) == private.content_similarity(o, n)
        assert a.idf_s == private.idf_s and a.idf_c == private.idf_c
    assert FeatureCache(old, new)._sims is not a._sims  # closed: nothing kept
    assert not features._SHARED


def test_a_pairing_scores_each_pair_once_with_the_same_result(rows, monkeypatch) -> None:
    calls: Counter = Counter()
    real = FeatureCache._content_similarity

    def counted(self, o, n):
        calls[(o.index, n.index)] += 1
        return real(self, o, n)

    monkeypatch.setattr(FeatureCache, "_content_similarity", counted)
    shared = pairing.pair_rows(1, 2, *rows)
    assert calls and max(calls.values()) == 1
    calls.clear()
    monkeypatch.setattr(pairing, "shared_features", lambda *_: contextlib.nullcontext())
    alone = pairing.pair_rows(1, 2, *rows)
    assert max(calls.values()) > 1  # without the store the stages score pairs again
    assert shared.by_new == alone.by_new


def test_a_pool_shares_stores_by_content(rows) -> None:
    """Inside ``feature_pool``, records read again (other objects, equal content) get the
    store already made; other content gets its own; the pool keeps nothing once closed."""
    old, new = records_from_rows(rows[0]), records_from_rows(rows[1])
    again = records_from_rows(rows[0]), records_from_rows(rows[1])
    assert again[0][5] is not old[5]
    private = FeatureCache(old, new)
    with feature_pool():
        a = FeatureCache(old, new)
        b = FeatureCache(*again)
        assert b._sims is a._sims and b._cache is a._cache
        fewer = FeatureCache(old, new[:-1])
        assert fewer._sims is not a._sims
        changed = records_from_rows(rows[1])
        changed[7].consts = (*changed[7].consts, 123456789)
        assert FeatureCache(old, changed)._sims is not a._sims
        for o, n in zip(old[-40:], new[-40:], strict=True):
            assert b.content_similarity(o, n) == private.content_similarity(o, n)
    assert FeatureCache(*again)._sims is not a._sims
    assert features._POOL == [0, []]


def test_ingest_pairing_reuses_the_matchers_scores(rows, monkeypatch) -> None:
    """As a later release's ingest runs them: the matcher on one set of records, the pairing
    on records read back; inside a pool no pair is scored twice, with the same pairing."""
    calls: Counter = Counter()
    real = FeatureCache._content_similarity

    def counted(self, o, n):
        calls[(o.index, n.index)] += 1
        return real(self, o, n)

    monkeypatch.setattr(FeatureCache, "_content_similarity", counted)
    with feature_pool():
        old, new = records_from_rows(rows[0]), records_from_rows(rows[1])
        _exact, full = match_functions_staged(old, new)
        pooled = pairing.pair_rows(1, 2, *rows, matches=full)
    assert calls and max(calls.values()) == 1
    calls.clear()
    alone = pairing.pair_rows(1, 2, *rows, matches=full)
    assert calls  # without the pool the pairing scores pairs again
    assert pooled.by_new == alone.by_new
