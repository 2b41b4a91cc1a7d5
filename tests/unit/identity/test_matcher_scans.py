"""The matcher's faster scans give the answers of the scans as first written (issue 30:
a later release's ingest): the review checks' upper bound of a pair's content similarity
(read without the op histograms) is never below the similarity; the anchors of the
function order (the longest chain of matched pairs kept in order) and the review checks
with their size windows and the bound against the first forms, on whole matcher runs
(the final pairing and the identities the review checks leave, the work counted) over
random releases and the demo releases. The call graph's best-pair and unique-signature
steps score a pair from a bound (the content similarity with the bigram cosine at 1) where
that decides, never below the pair's score, and pair as when every similarity is computed.
The review checks' cheaper bound (set weights, no intersections) is never below the other;
the function tables' neighbourhood kept per matched state of the tables pairs as when
derived at every look, on releases the tables place. The anchors' run resumed from its
kept states after accepts and re-pairings gives the chain of a run from the start."""

from __future__ import annotations

import bisect
import math
import random
from array import array
from collections import defaultdict
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.identity.records import FuncRecord, records_from_rows, replace
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import body, edited, random_releases, rec, view, with_lookalikes

# the pure package's parts: these tests patch or subclass them
FeatureCache, size_ratio = pure_part("features").FeatureCache, pure_part("features").size_ratio
_Matcher = pure_part()._Matcher
R = pure_part("review")
MatcherBase = pure_part("base").MatcherBase
_plausible_size, _Side = pure_part("base")._plausible_size, pure_part("base")._Side
FamilyStage = pure_part("family").FamilyStage


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


def _records(draw_sizes, rnd) -> list[FuncRecord]:
    out = []
    for i, size in enumerate(draw_sizes):
        code = [rnd.randrange(12) for _ in range(size)]
        out.append(
            FuncRecord(
                index=i,
                type_sig="(i32) -> i32",
                ops=array("H", code).tobytes(),
                instr_count=size,
                strings=tuple(rnd.sample(["a", "b", "c", "d"], rnd.randint(0, 2))),
                consts=tuple(rnd.sample(range(8), rnd.randint(0, 3))),
                loops=rnd.randint(0, 2),
                call_indirect=rnd.randint(0, 1),
            )
        )
    return out


@settings(max_examples=200, deadline=None)
@given(
    old=st.lists(st.integers(0, 30), min_size=1, max_size=8),
    new=st.lists(st.integers(0, 30), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
)
def test_content_bound_is_never_below_the_similarity(old, new, seed) -> None:
    rnd = random.Random(seed)
    a, b = _records(old, rnd), _records(new, rnd)
    b += [replace(r, index=len(b) + k) for k, r in enumerate(a)]  # equal bodies: cosine 1
    feats = FeatureCache(a, b)
    for o in a:
        for n in b:
            bound = feats.content_bound(o, n)  # before and after the value is known
            assert feats.weight_bound(o, n) >= bound
            total, wsum = feats.content_similarity(o, n)
            value = total / wsum if wsum else 0.0
            assert bound >= value
            assert feats.content_bound(o, n) == value
            assert feats.weight_bound(o, n) >= value


class _Everything:
    """A set holding every key."""

    def __contains__(self, key) -> bool:
        return True


class _Reference(_Matcher):
    """The matcher with the anchors computed as first written."""

    def table_memo(self, key, make):
        """As first written: the function tables' neighbourhood derived at every look."""
        return make()

    def _compute_anchors(self) -> None:
        pairs = sorted((o, n) for n, o in self.n2o.items() if not self.NEW.recs[n].imported)
        tails: list[int] = []
        tail_pos: list[int] = []
        prev = [-1] * len(pairs)
        for k, (_o, n) in enumerate(pairs):
            j = bisect.bisect_left(tails, n)
            if j == len(tails):
                tails.append(n)
                tail_pos.append(k)
            else:
                tails[j] = n
                tail_pos[j] = k
            prev[k] = tail_pos[j - 1] if j else -1
        chain = []
        k = tail_pos[-1] if tail_pos else -1
        while k >= 0:
            chain.append(pairs[k])
            k = prev[k]
        chain.reverse()
        self.anchor_o = [o for o, _ in chain]
        self.anchor_n = [n for _, n in chain]
        self.span_o = (self.OLD.order[0] - 1, self.OLD.order[-1] + 1) if self.OLD.order else (0, 0)
        self.span_n = (self.NEW.order[0] - 1, self.NEW.order[-1] + 1) if self.NEW.order else (0, 0)

    def _family_keys(self):
        """As first written: no pair skipped before its rivals are looked up."""
        keys_o, keys_n, _mo, _mn = super()._family_keys()
        return keys_o, keys_n, _Everything(), _Everything()

    def candidates(self) -> list[int]:
        """As first written: the expected position read per pair, the scores per rank (the
        pairs as the stage reads them: ``new * OLD.size + old``, sorted)."""
        out = self._candidate_sets()
        return sorted(n * self.OLD.size + o for n, os_ in out.items() for o in os_)

    def _candidate_sets(self) -> dict[int, set[int]]:
        uo = [i for i in self.unmatched_old() if not self.OLD.recs[i].imported]
        un = [i for i in self.unmatched_new() if not self.NEW.recs[i].imported]
        out: dict[int, set[int]] = defaultdict(set)
        if not uo or not un:
            return out
        weight: dict[tuple[int, int], float] = {}  # (old, new) -> blocking evidence
        for n, os_ in self._candidates_one_way(self.NEW, self.OLD, un, uo, self.n2o, 1).items():
            for o, w in os_:
                weight[(o, n)] = w
        for o, ns in self._candidates_one_way(self.OLD, self.NEW, uo, un, self.o2n, 0).items():
            for n, w in ns:
                k = (o, n)
                weight[k] = max(weight.get(k, 0.0), w)
        self.spend(len(weight) // self.SCAN_PER_UNIT + 1)
        by_o: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
        by_n: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
        for (o, n), w in weight.items():
            d = abs(self.expected_pos(o, 0) - n)
            by_o[o].append((-w, d, n))
            by_n[n].append((-w, d, o))
        keep = set(weight)
        cap = self.CAND_IN
        for side, lists in ((0, by_o), (1, by_n)):
            for x, lst in lists.items():
                if len(lst) > cap:
                    lst.sort()
                    for _w, _d, y in lst[cap:]:
                        keep.discard((x, y) if side == 0 else (y, x))
        for o, n in keep:
            out[n].add(o)
        return out

    def _candidates_one_way(
        self,
        src: _Side,
        dst: _Side,
        us: list[int],
        ud: list[int],
        s2d: dict[int, int],
        side: int,
    ) -> dict[int, list[tuple[int, float]]]:
        WINDOW, CAP, RARE = self.CAND_WINDOW, self.CAND_CAP, self.RARE
        by_sig: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i in ud:
            r = dst.recs[i]
            by_sig[r.type_sig].append((r.instr_count, i))
        for v in by_sig.values():
            v.sort()
        s_index: dict[str, list[int]] = defaultdict(list)
        c_index: dict[int, list[int]] = defaultdict(list)
        for i in ud:
            r = dst.recs[i]
            for s in set(r.strings):
                s_index[s].append(i)
            for c in set(r.consts):
                if c >= 256 or c <= -256:
                    c_index[c].append(i)
        ud_set = set(ud)
        out: dict[int, list[tuple[int, float]]] = {}
        for x in us:
            rx = src.recs[x]
            cand: dict[int, float] = {}
            lst = by_sig.get(rx.type_sig)
            if lst:
                # functions of the same size sit by index: start at the expected position,
                # so a run of equal sizes offers the nearest, not always the first ones
                k = bisect.bisect_left(lst, (rx.instr_count, self.expected_pos(x, side)))
                for cnt, i in lst[max(0, k - WINDOW) : k + WINDOW]:
                    if size_ratio(cnt, rx.instr_count) >= 0.4 or abs(cnt - rx.instr_count) <= 8:
                        cand[i] = cand.get(i, 0.0) + 1.0
            for s in set(rx.strings):
                hits = s_index.get(s)
                if hits and len(hits) <= RARE:
                    for i in hits:
                        cand[i] = cand.get(i, 0.0) + 2.0
            for c in set(rx.consts):
                hits = c_index.get(c)
                if hits and len(hits) <= RARE:
                    for i in hits:
                        cand[i] = cand.get(i, 0.0) + 1.0
            # neighbours of matched neighbours
            for rel_s, rel_d in ((src.callees, dst.callers), (src.callers, dst.callees)):
                for m in rel_s[x]:
                    dm = s2d.get(m)
                    if dm is None:
                        continue
                    hood = rel_d[dm]
                    if len(hood) > self.HOOD_MAX:
                        continue
                    for i in hood:
                        if i in ud_set:
                            cand[i] = cand.get(i, 0.0) + 1.5
            if not cand:
                continue
            ic = rx.instr_count
            if len(cand) > CAP:
                ranked = sorted(
                    cand, key=lambda i: (-(cand[i] + size_ratio(dst.recs[i].instr_count, ic)), i)
                )[:CAP]
            else:
                ranked = list(cand)
            out[x] = [(i, cand[i] + size_ratio(dst.recs[i].instr_count, ic)) for i in ranked]
        return out

    def _resolve_best(self, uo: list[int], un: list[int]) -> None:
        """As first written: every pair's similarity computed before the pass."""
        OLD, NEW = self.OLD.recs, self.NEW.recs
        plain = {
            (x, y): self.similarity(x, y, sig_penalty=False)
            for x in uo
            for y in un
            if _plausible_size(OLD[x].instr_count, NEW[y].instr_count)
        }
        by_o: dict[int, list[tuple[float, int]]] = {}
        by_n: dict[int, list[tuple[float, int]]] = {}
        for (x, y), p in plain.items():
            by_o.setdefault(x, []).append((p, y))
            by_n.setdefault(y, []).append((p, x))
        for (x, y), p in sorted(plain.items(), key=lambda kv: (-kv[1], kv[0])):
            if p < self.CG_BEST or x in self.o2n or y in self.n2o:
                continue
            s = self.similarity(x, y)
            if s < self.CG_BEST:
                continue
            second = max(
                [t for t, y2 in by_o[x] if y2 != y and y2 not in self.n2o]
                + [t for t, x2 in by_n[y] if x2 != x and x2 not in self.o2n],
                default=0.0,
            )
            if p - second >= self.CG_BEST_MARGIN:
                self.accept(x, y, self._cg_score(s), "callgraph")


def _whole_scans(mp) -> None:
    """The review checks as first written: every free function of the result type read
    (no size window), every pair's similarity computed (no bound); the call graph's
    unique-signature step with no bound either (every similarity computed)."""
    mp.setattr(R._BySize, "window", lambda self, n: self.recs)
    mp.setattr(FeatureCache, "content_bound", lambda self, o, n: math.inf)
    mp.setattr(FeatureCache, "weight_bound", lambda self, o, n: math.inf)
    mp.setattr(MatcherBase, "content_bound", lambda self, o, n: (math.inf, 1.0))


def _both(old, new, monkeypatch) -> None:
    # the anchors' run resumed from states a few positions apart (the releases are small)
    monkeypatch.setattr(_Matcher, "ANCHOR_STEP", 3)
    m = _Matcher(old, new)
    got = m.run_staged(True), m.finish_stats().work
    with monkeypatch.context() as mp:
        _whole_scans(mp)
        ref = _Reference(old, new)
        want = ref.run_staged(True), ref.finish_stats().work
    assert got == want


@pytest.mark.parametrize("seed", range(40))
def test_random_releases_pair_as_first_written(seed: int, monkeypatch) -> None:
    old, new = random_releases(seed)
    _both(old, new, monkeypatch)
    _both(new, old, monkeypatch)


@pytest.mark.parametrize("seed", range(20))
def test_lookalike_families_pair_as_first_written(seed: int, monkeypatch) -> None:
    """Families of look-alikes on both sides (rivals to review, pairs skipped for having
    none): the family review and the candidate lists answer as first written."""
    old, new = random_releases(seed)
    old, new = with_lookalikes(old, seed), with_lookalikes(new, seed + 1000)
    looked: list[int] = []
    real = FamilyStage._rivals

    def counting(self, i, g1, g2):
        got = real(self, i, g1, g2)
        looked.append(len(got))
        return got

    monkeypatch.setattr(FamilyStage, "_rivals", counting)
    _both(old, new, monkeypatch)
    _both(new, old, monkeypatch)
    assert any(looked), "no pair had a rival: the comparison would not exercise the review"


def test_demo_releases_pair_as_first_written(demo_kb_master, monkeypatch) -> None:
    conn = open_ro(demo_kb_master)
    try:
        old = records_from_rows(queries.matching_rows(conn, 1))
        new = records_from_rows(queries.matching_rows(conn, 2))
    finally:
        conn.close()
    _both(old, new, monkeypatch)
    _both(new, old, monkeypatch)


def test_the_bound_decides_real_rivals(monkeypatch) -> None:
    """On a pairing with look-alike rivals the review asks the bound (the comparisons above
    compare two paths, not one with itself) and still flags the pair."""
    code = [body(40 + k, 50) for k in range(6)]
    old = [rec(k + 1, code=c) for k, c in enumerate(code)]
    new = [rec(k + 1, code=edited(c)) for k, c in enumerate(code)]
    asked = []
    real = FeatureCache.content_bound

    def counting(self, o, n):
        asked.append((o.index, n.index))
        return real(self, o, n)

    monkeypatch.setattr(FeatureCache, "content_bound", counting)
    # the call graph put old 1 on new 2; old 2, new 1 and the rest are left unpaired
    assert R.review_closer_rivals(view(old, new, [(1, 2, "callgraph", 0.82)])) == 1
    assert asked


def _computed(old, new, matcher, monkeypatch) -> int:
    """How many content similarities (op-bigram cosines) a whole run computes."""
    real = FeatureCache._content_similarity
    got = []

    def counting(self, o, n):
        got.append((o.index, n.index))
        return real(self, o, n)

    with monkeypatch.context() as mp:
        mp.setattr(FeatureCache, "_content_similarity", counting)
        if matcher is _Reference:  # the call graph's steps as first written, nothing else
            mp.setattr(MatcherBase, "content_bound", lambda self, o, n: (math.inf, 1.0))
        matcher(old, new).run_staged(True)
    return len(got)


def test_the_call_graph_bound_spares_similarities(monkeypatch) -> None:
    """The bound decides real pairs (the comparisons above compare two paths): the runs
    compute fewer content similarities than the first forms, with the same answers."""
    fewer = 0
    for seed in range(12):
        old, new = random_releases(seed)
        fewer += _computed(old, new, _Matcher, monkeypatch) < _computed(
            old, new, _Reference, monkeypatch
        )
    assert fewer


@pytest.mark.parametrize("seed", range(8))
def test_the_score_bound_is_never_below_the_score(seed: int) -> None:
    """At every state of a run the call graph's steps see, a pair's score from the bound
    is at least its score (both signature readings, every pair of defined functions)."""
    old, new = random_releases(seed)
    m = _Matcher(old, new)
    states = []
    real = m.propagate

    def snapshot() -> None:
        real()
        states.append(None)
        olds = [i for i in m.OLD.order if not m.OLD.recs[i].imported]
        news = [i for i in m.NEW.order if not m.NEW.recs[i].imported]
        for o in olds[::3]:
            for n in news:
                tail = m.tail(o, n)
                bound = m.content_bound(o, n)
                exact = m.content(o, n)
                assert bound[1] == exact[1] and bound[0] >= exact[0]
                for pen in (True, False):
                    assert m.score(o, n, bound, tail, pen) >= m.score(o, n, exact, tail, pen)

    m.propagate = snapshot
    m.run_staged(True)
    assert len(states) > 2


def _table_heavy(seed: int) -> tuple[list[FuncRecord], list[FuncRecord]]:
    """Random releases placed mostly by their function tables: every defined function in
    the table, few calls, and bodies repeated in groups (the table's hash groups)."""
    old, new = random_releases(seed)
    rnd = random.Random(seed)
    dup = {r.body_hash: f"dup{k % 3}" for k, r in enumerate(old) if r.body_hash and k % 5 == 0}

    def heavy(r: FuncRecord) -> FuncRecord:
        if r.imported:
            return r
        return replace(
            r,
            calls=r.calls if rnd.random() < 0.15 else (),
            table_slots=(r.index,),
            body_hash=dup.get(r.body_hash, r.body_hash),
        )

    return [heavy(r) for r in old], [heavy(r) for r in new]


@pytest.mark.parametrize("seed", range(12))
def test_table_heavy_releases_pair_as_first_written(seed: int, monkeypatch) -> None:
    """Releases the function tables place: the tables' neighbourhood kept per state pairs
    as when derived at every look (both ways)."""
    old, new = _table_heavy(seed)
    _both(old, new, monkeypatch)
    _both(new, old, monkeypatch)


def test_the_table_memo_is_read_again(monkeypatch) -> None:
    """The function tables' neighbourhood is reused while none of their functions changes
    state (the comparisons above compare two paths, not one with itself), and a change
    of state makes it again."""
    made: list[str] = []
    asked: list[str] = []
    real = MatcherBase.table_memo

    def counting(self, key, make):
        asked.append(key)

        def making():
            made.append(key)
            return make()

        return real(self, key, making)

    monkeypatch.setattr(MatcherBase, "table_memo", counting)
    for seed in range(12):
        old, new = _table_heavy(seed)
        _Matcher(old, new).run_staged(True)
    assert made and len(made) < len(asked)
    assert {"hood", "body_hash", "shape_hash", "gaps"} <= set(made)


def test_the_table_version_follows_the_tables() -> None:
    """Matching or unmatching a function of either table changes the version the memo is
    kept by; a pair outside both tables does not."""
    old, new = random_releases(3)
    m = _Matcher(old, new)
    in_o = next(i for i in m.OLD.order if i in m.OLD.in_table and not m.OLD.recs[i].imported)
    in_n = next(i for i in m.NEW.order if i in m.NEW.in_table and not m.NEW.recs[i].imported)
    out_o = next(i for i in m.OLD.order if i not in m.OLD.in_table and i != in_o)
    out_n = next(i for i in m.NEW.order if i not in m.NEW.in_table and i != in_n)
    v = m._table_ver
    m.accept(out_o, out_n, 0.9, "test")
    assert m._table_ver == v
    m.accept(in_o, in_n, 0.9, "test")
    assert m._table_ver > v
    v = m._table_ver
    m.unaccept(in_o, in_n)
    assert m._table_ver > v


def test_the_weight_bound_decides_real_rivals(monkeypatch) -> None:
    """On random releases the review checks' cheaper bound settles rivals the exact bound
    would have been asked about (the pairings are compared above)."""
    counts = {"weight": 0, "exact": 0}
    real_w, real_b = FeatureCache.weight_bound, FeatureCache.content_bound

    def w(self, o, n):
        counts["weight"] += 1
        return real_w(self, o, n)

    def b(self, o, n):
        counts["exact"] += 1
        return real_b(self, o, n)

    monkeypatch.setattr(FeatureCache, "weight_bound", w)
    monkeypatch.setattr(FeatureCache, "content_bound", b)
    for seed in range(6):
        old, new = random_releases(seed)
        _Matcher(old, new).run_staged(True)
    assert counts["exact"] < counts["weight"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), step=st.integers(1, 6), moves=st.integers(1, 120))
def test_the_anchors_resumed_are_the_anchors_from_the_start(seed, step, moves) -> None:
    """Random accepts and re-pairings, the anchors looked at after every few: the run
    resumed from its kept states gives the chain of the run from the start (it fails when
    an accept or a re-pairing leaves the run unaware of the change)."""
    rnd = random.Random(seed)
    old, new = random_releases(seed % 40)
    m = _Matcher(old, new)
    m.ANCHOR_STEP = step
    for _ in range(moves):
        if m.o2n and rnd.random() < 0.3:
            o = rnd.choice(sorted(m.o2n))
            m.unaccept(o, m.o2n[o])
        else:
            free_o = [i for i in m.OLD.order if i not in m.o2n]
            free_n = [i for i in m.NEW.order if i not in m.n2o]
            if not free_o or not free_n:
                continue
            m.accept(rnd.choice(free_o), rnd.choice(free_n), 0.9, "test")
        if rnd.random() < 0.4:
            m._compute_anchors()
            if rnd.random() < 0.5:
                m._compute_anchors()  # nothing changed since: the same anchors
            ref = SimpleNamespace(n2o=dict(m.n2o), OLD=m.OLD, NEW=m.NEW)
            _Reference._compute_anchors(ref)
            assert (m.anchor_o, m.anchor_n) == (ref.anchor_o, ref.anchor_n)
            assert (m.span_o, m.span_n) == (ref.span_o, ref.span_n)
