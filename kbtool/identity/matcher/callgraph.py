"""Stage 5: call-graph propagation from matched pairs to callees and callers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial

from .base import REVIEW_SCORE, _plausible_size, bisect_ints
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
                k = self.queue.popleft()
                self.queued.discard(k)
                o = k >> 32
                n = k & 0xFFFFFFFF
                lo, ln = OLD.callees_a[o], NEW.callees_a[n]
                co, cn = OLD.callers_a[o], NEW.callers_a[n]
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

    def _resolve(self, lo: tuple[int, ...], ln: tuple[int, ...], ordered: bool) -> None:
        # every per-function read below is from the sides' dense arrays by function index
        # (the match state ``o2n_a``/``n2o_a``, -1 unmatched; hashes, signatures, sizes)
        SO, SN = self.OLD, self.NEW
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        # the function tables (thousands of entries, looked at after every queue): what
        # depends only on which of their functions are matched is derived once per state
        table = lo is SO.table and ln is SN.table
        if table:
            uo, un = self.table_memo("hood", partial(_unmatched, lo, ln, o2n_a, n2o_a))
            if not uo or not un:
                return
        else:
            uo = _free(lo, o2n_a)
            if not uo:
                return
            un = _free(ln, n2o_a)
            if not un:
                return
        sig_o, sig_n = SO.sig_a, SN.sig_a

        # (a) hash groups inside the neighbourhood
        for body, score in ((True, 0.99), (False, 0.97)):
            ho, hn = (SO.body_a, SN.body_a) if body else (SO.shape_a, SN.shape_a)
            hs = SN.body_set if body else SN.shape_set
            if table:
                groups, shapes_o, shapes_n = self.table_memo(
                    "body_hash" if body else "shape_hash",
                    partial(_hash_groups, ho, hn, hs, SO.shape_a, SN.shape_a, uo, un, body, True),
                )
            else:
                groups, shapes_o, shapes_n = _hash_groups(
                    ho, hn, hs, SO.shape_a, SN.shape_a, uo, un, body, ordered
                )
            hit = False
            for xs, ys in groups:
                pairs = list(zip(xs, ys, strict=True))
                checks = [self.callee_check(x, y) for x, y in pairs]
                if any(c[1] for c in checks):
                    continue
                if body and len(xs) == 1:
                    x, y = xs[0], ys[0]
                    assert shapes_o is not None and shapes_n is not None
                    dup = shapes_o[SO.shape_a[x]] > 1 or shapes_n[SN.shape_a[y]] > 1
                    agree, _, total = checks[0]
                    if dup and (total == 0 or agree < total):
                        continue
                # several equal bodies called in the same order: pair by call position
                s = score if len(xs) == 1 else score - 0.04
                for x, y in pairs:
                    self.accept(x, y, s, "callgraph")
                hit = True
            if hit:
                uo = _free(uo, o2n_a)
                un = _free(un, n2o_a)
                if not uo or not un:
                    return

        # (b) imports (no body): the only unmatched import pair with the same signature
        imp_o, imp_n = SO.imp_a, SN.imp_a
        io = [x for x in uo if imp_o[x]]
        inn = [y for y in un if imp_n[y]]
        if io and inn:
            self._resolve_imports(io, inn)
            uo = _free(uo, o2n_a)
            un = _free(un, n2o_a)
        if io:
            uo = [x for x in uo if not imp_o[x]]
        if inn:
            un = [y for y in un if not imp_n[y]]
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
            same = sig_o[x] == sig_n[y]
            if s >= (self.CG_SINGLE if same else self.CG_SINGLE_XSIG):
                self.accept(x, y, self._cg_score(s), "callgraph", self._cg_score(s) < REVIEW_SCORE)
            return

        # (d) a signature unique in both neighbourhoods, provided the neighbourhood is not
        # full of look-alikes (a signature change can make the wrong pair the unique one)
        so: dict[str, list[int]] = defaultdict(list)
        sn: dict[str, list[int]] = defaultdict(list)
        for x in uo:
            so[sig_o[x]].append(x)
        for y in un:
            sn[sig_n[y]].append(y)
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
            cnt_o, cnt_n = SO.count_a, SN.count_a
            cx, cy = cnt_o[x], cnt_n[y]
            rivals = [(x, y2) for y2 in un if y2 != y and _plausible_size(cx, cnt_n[y2])]
            rivals += [(x2, y) for x2 in uo if x2 != x and _plausible_size(cnt_o[x2], cy)]
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
            uo = _free(uo, o2n_a)
            un = _free(un, n2o_a)
            if not uo or not un:
                return

        # (e) position between matched anchors in the call sequence
        if ordered:
            self._resolve_gaps(lo, ln)
            uo = _free(uo, o2n_a)
            un = _free(un, n2o_a)
            if not uo or not un:
                return

        # (f) a clear mutual best inside the small neighbourhood
        self._resolve_best(uo, un)

    def _best_value(self, k: int, plain: dict[int, float], tails: dict[int, tuple]) -> float:
        """A pair's score of :meth:`_resolve_best` at its state (its tail kept), once (the
        pair ``(x, y)`` keyed by one int, ``x << 32 | y``)."""
        v = plain.get(k)
        if v is None:
            x, y = k >> 32, k & 0xFFFFFFFF
            v = plain[k] = self.score(x, y, self.content(x, y), tails[k], False)
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

    def _resolve_gaps(self, lo: tuple[int, ...], ln: tuple[int, ...]) -> None:
        """Callees between the same two matched anchors of both call sequences."""
        if lo is self.OLD.table and ln is self.NEW.table:
            pairs = self.table_memo("gaps", partial(self._gap_pairs, lo, ln))
        else:
            pairs = self._gap_pairs(lo, ln)
        for x, y in pairs:
            s = self.similarity(x, y)
            if s >= self.CG_GAP:
                self.accept(x, y, self._cg_score(s), "callgraph")

    def _gap_pairs(self, lo: tuple[int, ...], ln: tuple[int, ...]) -> list[tuple[int, int]]:
        """The pairs of :meth:`_resolve_gaps`, in gap order: one unmatched function of each
        side alone in a gap, of one signature (a pure function of which functions of the
        two lists are matched, and to what)."""
        SO, SN = self.OLD, self.NEW
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        # the positions of the unmatched defined functions (a pair is taken only from a gap
        # holding one of each; accepting one changes no other gap: positions are distinct)
        imp_o, imp_n = SO.imp_a, SN.imp_a
        ui = [i for i, x in enumerate(lo) if o2n_a[x] < 0 and not imp_o[x]]
        if not ui:
            return []
        uj = [j for j, y in enumerate(ln) if n2o_a[y] < 0 and not imp_n[y]]
        if not uj:
            return []
        # the anchors: the matched entries of lo whose image sits in ln after every earlier
        # anchor's (a walk keeping the last anchor's position), i.e. where the running
        # maximum of the images' positions in ln (-1: no image there) goes up
        ai = [-1]
        aj = [-1]
        top = -1
        if ln is SN.table:  # (the table's positions: a dense array, -1 outside it)
            tpos = SN.tpos_a
            for i, x in enumerate(lo):
                m = o2n_a[x]
                if m >= 0:
                    p = tpos[m]
                    if p > top:
                        top = p
                        ai.append(i)
                        aj.append(p)
        else:
            where = SN.position(ln)
            for i, x in enumerate(lo):
                m = o2n_a[x]
                if m >= 0:
                    p = where.get(m, -1)
                    if p > top:
                        top = p
                        ai.append(i)
                        aj.append(p)
        if len(ai) == 1:
            return []
        # the gaps (k: between bounds k and k + 1) holding exactly one unmatched function of
        # each side, in gap order, as a walk over every gap meets them
        ai.append(len(lo))
        aj.append(len(ln))
        gx: dict[int, int] = {}
        for i in ui:
            k = bisect_ints(ai, i) - 1
            gx[k] = -1 if k in gx else i
        gy: dict[int, int] = {}
        for j in uj:
            k = bisect_ints(aj, j) - 1
            gy[k] = -1 if k in gy else j
        sig_o, sig_n = SO.sig_a, SN.sig_a
        pairs = []
        for k in sorted(gx):
            i, j = gx[k], gy.get(k, -1)
            if i >= 0 and j >= 0:
                x, y = lo[i], ln[j]
                if sig_o[x] == sig_n[y]:
                    pairs.append((x, y))
        return pairs

    def _resolve_best(self, uo: list[int], un: list[int]) -> None:
        """A pair clearly ahead of every other pair of the neighbourhood that shares one of
        its functions. Rivals are compared without the signature penalty, so a changed
        signature cannot hand the win to a look-alike that happens to keep the old one."""
        cnt_o, cnt_n = self.OLD.count_a, self.NEW.count_a
        # each pair (x, y) keyed by one int, ``x << 32 | y`` (indices are below 2**32): no
        # tuple per pair in the tables below; ordered as the tuples are
        pairs = [(x << 32) | y for x in uo for y in un if _plausible_size(cnt_o[x], cnt_n[y])]
        # every pair is scored at this state (work charged as by ``similarity``): its tail
        # kept, its content similarity (op histograms) computed only where the bound cannot
        # decide; a value computed later is the one of this state (the tail kept)
        tails: dict[int, tuple] = {}
        bound: dict[int, float] = {}
        for k in pairs:
            x, y = k >> 32, k & 0xFFFFFFFF
            self.charge(x, y)
            t = tails[k] = self.tail(x, y)
            bound[k] = self.score(x, y, self.content_bound(x, y), t, False)
        plain: dict[int, float] = {}

        by_o: dict[int, list[int]] = defaultdict(list)
        by_n: dict[int, list[int]] = defaultdict(list)
        for k in pairs:
            by_o[k >> 32].append(k)
            by_n[k & 0xFFFFFFFF].append(k)
        # the pairs at or above CG_BEST (none whose bound is below), best first
        best = [(self._best_value(k, plain, tails), k) for k in pairs if bound[k] >= self.CG_BEST]
        best = [(p, k) for p, k in best if p >= self.CG_BEST]
        best.sort(key=lambda pk: (-pk[0], pk[1]))
        margin = self.CG_BEST_MARGIN
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        for p, k in best:
            x, y = k >> 32, k & 0xFFFFFFFF
            if o2n_a[x] >= 0 or n2o_a[y] >= 0:
                continue
            s = self.similarity(x, y)
            if s < self.CG_BEST:
                continue
            # p - (the best free rival, 0.0 without one) >= margin: every free rival at least
            # the margin behind (float subtraction is monotone), by its bound when it suffices
            rivals = [r for r in by_o[x] if r != k and n2o_a[r & 0xFFFFFFFF] < 0]
            rivals += [r for r in by_n[y] if r != k and o2n_a[r >> 32] < 0]
            if all(
                p - bound[r] >= margin or p - self._best_value(r, plain, tails) >= margin
                for r in rivals
            ) and (rivals or p - 0.0 >= margin):
                self.accept(x, y, self._cg_score(s), "callgraph")


def _free(seq: Sequence[int], image: list[int]) -> list[int]:
    """The entries of ``seq`` without an image (``image[x] < 0``: unmatched), in order."""
    return [x for x in seq if image[x] < 0]


def _unmatched(
    lo: tuple[int, ...], ln: tuple[int, ...], o2n_a: list[int], n2o_a: list[int]
) -> tuple[list[int], list[int]]:
    """The unmatched functions of two neighbour lists, in list order."""
    return [x for x in lo if o2n_a[x] < 0], [y for y in ln if n2o_a[y] < 0]


def _hash_groups(
    ho: list[str | None],
    hn: list[str | None],
    hn_all: frozenset,
    shape_o: list[str | None],
    shape_n: list[str | None],
    uo: list[int],
    un: list[int],
    body: bool,
    ordered: bool,
) -> tuple[list[tuple[list[int], list[int]]], Counter | None, Counter | None]:
    """Step (a)'s groups of one hash (``ho``/``hn`` by function index: the body hash when
    ``body``, else the shape hash; ``hn_all``: every such hash of the new side) among the unmatched functions ``uo`` and ``un``: the
    (old, new) member lists of equal length (one each unless ``ordered``), in the old
    side's order of first appearance; with the body hash and a group, the shape counts of
    both sides too (None otherwise: nothing reads them)."""
    go: dict[str, list[int]] = {}
    for x in uo:
        h = ho[x]
        if h and h in hn_all:
            got = go.get(h)
            if got is None:
                go[h] = [x]
            else:
                got.append(x)
    if not go:
        return [], None, None
    gn: dict[str, list[int]] = {}
    for y in un:
        h = hn[y]
        if h:
            got = gn.get(h)
            if got is None:
                gn[h] = [y]
            else:
                got.append(y)
    groups = []
    for h, xs in go.items():
        ys = gn.get(h)
        if not ys or len(xs) != len(ys) or (len(xs) > 1 and not ordered):
            continue
        groups.append((xs, ys))
    shapes_o = shapes_n = None
    if body and groups:  # (read only for a group, most hoods have none)
        shapes_o = Counter(shape_o[x] for x in uo)
        shapes_n = Counter(shape_n[y] for y in un)
    return groups, shapes_o, shapes_n
