"""The wrapper splits' votes are kept from one pass to the next: a pair whose votes changed
nothing is voted again only once the match of a function its votes read changed (itself,
its callers on either side). Skipping the others gives the same pairing and charges the
same work as voting every pair in every pass."""

from __future__ import annotations

import random

import pytest

from kbtool.identity.records import FuncRecord, replace
from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import random_releases

_Matcher = pure_part()._Matcher
FamilyStage = pure_part("family").FamilyStage


@pytest.fixture(autouse=True)
def _pure_matcher():
    with pure_matcher():
        yield


def _splits(recs: list[FuncRecord], seed: int) -> list[FuncRecord]:
    """``recs`` with a few wrapper splits: a thin new function of a callee's signature that
    calls it, some of the callee's callers calling the wrapper instead."""
    rnd = random.Random(seed)
    out = list(recs)
    callers: dict[int, list[int]] = {}
    for r in out:
        for c in r.calls:
            callers.setdefault(c, []).append(r.index)
    hubs = [c for c, cs in callers.items() if len(cs) >= 2 and not out[c].imported]
    for f in rnd.sample(hubs, min(len(hubs), 4)):
        w = len(out)
        ops = bytes(rnd.randrange(30) for _ in range(8))
        out.append(
            FuncRecord(
                index=w,
                type_sig=out[f].type_sig,
                body_hash=f"w{w}",
                shape_hash=f"w{w}",
                calls=(f,),
                ops=ops,
                instr_count=rnd.randint(3, 8),
            )
        )
        for c in rnd.sample(callers[f], max(1, len(callers[f]) // 2)):
            calls = tuple(w if x == f else x for x in out[c].calls)
            out[c] = replace(out[c], calls=calls)
    return out


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
        new = _splits(new, seed)
        for a, b in ((old, new), (new, old)):
            kept = _run(a, b, monkeypatch, keep=True)
            every = _run(a, b, monkeypatch, keep=False)
            assert kept[:3] == every[:3], seed
            assert kept[3] <= every[3]
            skipped += every[3] - kept[3]
    assert skipped, "no vote was skipped: nothing was compared"


def test_a_skipped_pair_reads_the_match_state_it_was_voted_in(monkeypatch) -> None:
    """Whenever a pair is skipped, the matches of the pair and of all its callers on both
    sides are those it was last voted with (the stamps miss no change it reads)."""
    real_pair = FamilyStage._wrapper_pair
    real_vote = FamilyStage._wrapper_vote
    votes = [0]
    skips = [0]
    snaps: dict[int, tuple] = {}

    def counted(self, m, forward):
        votes[0] += 1
        return real_vote(self, m, forward)

    def state(self, m) -> tuple:
        o, n = m.old_index, m.new_index
        return (
            self.o2n.get(o),
            self.n2o.get(n),
            tuple(self.o2n.get(c) for c in self.OLD.callers[o]),
            tuple(self.n2o.get(c) for c in self.NEW.callers[n]),
        )

    def checking(self, n):
        m = self.result.get(n)
        entry = self._wv_seen.get(n)
        now = state(self, m) if m is not None else None
        cast = votes[0]
        got = real_pair(self, n)
        kept = self._wv_seen.get(n)
        if votes[0] == cast and entry is not None and kept is entry and entry[0] is m:
            skips[0] += 1
            assert snaps[n] == now, n
        elif kept is not None and kept is not entry:
            snaps[n] = now  # (a vote that changed nothing: the state it read)
        return got

    monkeypatch.setattr(FamilyStage, "_wrapper_vote", counted)
    monkeypatch.setattr(FamilyStage, "_wrapper_pair", checking)
    for seed in range(40):
        old, new = random_releases(seed)
        new = _splits(new, seed)
        for a, b in ((old, new), (new, old)):
            snaps.clear()
            _Matcher(a, b).run_staged(True)
    assert skips[0], "no pair was skipped: nothing was checked"


def test_a_pair_is_voted_again_once_a_callers_match_changed(monkeypatch) -> None:
    """After a run every voted pair is kept; unmatching a caller of one brings back the
    votes of the pairs it calls (and of its own pair's neighbours), and of no other."""
    real_vote = FamilyStage._wrapper_vote
    voted: list[int] = []

    def recorded(self, m, forward):
        voted.append(m.new_index)
        return real_vote(self, m, forward)

    checked = 0
    for seed in range(10):
        old, new = random_releases(seed)
        m = _Matcher(old, new)
        m.run_staged(True)
        kept = {n: e for n, e in m._wv_seen.items() if m.result.get(n) is e[0]}
        x = next(
            (c for n, e in kept.items() for c in m.OLD.callers[e[0].old_index] if c in m.o2n),
            None,
        )
        if x is None:
            continue
        y = m.o2n[x]
        m.unaccept(x, y)
        stamped = {n for n, e in kept.items() if e[0].old_index in m.OLD.callees[x]}
        stamped |= {n for n in kept if n in m.NEW.callees[y]}
        voted.clear()
        with monkeypatch.context() as mp:
            mp.setattr(FamilyStage, "_wrapper_vote", recorded)
            m.stage_wrapper_splits()
        assert stamped and stamped <= set(voted), seed
        assert set(voted) <= stamped, seed  # (the rest kept: not voted again)
        checked += 1
    assert checked


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
