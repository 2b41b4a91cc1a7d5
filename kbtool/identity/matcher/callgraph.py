"""Stage 5: call-graph propagation from matched pairs to callees and callers."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial
from itertools import accumulate, compress, count, repeat
from operator import gt, is_

from .base import REVIEW_SCORE, _plausible_size
from .similarity import SimilarityStage


class CallgraphStage(SimilarityStage):
    # ---------------------------------------------------------------- stage 5
    def propagate(self) -> None:
        """Resolve the neighbourhoods of queued matched pairs to a fixpoint, within the
        stage's work budget (each neighbourhood entry looked at counts; past the budget the
        queue is dropped and the stage stops for the rest of the run)."""
        prev, self.stage = self.stage, "callgraph"
        try:
            self._propagate()
        finally:
            if self.exhausted():
                self.queue.clear()
                self.queued.clear()
            self.stage = prev

    def _propagate(self) -> None:
        OLD, NEW = self.OLD, self.NEW
        self.update_anchors()
        while not self.exhausted():
            while self.queue:
                o, n = self.queue.popleft()
                self.queued.discard((o, n))
                lo, ln = OLD.callees[o], NEW.callees[n]
                co, cn = OLD.callers[o], NEW.callers[n]
                hood = len(lo) + len(ln) + len(co) + len(cn)
                if not self.spend(1 + hood // self.SCAN_PER_UNIT):
                    return
                self._resolve(lo, ln, ordered=True)
                self._resolve(co, cn, ordered=False)
            # the function table(s) as one more ordered neighbourhood of a matched root
            if not (OLD.table and NEW.table):
                break
            before = len(self.result)
            if not self.spend(1 + (len(OLD.table) + len(NEW.table)) // self.SCAN_PER_UNIT):
                return
            self._resolve(OLD.table, NEW.table, ordered=True)
            if len(self.result) == before:
                break

    def _resolve(self, lo: Sequence[int], ln: Sequence[int], ordered: bool) -> None:
        o2n, n2o = self.o2n, self.n2o
        # the function tables (thousands of entries, looked at after every queue): what
        # depends only on which of their functions are matched is derived once per state
        table = lo is self.OLD.table and ln is self.NEW.table
        if table:
            uo, un = self.table_memo("hood", partial(_unmatched, lo, ln, o2n, n2o))
            if not uo or not un:
                return
        else:
            uo = [x for x in lo if x not in o2n]
            if not uo:
                return
            un = [y for y in ln if y not in n2o]
            if not un:
                return
        OLD, NEW = self.OLD.recs, self.NEW.recs

        # (a) hash groups inside the neighbourhood
        for attr, score in (("body_hash", 0.99), ("shape_hash", 0.97)):
            if table:
                groups, shapes_o, shapes_n = self.table_memo(
                    attr, partial(_hash_groups, OLD, NEW, uo, un, attr, True)
                )
            else:
                groups, shapes_o, shapes_n = _hash_groups(OLD, NEW, uo, un, attr, ordered)
            hit = False
            for xs, ys in groups:
                pairs = list(zip(xs, ys, strict=True))
                checks = [self.callee_check(x, y) for x, y in pairs]
                if any(c[1] for c in checks):
                    continue
                if attr == "body_hash" and len(xs) == 1:
                    x, y = xs[0], ys[0]
                    dup = shapes_o[OLD[x].shape_hash] > 1 or shapes_n[NEW[y].shape_hash] > 1
                    agree, _, total = checks[0]
                    if dup and (total == 0 or agree < total):
                        continue
                # several equal bodies called in the same order: pair by call position
                s = score if len(xs) == 1 else score - 0.04
                for x, y in pairs:
                    self.accept(x, y, s, "callgraph")
                hit = True
            if hit:
                uo = [x for x in uo if x not in o2n]
                un = [y for y in un if y not in n2o]
                if not uo or not un:
                    return

        # (b) imports (no body): the only unmatched import pair with the same signature
        io = [x for x in uo if OLD[x].imported]
        inn = [y for y in un if NEW[y].imported]
        if io and inn:
            self._resolve_imports(io, inn)
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
        uo = [x for x in uo if not OLD[x].imported]
        un = [y for y in un if not NEW[y].imported]
        if not uo or not un:
            return
        if len(uo) > self.SMALL_HOOD or len(un) > self.SMALL_HOOD:
            if ordered:
                self._resolve_gaps(lo, ln)
            return

        # (c) a single unmatched pair
        if len(uo) == 1 and len(un) == 1:
            x, y = uo[0], un[0]
            s = self.similarity(x, y)
            same = OLD[x].type_sig == NEW[y].type_sig
            if s >= (self.CG_SINGLE if same else self.CG_SINGLE_XSIG):
                self.accept(x, y, self._cg_score(s), "callgraph", self._cg_score(s) < REVIEW_SCORE)
            return

        # (d) a signature unique in both neighbourhoods, provided the neighbourhood is not
        # full of look-alikes (a signature change can make the wrong pair the unique one)
        so: dict[str, list[int]] = defaultdict(list)
        sn: dict[str, list[int]] = defaultdict(list)
        for x in uo:
            so[OLD[x].type_sig].append(x)
        for y in un:
            sn[NEW[y].type_sig].append(y)
        hit = False
        for sig, xs in so.items():
            ys = sn.get(sig)
            if not (ys and len(xs) == 1 and len(ys) == 1):
                continue
            x, y = xs[0], ys[0]
            # every pair below is scored (and its work charged) as by ``similarity``, the
            # content similarity (op histograms) only where the bound cannot decide
            self.charge(x, y)
            tail = self.tail(x, y)
            if self.score(x, y, self.content_bound(x, y), tail, True) < self.CG_UNIQUE_SIG:
                continue
            content = self.content(x, y)
            s = self.score(x, y, content, tail, True)
            if s < self.CG_UNIQUE_SIG:
                continue
            self.charge(x, y)
            plain = self.score(x, y, content, tail, False)
            cx, cy = OLD[x].instr_count, NEW[y].instr_count
            rivals = [(x, y2) for y2 in un if y2 != y and _plausible_size(cx, NEW[y2].instr_count)]
            rivals += [(x2, y) for x2 in uo if x2 != x and _plausible_size(OLD[x2].instr_count, cy)]
            # plain - max(rivals) >= margin: every rival at least the margin behind (float
            # subtraction is monotone), decided by the rival's bound when that suffices
            ahead = bool(rivals) or plain - 0.0 >= self.CG_RIVAL_MARGIN
            for a, b in rivals:
                self.charge(a, b)
                if not ahead:
                    continue  # charged alike, nothing left to decide
                t = self.tail(a, b)
                if plain - self.score(a, b, self.content_bound(a, b), t, False) >= (
                    self.CG_RIVAL_MARGIN
                ):
                    continue
                ahead = plain - self.score(a, b, self.content(a, b), t, False) >= (
                    self.CG_RIVAL_MARGIN
                )
            if ahead:
                self.accept(x, y, self._cg_score(s), "callgraph")
                hit = True
        if hit:
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
            if not uo or not un:
                return

        # (e) position between matched anchors in the call sequence
        if ordered:
            self._resolve_gaps(lo, ln)
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
            if not uo or not un:
                return

        # (f) a clear mutual best inside the small neighbourhood
        self._resolve_best(uo, un)

    def _best_value(
        self, k: tuple[int, int], plain: dict[tuple[int, int], float], tails: dict
    ) -> float:
        """A pair's score of :meth:`_resolve_best` at its state (its tail kept), once."""
        v = plain.get(k)
        if v is None:
            v = plain[k] = self.score(*k, self.content(*k), tails[k], False)
        return v

    def _cg_score(self, s: float) -> float:
        # neighbour evidence lifts the similarity: the pair sits where the other's does
        return min(0.95, 0.3 + 0.7 * s)

    def _resolve_imports(self, io: list[int], inn: list[int]) -> None:
        OLD, NEW = self.OLD.recs, self.NEW.recs
        so: dict[str, list[int]] = defaultdict(list)
        sn: dict[str, list[int]] = defaultdict(list)
        for x in io:
            so[OLD[x].type_sig].append(x)
        for y in inn:
            sn[NEW[y].type_sig].append(y)
        for sig, xs in so.items():
            ys = sn.get(sig)
            if ys and len(xs) == 1 and len(ys) == 1:
                x, y = xs[0], ys[0]
                same_name = OLD[x].import_name == NEW[y].import_name
                self.accept(x, y, 0.9 if same_name else 0.7, "callgraph")

    def _resolve_gaps(self, lo: Sequence[int], ln: Sequence[int]) -> None:
        """Callees between the same two matched anchors of both call sequences."""
        if lo is self.OLD.table and ln is self.NEW.table:
            pairs = self.table_memo("gaps", partial(self._gap_pairs, lo, ln))
        else:
            pairs = self._gap_pairs(lo, ln)
        for x, y in pairs:
            s = self.similarity(x, y)
            if s >= self.CG_GAP:
                self.accept(x, y, self._cg_score(s), "callgraph")

    def _gap_pairs(self, lo: Sequence[int], ln: Sequence[int]) -> list[tuple[int, int]]:
        """The pairs of :meth:`_resolve_gaps`, in gap order: one unmatched function of each
        side alone in a gap, of one signature (a pure function of which functions of the
        two lists are matched, and to what)."""
        o2n, n2o = self.o2n, self.n2o
        OLD, NEW = self.OLD.recs, self.NEW.recs
        # the positions of the unmatched defined functions (a pair is taken only from a gap
        # holding one of each; accepting one changes no other gap: positions are distinct).
        # Every step over the whole lists runs in C: a hub's lists and the function table
        # hold thousands of functions, a handful of them unmatched.
        mapped: list[int | None] = list(
            map(o2n.get, lo)
        )  # the image of each entry of lo (None: unmatched)
        imp_o, imp_n = self.OLD.imported, self.NEW.imported
        ui = [i for i in compress(count(), map(is_, mapped, repeat(None))) if lo[i] not in imp_o]
        if not ui:
            return []
        unmatched_n = compress(count(), map(is_, map(n2o.get, ln), repeat(None)))
        uj = [j for j in unmatched_n if ln[j] not in imp_n]
        if not uj:
            return []
        # the anchors: the matched entries of lo whose image sits in ln after every earlier
        # anchor's (a walk keeping the last anchor's position). The last anchor's position is
        # the largest position of any earlier image (a smaller one was skipped), so the
        # anchors are where the running maximum of the images' positions (-1: no image in
        # ln) goes up.
        pos: list[int] = list(map(self.NEW.position(ln).get, mapped, repeat(-1)))  # type: ignore[arg-type]
        top: list[int] = list(accumulate(pos, max, initial=-1))  # type: ignore[arg-type]
        at = list(compress(count(), map(gt, pos, top)))  # pos[i] > top[i]: max before i
        if not at:
            return []
        # the gaps (k: between bounds k and k + 1) holding exactly one unmatched function of
        # each side, in gap order, as a walk over every gap meets them
        ai = [-1, *at, len(lo)]
        aj = [-1, *map(pos.__getitem__, at), len(ln)]
        gx: dict[int, int] = {}
        for i in ui:
            k = bisect.bisect_left(ai, i) - 1
            gx[k] = -1 if k in gx else i
        gy: dict[int, int] = {}
        for j in uj:
            k = bisect.bisect_left(aj, j) - 1
            gy[k] = -1 if k in gy else j
        pairs = []
        for k in sorted(gx):
            i, j = gx[k], gy.get(k, -1)
            if i >= 0 and j >= 0:
                x, y = lo[i], ln[j]
                if OLD[x].type_sig == NEW[y].type_sig:
                    pairs.append((x, y))
        return pairs

    def _resolve_best(self, uo: list[int], un: list[int]) -> None:
        """A pair clearly ahead of every other pair of the neighbourhood that shares one of
        its functions. Rivals are compared without the signature penalty, so a changed
        signature cannot hand the win to a look-alike that happens to keep the old one."""
        OLD, NEW = self.OLD.recs, self.NEW.recs
        pairs = [
            (x, y)
            for x in uo
            for y in un
            if _plausible_size(OLD[x].instr_count, NEW[y].instr_count)
        ]
        # every pair is scored at this state (work charged as by ``similarity``): its tail
        # kept, its content similarity (op histograms) computed only where the bound cannot
        # decide; a value computed later is the one of this state (the tail kept)
        tails = {}
        bound = {}
        for k in pairs:
            self.charge(*k)
            t = tails[k] = self.tail(*k)
            bound[k] = self.score(*k, self.content_bound(*k), t, False)
        plain: dict[tuple[int, int], float] = {}

        by_o: dict[int, list[tuple[int, int]]] = defaultdict(list)
        by_n: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for k in pairs:
            by_o[k[0]].append(k)
            by_n[k[1]].append(k)
        # the pairs at or above CG_BEST (none whose bound is below), best first
        best = [(self._best_value(k, plain, tails), k) for k in pairs if bound[k] >= self.CG_BEST]
        best = [(p, k) for p, k in best if p >= self.CG_BEST]
        best.sort(key=lambda pk: (-pk[0], pk[1]))
        margin = self.CG_BEST_MARGIN
        for p, (x, y) in best:
            if x in self.o2n or y in self.n2o:
                continue
            s = self.similarity(x, y)
            if s < self.CG_BEST:
                continue
            # p - (the best free rival, 0.0 without one) >= margin: every free rival at least
            # the margin behind (float subtraction is monotone), by its bound when it suffices
            rivals = [k for k in by_o[x] if k[1] != y and k[1] not in self.n2o]
            rivals += [k for k in by_n[y] if k[0] != x and k[0] not in self.o2n]
            if all(
                p - bound[k] >= margin or p - self._best_value(k, plain, tails) >= margin
                for k in rivals
            ) and (rivals or p - 0.0 >= margin):
                self.accept(x, y, self._cg_score(s), "callgraph")


def _unmatched(
    lo: Sequence[int], ln: Sequence[int], o2n: dict, n2o: dict
) -> tuple[list[int], list[int]]:
    """The unmatched functions of two neighbour lists, in list order."""
    return [x for x in lo if x not in o2n], [y for y in ln if y not in n2o]


def _hash_groups(
    OLD: dict, NEW: dict, uo: list[int], un: list[int], attr: str, ordered: bool
) -> tuple[list[tuple[list[int], list[int]]], Counter | None, Counter | None]:
    """Step (a)'s groups of one hash (``attr``) among the unmatched functions ``uo`` and
    ``un``: the (old, new) member lists of equal length (one each unless ``ordered``), in
    the old side's order of first appearance; with the body hash and a group, the shape
    counts of both sides too (None otherwise: nothing reads them)."""
    go: dict[str, list[int]] = defaultdict(list)
    gn: dict[str, list[int]] = defaultdict(list)
    for x in uo:
        h = getattr(OLD[x], attr)
        if h:
            go[h].append(x)
    for y in un:
        h = getattr(NEW[y], attr)
        if h:
            gn[h].append(y)
    groups = []
    for h, xs in go.items():
        ys = gn.get(h)
        if not ys or len(xs) != len(ys) or (len(xs) > 1 and not ordered):
            continue
        groups.append((xs, ys))
    shapes_o = shapes_n = None
    if attr == "body_hash" and groups:  # (read only for a group, most hoods have none)
        shapes_o = Counter(OLD[x].shape_hash for x in uo)
        shapes_n = Counter(NEW[y].shape_hash for y in un)
    return groups, shapes_o, shapes_n
