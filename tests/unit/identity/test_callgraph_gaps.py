"""The call-graph stage's gap rule finds the gaps holding one unmatched function of each
side by bisecting their positions; it pairs exactly what the walk over every gap (the
reference below, the rule as first written) pairs, in the same order, with the same work
counted: whole matcher runs on random modules and on the demo releases compare."""

from __future__ import annotations

import pytest

from kbtool.identity.records import records_from_rows
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import random_releases

# the pure package's parts: these tests patch or subclass them
_Matcher = pure_part()._Matcher
MatcherBase = pure_part("base").MatcherBase


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


class _Reference(_Matcher):
    def _resolve_gaps(self, lo, ln) -> None:
        o2n, n2o = self.o2n, self.n2o
        pos_n = {y: j for j, y in enumerate(ln)}
        anchors = []
        last_j = -1
        for i, x in enumerate(lo):
            y = o2n.get(x)
            if y is None:
                continue
            j = pos_n.get(y)
            if j is None or j <= last_j:
                continue
            anchors.append((i, j))
            last_j = j
        if not anchors:
            return
        bounds = [(-1, -1), *anchors, (len(lo), len(ln))]
        OLD, NEW = self.OLD.recs, self.NEW.recs
        for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
            xs = [x for x in lo[i0 + 1 : i1] if x not in o2n and not OLD[x].imported]
            ys = [y for y in ln[j0 + 1 : j1] if y not in n2o and not NEW[y].imported]
            if len(xs) == 1 and len(ys) == 1:
                x, y = xs[0], ys[0]
                if OLD[x].type_sig != NEW[y].type_sig:
                    continue
                s = self.similarity(x, y)
                if s >= self.CG_GAP:
                    self.accept(x, y, self._cg_score(s), "callgraph")


def _run(cls, old, new):
    m = cls(old, new)
    out = m.run_staged(True)
    return out, m.finish_stats()


@pytest.mark.parametrize("seed", range(40))
def test_random_releases_pair_alike(seed: int) -> None:
    old, new = random_releases(seed)
    (ra, rb), sa = _run(_Reference, old, new)
    (ga, gb), sb = _run(_Matcher, old, new)
    assert (ga, gb) == (ra, rb)
    assert sb.work == sa.work


def test_demo_releases_pair_alike(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        old = records_from_rows(queries.matching_rows(conn, 1))
        new = records_from_rows(queries.matching_rows(conn, 2))
    finally:
        conn.close()
    assert issubclass(_Matcher, MatcherBase)
    for a, b in ((old, new), (new, old)):
        (ra, rb), sa = _run(_Reference, a, b)
        (ga, gb), sb = _run(_Matcher, a, b)
        assert (ga, gb) == (ra, rb) and sb.work == sa.work
