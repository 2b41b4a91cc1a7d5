"""The wrapper splits' votes are kept from one pass to the next: a pair whose votes changed
nothing is voted again only once the match of a function its votes read changed (itself,
its callers on either side). Skipping the others gives the same pairing and charges the
same work as voting every pair in every pass."""

from __future__ import annotations

import pytest

from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import random_releases

_Matcher = pure_part()._Matcher
FamilyStage = pure_part("family").FamilyStage


@pytest.fixture(autouse=True)
def _pure_matcher():
    with pure_matcher():
        yield


def _run(old, new, monkeypatch, keep: bool) -> tuple:
    """(both results, the work per stage, the notes, votes cast) of one matcher run; with
    ``keep`` False every pair is voted in every pass (its kept votes forgotten)."""
    real = FamilyStage._wrapper_vote
    votes = [0]

    def counted(self, m, forward):
        votes[0] += 1
        return real(self, m, forward)

    real_pair = FamilyStage._wrapper_pair

    def forgetful(self, n):
        self._wv_seen.clear()
        return real_pair(self, n)

    with monkeypatch.context() as mp:
        mp.setattr(FamilyStage, "_wrapper_vote", counted)
        if not keep:
            mp.setattr(FamilyStage, "_wrapper_pair", forgetful)
        m = _Matcher(old, new)
        out = m.run_staged(True)
        st = m.finish_stats()
    return out, dict(st.work), st.notes, votes[0]


def test_kept_votes_give_the_same_pairing_and_work(monkeypatch) -> None:
    skipped = 0
    for seed in range(40):
        old, new = random_releases(seed)
        for a, b in ((old, new), (new, old)):
            kept = _run(a, b, monkeypatch, keep=True)
            every = _run(a, b, monkeypatch, keep=False)
            assert kept[:3] == every[:3], seed
            assert kept[3] <= every[3]
            skipped += every[3] - kept[3]
    assert skipped, "no vote was skipped: nothing was compared"


def test_a_changed_match_stamps_the_pair_and_its_callees() -> None:
    old, new = random_releases(3)
    m = _Matcher(old, new)
    m._wv_chg = ([0] * m.OLD.size, [0] * m.NEW.size)
    o = next(i for i in m.OLD.order if m.OLD.callees[i])
    n = next(i for i in m.NEW.order if m.NEW.callees[i])
    m.accept(o, n, 0.9, "callgraph")
    t = m._wv_clock
    assert t == 1
    assert m._wv_chg[0][o] == t and m._wv_chg[1][n] == t
    assert all(m._wv_chg[0][c] == t for c in m.OLD.callees[o])
    assert all(m._wv_chg[1][c] == t for c in m.NEW.callees[n])
    others = set(m.OLD.order) - {o, *m.OLD.callees[o]}
    assert all(m._wv_chg[0][x] == 0 for x in others)
    m.unaccept(o, n)
    assert m._wv_clock == 2 and m._wv_chg[0][o] == 2 and m._wv_chg[1][n] == 2
