"""Stage 6 (fuzzy only): feature similarity, gap alignment, leftovers."""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from functools import partial
from typing import Any, cast

from .base import REVIEW_MARGIN, REVIEW_SCORE, _Side, bisect_ints
from .bigrams import i64, vec
from .family import FamilyStage
from .features import size_ratio


class SimilarityStage(FamilyStage):
    # ---------------------------------------------------------------- stage 6
    CAND_WINDOW = 12  # nearest in size (then in expected position) with the same signature
    CAND_CAP = 40  # candidates kept per function, each way
    CAND_IN = 80  # candidate pairs any one function takes part in (both ways together)
    RARE = 4  # a string/constant shared by at most this many unmatched functions
    HOOD_MAX = 64  # matched neighbours with larger neighbourhoods propose no candidates

    def candidates(self) -> list[int]:
        """Blocking: bounded candidate lists, generated from both sides (so that the margin
        of a pair sees the rivals of both of its functions). Returns the pairs as ints
        ``new * OLD.size + old``, sorted (by new, then old).

        Every function takes part in at most ``CAND_IN`` pairs: a function many others
        picked (one signature and one size shared by thousands of look-alikes) keeps the
        ones with the strongest blocking evidence, then the nearest in expected position,
        so the rival scans of the assignment stay bounded."""
        o2n_a, n2o_a, imp_o, imp_n = self.o2n_a, self.n2o_a, self.OLD.imp_a, self.NEW.imp_a
        uo = [i for i in self.OLD.order if o2n_a[i] < 0 and not imp_o[i]]
        un = [i for i in self.NEW.order if n2o_a[i] < 0 and not imp_n[i]]
        if not uo or not un:
            return []
        # (old, new) -> blocking evidence, the pair keyed by one int (old * wide + new):
        # each way writes its candidates in, the larger evidence kept
        wide: int = self.NEW.size
        weight: dict[int, float] = {}
        self._candidates_one_way(self.NEW, self.OLD, un, uo, n2o_a, 1, weight)
        self._candidates_one_way(self.OLD, self.NEW, uo, un, o2n_a, 0, weight)
        self.spend(len(weight) // self.SCAN_PER_UNIT + 1)
        # the pairs each function takes part in, counted natively: only a function past
        # the cap has its pairs ranked (``_capped``), the rest are all kept
        cap: int = self.CAND_IN
        per_o = vec[i64]([0] * self.OLD.size)
        per_n = vec[i64]([0] * wide)
        over = False
        for k in weight:
            o: int = k // wide
            n: int = k - o * wide  # (divmod of non-negative ints, no tuple)
            c: i64 = per_o[o] + 1
            per_o[o] = c
            c2: i64 = per_n[n] + 1
            per_n[n] = c2
            if c > cap or c2 > cap:
                over = True
        drop = self._capped(weight, per_o, per_n) if over else set()
        wo: int = self.OLD.size
        out: list[int] = []
        for k in weight:
            if drop and k in drop:
                continue
            o = k // wide
            out.append((k - o * wide) * wo + o)
        out.sort()
        return out

    def _capped(self, weight: dict[int, float], per_o: vec[i64], per_n: vec[i64]) -> set[int]:
        """The pairs of ``weight`` past the ``CAND_IN`` cap of one of their functions
        (``per_o``/``per_n``: each function's count of pairs): a function's pairs ranked
        by evidence, then by the distance of the new function to the old one's expected
        position, then by the other's index."""
        wide: int = self.NEW.size
        cap: int = self.CAND_IN
        by_o: dict[int, list[tuple[float, float, int]]] = {}
        by_n: dict[int, list[tuple[float, float, int]]] = {}
        at: dict[int, float] = {}  # old -> its expected position (once per function)
        for k, w in weight.items():
            o: int = k // wide
            n: int = k - o * wide
            co = per_o[o] > cap
            cn = per_n[n] > cap
            if not co and not cn:
                continue
            e = at.get(o)
            if e is None:
                e = at[o] = self.expected_pos(o, 0)
            d = abs(e - n)
            if co:
                lo_ = by_o.get(o)
                if lo_ is None:
                    by_o[o] = [(-w, d, n)]
                else:
                    lo_.append((-w, d, n))
            if cn:
                ln_ = by_n.get(n)
                if ln_ is None:
                    by_n[n] = [(-w, d, o)]
                else:
                    ln_.append((-w, d, o))
        drop: set[int] = set()
        for side, lists in ((0, by_o), (1, by_n)):
            for x, lst in lists.items():
                lst.sort()
                for _w, _d, y in lst[cap:]:
                    drop.add(x * wide + y if side == 0 else y * wide + x)
        return drop

    def expected_pos(self, i: int, side: int) -> float:
        """Where function ``i`` of one side (0 old, 1 new) is expected on the other side:
        linear between the matched anchors around it (the function order is kept by
        linkers), or the proportional position when nothing is matched yet."""
        self.update_anchors()
        src, dst = (self.anchor_o, self.anchor_n) if side == 0 else (self.anchor_n, self.anchor_o)
        if side == 0:
            (s0, s1), (d0, d1) = self.span_o, self.span_n
        else:
            (s0, s1), (d0, d1) = self.span_n, self.span_o
        src = src or []
        dst = dst or []  # (as long as src)
        k = bisect_ints(src, i)
        lo_s, lo_d = (src[k - 1], dst[k - 1]) if k else (s0, d0)
        hi_s, hi_d = (src[k], dst[k]) if k < len(src) else (s1, d1)
        if hi_s == lo_s:
            return float(lo_d)
        return lo_d + (i - lo_s) * (hi_d - lo_d) / (hi_s - lo_s)

    def _blocking_tables(self) -> tuple[vec[i64], vec[i64], vec[i64], vec[i64], vec[i64]]:
        """The blocking indexes' tables by the feature store's ids (made once, all 0 between
        uses): per string id its count of holders and its first ``RARE`` holders (``RARE``
        slots an id), the same per constant id, and per constant id whether it blocks
        (outside -255..255: small constants are everywhere)."""
        got = self._blk
        if got is None:
            fc = self.feats
            voc_s, voc_c = fc._voc_s, fc._voc_c
            ns: int = len(voc_s.df)
            nc: int = len(voc_c.df)
            big = vec[i64]([0] * nc)
            for c, k in voc_c.ids.items():
                if k < nc and (c >= 256 or c <= -256):
                    big[k] = 1
            rare: int = self.RARE
            got = self._blk = (
                vec[i64]([0] * ns),
                vec[i64]([0] * (ns * rare)),
                vec[i64]([0] * nc),
                vec[i64]([0] * (nc * rare)),
                big,
            )
        return got

    def _candidates_one_way(
        self,
        src: _Side,
        dst: _Side,
        us: list[int],
        ud: list[int],
        s2d: list[int],
        side: int,
        weight: dict[int, float],
    ) -> None:
        """The candidates of each function of ``us`` among ``ud`` (``s2d``: the match
        state from ``src`` to ``dst`` by function index, -1 unmatched), at most
        ``CAND_CAP`` each, written into ``weight`` (old * NEW.size + new -> blocking
        evidence): set from the new side (``side`` 1, the first call), the larger of the
        two kept from the old side (0)."""
        WINDOW, CAP, RARE = self.CAND_WINDOW, self.CAND_CAP, self.RARE
        sig_s, cnt_s, sig_d, cnt_d = src.sig_a, src.count_a, dst.sig_a, dst.count_a
        # (plain dicts filled by ``get``: a ``defaultdict`` is a generic subscript and
        # ``__missing__`` call in the twin, and most of these keys are new)
        by_sig: dict[str | None, list[tuple[int, int]]] = {}
        for i in ud:
            sg = sig_d[i]
            lst0 = by_sig.get(sg)
            if lst0 is None:
                by_sig[sg] = [(cnt_d[i], i)]
            else:
                lst0.append((cnt_d[i], i))
        for v in by_sig.values():
            v.sort()
        # each string and blocking constant (by the store's ids, ``sets``: a record's
        # distinct ones) held by the functions of ``ud``: how many, and the first RARE (a
        # key held by more blocks nothing); the counts back to 0 at the end
        cnt_si, mem_si, cnt_ci, mem_ci, big_c = self._blocking_tables()
        sets = self.feats._sets
        rare: i64 = RARE
        ds: int = 1 - side
        for i in ud:
            ids_s, ids_c = sets[(i << 1) | ds]
            for t in ids_s:
                q: i64 = cnt_si[t]
                if q < rare:
                    mem_si[t * rare + q] = i
                cnt_si[t] = q + 1
            for t in ids_c:
                if big_c[t]:
                    q = cnt_ci[t]
                    if q < rare:
                        mem_ci[t * rare + q] = i
                    cnt_ci[t] = q + 1
        in_ud = [False] * dst.size
        for i in ud:
            in_ud[i] = True
        # each candidate's evidence in half units by function index (1.0, 2.0 and 1.5 are 2,
        # 4 and 3: sums of halves are exact in a float, so ``acc * 0.5`` is the float sum),
        # the candidates in the order first met (``touched``; ``acc`` back to 0 after each)
        acc = vec[i64]([0] * dst.size)
        touched = vec[i64]([0] * dst.size)
        hood_max: int = self.HOOD_MAX
        wide: int = self.NEW.size
        for x in us:
            strings_x, consts_x = sets[(x << 1) | side]
            nt: i64 = 0
            ic = cnt_s[x]
            lst = by_sig.get(sig_s[x])
            if lst:
                # functions of the same size sit by index: start at the expected position,
                # so a run of equal sizes offers the nearest, not always the first ones
                k = bisect.bisect_left(lst, (ic, self.expected_pos(x, side)))
                for cnt, i in lst[max(0, k - WINDOW) : k + WINDOW]:
                    if abs(cnt - ic) <= 8 or size_ratio(cnt, ic) >= 0.4:
                        if acc[i] == 0:
                            touched[nt] = i
                            nt += 1
                        acc[i] += 2
            for t in strings_x:
                q = cnt_si[t]
                if 0 < q <= rare:
                    for j in range(t * rare, t * rare + q):
                        i = mem_si[j]
                        if acc[i] == 0:
                            touched[nt] = i
                            nt += 1
                        acc[i] += 4
            for t in consts_x:  # (a small constant's count stays 0)
                q = cnt_ci[t]
                if 0 < q <= rare:
                    for j in range(t * rare, t * rare + q):
                        i = mem_ci[j]
                        if acc[i] == 0:
                            touched[nt] = i
                            nt += 1
                        acc[i] += 2
            # neighbours of matched neighbours
            for rel_s, rel_d in ((src.callees_a, dst.callers_a), (src.callers_a, dst.callees_a)):
                for m in rel_s[x]:
                    dm = s2d[m]
                    if dm < 0:
                        continue
                    hood = rel_d[dm]
                    if len(hood) > hood_max:
                        continue
                    for i in hood:
                        if in_ud[i]:
                            if acc[i] == 0:
                                touched[nt] = i
                                nt += 1
                            acc[i] += 3
            if nt == 0:
                continue
            if nt > CAP:  # the CAP best by evidence, then by index
                scored: list[tuple[int, float]] = []
                for t in range(nt):
                    i = touched[t]
                    scored.append((i, float(acc[i]) * 0.5 + size_ratio(cnt_d[i], ic)))
                    acc[i] = 0
                scored.sort(key=lambda p: (-p[1], p[0]))
                for i, w in scored[:CAP]:
                    _put(weight, i * wide + x if side else x * wide + i, w, side)
                continue
            for t in range(nt):
                i = touched[t]
                w = float(acc[i]) * 0.5 + size_ratio(cnt_d[i], ic)
                acc[i] = 0
                _put(weight, i * wide + x if side else x * wide + i, w, side)
        for i in ud:
            ids_s, ids_c = sets[(i << 1) | ds]
            for t in ids_s:
                cnt_si[t] = 0
            for t in ids_c:
                cnt_ci[t] = 0

    def similarity_round(self, threshold: float, min_margin: float) -> int:
        """Best-first one-to-one assignment over the blocked candidates.

        Scores go stale as pairs are accepted (the matched-neighbour terms change), so a
        popped pair whose neighbourhood changed since it was scored is scored again and
        pushed back (lazy greedy). A pair is taken only when it is ``min_margin`` ahead of
        every other free candidate of either function; the rest waits for more evidence.
        """
        self.stage = "similarity"
        if self.exhausted():
            return 0
        self.update_anchors()
        state = len(self.result)
        if self._scored is not None and self._scored[0] == state:
            scored = self._scored[1]  # nothing matched since: same candidates, same scores
        else:
            scored = []
            wo: int = self.OLD.size
            cur = -1
            for key in self.candidates():  # (by new, then old)
                n = key // wo
                if n != cur:
                    if cur >= 0 and self.exhausted():
                        return 0  # the budget is spent before the assignment could start
                    cur = n
                o = key - n * wo
                scored.append((self.similarity(o, n), o, n))
            if cur >= 0 and self.exhausted():
                return 0
            self._scored = (state, scored)
        if not scored:
            return 0
        memo = self._margins
        if (
            memo is not None
            and memo[0] is scored
            and not any(s >= threshold and m >= min_margin and m > 1e-9 for s, m in memo[1])
        ):
            # nothing matched since a round that took nothing: every pair's margin is as it
            # was then, and none clears this round's bar (skips the heap, same result)
            self.spend(1 + len(scored) // self.SCAN_PER_UNIT)
            return 0
        OLD, NEW = self.OLD, self.NEW
        # the pairs' functions and scores as the very objects of ``scored`` (typed ``Any``:
        # a dict key or a heap entry made of them makes no int or float; the indices are
        # unboxed, ``oi``/``ni``, only to index the dense arrays)
        ents = cast(list[tuple[Any, Any, Any]], scored)
        heap, alive_o, alive_n = self._assignment(scored, ents)
        epoch = 0
        # the epoch each function's neighbourhood last changed at (-1: not this round), by
        # function index
        touched_o = vec[i64]([-1] * OLD.size)
        touched_n = vec[i64]([-1] * NEW.size)
        # best and second-best score among the free candidates of each function, kept
        # until one of its candidates is matched or re-scored: a pop costs O(1), not a scan
        top_o: dict[Any, tuple[float, int, float]] = {}
        top_n: dict[Any, tuple[float, int, float]] = {}
        scan = self.SCAN_PER_UNIT

        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        count = 0
        while heap:
            neg, po, pn, seen = heapq.heappop(heap)
            oi: int = po
            ni: int = pn
            if o2n_a[oi] >= 0 or n2o_a[ni] >= 0:
                continue
            if not self.spend(1):
                break  # the budget is spent: what is matched so far stays
            if touched_o[oi] >= seen or touched_n[ni] >= seen:
                self._heap0 = None  # (the rival dicts change)
                s = self.similarity(oi, ni)
                alive_o[po][pn] = s
                alive_n[pn][po] = s
                top_o.pop(po, None)
                top_n.pop(pn, None)
                heapq.heappush(heap, (-s, po, pn, epoch + 1))
                continue
            s = -neg
            if s < threshold:
                break
            # rivals still free decide whether to take the pair at all
            tn = top_n.get(pn)
            if tn is None:
                tn = top_n[pn] = self._top(scan, alive_n[pn], o2n_a)
            to = top_o.get(po)
            if to is None:
                to = top_o[po] = self._top(scan, alive_o[po], n2o_a)
            second = max(tn[2] if tn[1] == oi else tn[0], to[2] if to[1] == ni else to[0])
            margin = s - second
            if margin <= 1e-9 or margin < min_margin:
                continue  # no clear winner yet: wait for more evidence
            # rivals taken by a match that is itself only a guess (flagged) still count
            # against confidence
            tentative = 0.0
            for other, t in alive_n[pn].items():
                ot: int = other
                m = o2n_a[ot]
                if ot != oi and m >= 0 and self.result[m].review:
                    tentative = max(tentative, t)
            for other, t in alive_o[po].items():
                ot = other
                if ot != ni and n2o_a[ot] >= 0 and self.result[ot].review:
                    tentative = max(tentative, t)
            review = s < REVIEW_SCORE or s - max(second, tentative) < REVIEW_MARGIN
            self.accept(oi, ni, s, "similarity", review)
            self._heap0 = None
            count += 1
            epoch += 1
            # the pair's two are no longer free rivals of anyone
            for y in alive_o[po]:
                top_n.pop(y, None)
            for x in alive_n[pn]:
                top_o.pop(x, None)
            for xi in OLD.callers_a[oi]:
                touched_o[xi] = epoch
            for xi in OLD.callees_a[oi]:
                touched_o[xi] = epoch
            for yi in NEW.callers_a[ni]:
                touched_n[yi] = epoch
            for yi in NEW.callees_a[ni]:
                touched_n[yi] = epoch
        if count == 0 and not self.exhausted():
            # no match, no re-scoring: remember each pair's margin for the next rounds
            margins = []
            for ent in ents:
                sx, po, pn = ent
                sc: float = sx
                oi = po
                ni = pn
                tn = top_n.get(pn) or top_n.setdefault(pn, self._top(scan, alive_n[pn], o2n_a))
                to = top_o.get(po) or top_o.setdefault(po, self._top(scan, alive_o[po], n2o_a))
                second = max(tn[2] if tn[1] == oi else tn[0], to[2] if to[1] == ni else to[0])
                margins.append((sc, sc - second))
            self._margins = (scored, margins)
        return count

    def _assignment(
        self, scored: list[tuple[float, int, int]], ents: list[tuple[Any, Any, Any]]
    ) -> tuple[
        list[tuple[Any, Any, Any, int]], dict[Any, dict[Any, Any]], dict[Any, dict[Any, Any]]
    ]:
        """A round's first heap of ``scored`` (``ents``: the same list) and each function's
        rival scores (old -> new -> score, new -> old -> score): the last round's when it
        read these very pairs and took and re-scored none (either drops ``_heap0``)."""
        kept = self._heap0
        if kept is not None and kept[0] is scored:
            return kept[1][:], kept[2], kept[3]
        heap: list[tuple[Any, Any, Any, int]] = []
        # (every function read by the round is one of ``scored``: plain dicts, by ``get``)
        alive_o: dict[Any, dict[Any, Any]] = {}
        alive_n: dict[Any, dict[Any, Any]] = {}
        for ent in ents:
            sx, po, pn = ent
            heap.append((-sx, po, pn, 0))
            ao = alive_o.get(po)
            if ao is None:
                alive_o[po] = {pn: sx}
            else:
                ao[pn] = sx
            an = alive_n.get(pn)
            if an is None:
                alive_n[pn] = {po: sx}
            else:
                an[po] = sx
        heapq.heapify(heap)
        self._heap0 = (scored, heap[:], alive_o, alive_n)
        return heap, alive_o, alive_n

    def _top(
        self, scan: int, alive: dict[int, float], matched: list[int]
    ) -> tuple[float, int, float]:
        """(best, its index, second best) score among the free candidates in ``alive``
        (``matched``: the match state of their side by function index, -1 unmatched)."""
        self.spend(1 + len(alive) // scan)
        b1, who, b2 = 0.0, -1, 0.0
        for other, t in alive.items():
            if matched[other] >= 0:
                continue
            if t > b1 or (t == b1 and who >= 0 and other < who):
                b1, who, b2 = t, other, b1
            elif t > b2:
                b2 = t
        return b1, who, b2

    def gap_align(self, threshold: float) -> int:
        """Order-preserving alignment of the unmatched functions between two consecutive
        anchors (a diff of the two function sequences, weighted by similarity).

        Families of near-identical functions (template instances, per-parameter copies)
        defeat content similarity, but the linker keeps them in source order: inside a gap
        the best non-crossing assignment pairs them in order. Matches made here whose
        content alone does not single them out are flagged for review.
        """
        self.stage = "alignment"
        if self.exhausted():
            return 0
        self.update_anchors()
        ao, an = self.anchor_o, self.anchor_n
        if ao is None:
            return 0
        OLD, NEW = self.OLD, self.NEW
        # (the match state and the imports by the dense arrays: no dict lookup per function)
        o2n_a, n2o_a, imp_o, imp_n = self.o2n_a, self.n2o_a, OLD.imp_a, NEW.imp_a
        uo = [i for i in OLD.order if o2n_a[i] < 0 and not imp_o[i]]
        un = [i for i in NEW.order if n2o_a[i] < 0 and not imp_n[i]]
        if not uo or not un:
            return 0
        bo = [self.span_o[0], *ao, self.span_o[1]]
        bn = [self.span_n[0], *an, self.span_n[1]]
        count = 0
        io = jn = 0
        nuo, nun = len(uo), len(un)
        for k in range(len(bo) - 1):
            # each side's unmatched functions below the gap's upper anchor (the walk goes
            # on past them either way); a gap's lists made only when both sides have some
            i0 = io
            hi = bo[k + 1]
            while io < nuo and uo[io] < hi:
                io += 1
            j0 = jn
            hi = bn[k + 1]
            while jn < nun and un[jn] < hi:
                jn += 1
            if i0 == io or j0 == jn:
                continue
            lo = bo[k]
            xs = [x for x in uo[i0:io] if x > lo]
            lo = bn[k]
            ys = [y for y in un[j0:jn] if y > lo]
            if not xs or not ys or len(xs) * len(ys) > self.GAP_CELLS:
                continue
            if not self.spend(len(xs) * len(ys) * 2):  # scoring + the alignment table
                break
            if len(xs) == 1 and len(ys) == 1:
                # the only unmatched function between the same two anchors on both sides
                x, y = xs[0], ys[0]
                s = self.similarity(x, y)
                same_sig = OLD.recs[x].type_sig == NEW.recs[y].type_sig
                if s >= threshold or (same_sig and s >= self.GAP_SINGLE):
                    self.accept(x, y, s, "similarity", s < REVIEW_SCORE)
                    count += 1
                continue
            count += self._align(xs, ys, threshold)
        return count

    def _align(self, xs: list[int], ys: list[int], threshold: float) -> int:
        S = [[self.similarity(x, y) for y in ys] for x in xs]
        nx, ny = len(xs), len(ys)
        # Longest common subsequence over the pairs at or above the threshold, ties broken
        # by total similarity: the diff principle (keep order, align as much as possible)
        # rather than "most similar first", which shifts whole families by one.
        best = [[0.0] * (ny + 1) for _ in range(nx + 1)]
        move = [[0] * (ny + 1) for _ in range(nx + 1)]  # 1 up, 2 left, 3 diagonal
        for i in range(1, nx + 1):
            row, prev, srow, mrow = best[i], best[i - 1], S[i - 1], move[i]
            for j in range(1, ny + 1):
                if prev[j] >= row[j - 1]:
                    v, m = prev[j], 1
                else:
                    v, m = row[j - 1], 2
                s = srow[j - 1]
                if s >= threshold and prev[j - 1] + self.ALIGN_PAIR + s > v:
                    v, m = prev[j - 1] + self.ALIGN_PAIR + s, 3
                row[j] = v
                mrow[j] = m
        pairs = []
        i, j = nx, ny
        while i > 0 and j > 0:
            m = move[i][j]
            if m == 3:
                pairs.append((i - 1, j - 1))
                i -= 1
                j -= 1
            elif m == 1:
                i -= 1
            else:
                j -= 1
        count = 0
        for i, j in reversed(pairs):
            s = S[i][j]
            rivals = [S[i][jj] for jj in range(ny) if jj != j] + [
                S[ii][j] for ii in range(nx) if ii != i
            ]
            margin = s - max(rivals, default=0.0)
            review = s < REVIEW_SCORE or margin < REVIEW_MARGIN
            self.accept(xs[i], ys[j], s, "similarity", review)
            count += 1
        return count

    # ---------------------------------------------------------------- leftovers
    def stage_equal_groups(self) -> int:
        """Identical bodies (or shapes) left in groups of equal size: pair by index order,
        flagged for review (the code is the same, which alias is which is a guess)."""
        count = 0
        for attr, score in (("body_hash", 0.9), ("shape_hash", 0.85)):
            go: dict[str, list[int]] = defaultdict(list)
            gn: dict[str, list[int]] = defaultdict(list)
            for i in self.unmatched_old():
                r = self.OLD.recs[i]
                if getattr(r, attr) and not r.imported:
                    go[getattr(r, attr)].append(i)
            for i in self.unmatched_new():
                r = self.NEW.recs[i]
                if getattr(r, attr) and not r.imported:
                    gn[getattr(r, attr)].append(i)
            for h in sorted(go, key=partial(_first, go)):
                xs, ys = go[h], gn.get(h)
                if not ys or len(xs) != len(ys):
                    continue
                if any(self.callee_check(x, y)[1] for x, y in zip(xs, ys, strict=True)):
                    continue  # the order pairing contradicts matched callees
                for x, y in zip(xs, ys, strict=True):
                    self.accept(x, y, score, "body" if attr == "body_hash" else "shape", True)
                    count += 1
        return count

    def stage_minified_imports(self) -> None:
        go: dict[tuple[str, str], list[int]] = defaultdict(list)
        gn: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in self.unmatched_old():
            r = self.OLD.recs[i]
            if r.imported and r.import_name:
                go[(r.import_name, r.type_sig)].append(i)
        for i in self.unmatched_new():
            r = self.NEW.recs[i]
            if r.imported and r.import_name:
                gn[(r.import_name, r.type_sig)].append(i)
        for key in sorted(go):
            xs, ys = go[key], gn.get(key)
            if ys and len(xs) == 1 and len(ys) == 1:
                # minified names are handed out in order: the same slot is some evidence
                if xs[0] == ys[0]:
                    self.accept(xs[0], ys[0], 0.75, "import")
                else:
                    self.accept(xs[0], ys[0], 0.5, "import", True)


def _put(weight: dict[int, float], k: int, w: float, side: int) -> None:
    """One candidate's evidence into ``weight``: set from the new side (1, the first
    way), else the larger of the two."""
    if side:
        weight[k] = w
    else:
        weight[k] = max(weight.get(k, 0.0), w)


def _first(groups: dict, k: object) -> int:
    return groups[k][0]
