"""Look-alike families and wrapper splits: context decides, or the pair is flagged.

Two checks run over the matched pairs after the exact stages and again at the end.

**Wrapper splits** (an inlining difference: one build has ``F`` with the body inlined, the
other a thin wrapper ``F`` that calls the body ``F_internal``). Body similarity pairs the old
``F`` with the new body; the name belongs to the wrapper. For a matched pair ``(o, n)`` and a
thin unmatched function ``w`` of the same side as ``n`` that calls ``n`` (or, read
backwards, of the same side as ``o`` calling ``o``), the context of ``o`` votes between
``n`` and ``w``: matched callers of ``o`` whose images call ``w`` or ``n``, matched callers
of ``w``/``n`` whose originals do not call ``o`` (against), the type signature, and both
being roots (no callers: an API entry). The wrapper wins -> re-paired (flagged unless
callers back it and none contradict); a tie -> kept and flagged.

**Look-alike families**: functions of one side with the same signature and the same
instruction stream (methods of one type, closures, template instances, twins differing in
one constant). A matched pair with a look-alike on either side needs more than its body: the
*context* score (matched callers that call the other side's function, at the same position
of their call sequence; matched callees that map onto its callees; the nearest matched
non-family neighbours in function order at the same offset) must put it ahead of every
alternative pairing inside the family, or its body must single it out (same normalised shape
while no rival has it). Where the context prefers a swap with another pair of the family,
the two are swapped; where nothing decides (a tie, or context against body), the pair is
flagged for review.

A flagged pair never keeps a score at or above ``REVIEW_SCORE``
(:meth:`cap_flagged`): a diff never shows an undecided look-alike as ``unchanged`` or
``moved`` with a confident score.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence

from ..records import Match
from .base import REVIEW_SCORE, MatcherBase, _Images, _Side, new_match
from .features import size_ratio

WRAPPER_MAX_INSTR = 32  # a thin wrapper: at most this many instructions ...
INLINE_MIN_EXTRA = 8  # instructions ``a`` has beyond ``b`` before an inlining is considered
INLINE_SIZE = (0.25, 2.0)  # an inliner's size over what ``a`` has beyond ``b``
# callers of the old function agreeing before a re-pairing to an inliner (or to a thin
# function that calls more than the body) is unflagged (measured on the TUNE programs of
# benchmarks/optlevels.py: such re-pairings backed by one or two callers were wrong in about
# a third of the cases, by three or more never)
INLINE_BACKING = 3
FAMILY_RIVALS = 8  # rivals of one pair looked at (nearest in index order)
HOOD_CAP = 64  # callers looked at per function
FLAGGED_SCORE = round(REVIEW_SCORE - 0.01, 4)  # the highest score a flagged pair keeps
CONTEXT_LEAD = 0.5  # context decides when this far ahead of every rival pairing (a position)
CONTEXT_AGAINST = 0.5  # ... and is against a pair when a rival is this far ahead
NAMED = ("name", "import")  # pairs by a name both binaries carry: never second-guessed
BODY_LEAD = 0.02  # content similarity lead over every rival pairing for the body to decide
DROP_ALL = 16  # the images' cache cleared when it holds at most this many per changed match


def _family_key(rec) -> tuple[str, bytes] | None:
    if rec.imported or not rec.ops:
        return None
    return (rec.type_sig, rec.ops)


class FamilyStage(MatcherBase):
    # ---------------------------------------------------------------- bookkeeping
    def unaccept(self, o: int, n: int) -> None:
        """Undo a match (a re-pairing); the neighbours get looked at again."""
        del self.o2n[o]
        del self.n2o[n]
        self.o2n_a[o] = -1
        self.n2o_a[n] = -1
        del self.result[n]
        if self._img_cache:
            self._img_touched.append(o)
        if self._wv_chg is not None:
            self.stamp_change(o, n)
        d = self._anchor_dirty
        if d is None or o < d:
            self._anchor_dirty = o
        if o in self.OLD.in_table or n in self.NEW.in_table:
            self._table_ver += 1
        self._scored = None

    def _families(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        """The families of each side (old, new): family number -> index-sorted members. A
        family is a family key (:func:`_family_key`); its number (one for both sides, in
        order of first sight, old side first) stands for the key everywhere, and each
        function's number is kept by index (:meth:`_fam_of`; -1: no key)."""
        cache = self._fam_cache
        if cache is None:
            ids: dict[tuple[str, bytes], int] = {}
            got: list[tuple[dict[int, list[int]], list[int]]] = []
            for side in (self.OLD, self.NEW):
                fams: dict[int, list[int]] = {}
                of = [-1] * (side.order[-1] + 1 if side.order else 0)
                for i in side.order:
                    k = _family_key(side.recs[i])
                    if k is not None:
                        f = ids.setdefault(k, len(ids))
                        of[i] = f
                        g = fams.get(f)
                        if g is None:
                            fams[f] = [i]
                        else:
                            g.append(i)
                got.append((fams, of))
            cache = (got[0][0], got[1][0])
            self._fam_ids = (got[0][1], got[1][1])
            self._fam_cache = cache
        return cache

    def _fam_of(self, i: int, old: bool) -> int:
        """The family number of function ``i`` (old side if ``old``), -1 without a key."""
        if self._fam_cache is None:
            self._families()
        of = self._fam_ids[0 if old else 1]
        return of[i] if 0 <= i < len(of) else -1

    # ---------------------------------------------------------------- wrapper splits
    def stage_wrapper_splits(self) -> int:
        """Re-pair (or flag) matched pairs next to a wrapper split; returns re-pairings."""
        moved = 0
        prev, self.stage = self.stage, "family"
        if self._wv_chg is None:  # from now on every change of a match is stamped
            self._wv_chg = ([0] * self.OLD.size, [0] * self.NEW.size)
        try:
            for n in sorted(self.result):
                if self.exhausted():
                    break
                moved += self._wrapper_pair(n)
        finally:
            self.stage = prev
        return moved

    def _wrapper_pair(self, n: int) -> int:
        m = self.result.get(n)
        if m is None or m.method in NAMED or self.NEW.imp_a[n]:
            return 0
        # a pair voted before, its match the same object since (a flag replaces it; a
        # second flag would change nothing) and none of the functions its votes read
        # changed its match since: the same votes again, with no effect; charged alike
        seen = self._wv_seen.get(n)
        if seen is not None and seen[0] is m:
            chg = self._wv_chg
            assert chg is not None
            t = seen[1]
            if chg[0][m.old_index] <= t and chg[1][n] <= t:
                self.spend(seen[2])
                return 0
        work = self.stats.work
        before = work[self.stage]
        self._wv_twin = False
        got = self._wrapper_vote(m, forward=True)
        m2 = self.result.get(m.new_index)
        if got is None and m2 is not None and m2.method not in NAMED:
            got = self._wrapper_vote(m2, forward=False)
        if not got and not self._wv_twin:
            now = self.result.get(n)
            if now is not None:
                self._wv_seen[n] = (now, self._wv_clock, work[self.stage] - before)
        return int(bool(got))

    def _wrapper_vote(self, m: Match, forward: bool) -> bool | None:
        """``forward``: a new wrapper calling ``n``; else an old wrapper calling ``o``.

        Returns None when no thin wrapper calls the pair's far side, True on a re-pairing."""
        if forward:
            a, b, A, B, a2b, b2a = m.old_index, m.new_index, self.OLD, self.NEW, self.o2n, self.n2o
        else:
            a, b, A, B, a2b, b2a = m.new_index, m.old_index, self.NEW, self.OLD, self.n2o, self.o2n
        # (the sides' dense arrays by function index: no attribute read of a record)
        cnt_b, imp_b, sig_b = B.count_a, B.imp_a, B.sig_a
        sig_a = A.sig_a[a]
        callers_b = B.callers_a[b]
        self.spend(1 + len(callers_b))
        least = min(cnt_b[b], A.count_a[a])
        thin = [
            w
            for w in callers_b
            if w not in b2a and not imp_b[w] and cnt_b[w] <= WRAPPER_MAX_INSTR and cnt_b[w] < least
        ]
        if not thin:
            return self._inliner_vote(m, a, b, A, B, a2b, b2a, forward)
        backed_b = self._backing(a, b, A, B, a2b)
        root = not A.callers[a]
        votes = [(self._backing(a, w, A, B, a2b), w) for w in thin]
        keep_sig = [(v, w) for v, w in votes if sig_b[w] == sig_a]
        twin = len(self._families()[0 if forward else 1].get(self._fam_of(a, forward), ())) > 1
        doubt = any(v for v, _ in votes) or (
            root and any(not B.callers_a[w] and sig_b[w] == sig_a for w in thin)
        )
        if len(keep_sig) == 1 and not twin:
            backed_w, w = keep_sig[0]
            w_root = not B.callers_a[w]
            private = all(c == w for c in callers_b)  # the body serves only the wrapper
            if backed_w and not backed_b:
                # a pure wrapper (calls nothing else of the module) or enough callers: sure;
                # a small function calling more (a helper the callers inlined on the other
                # side, yindex around luaK_exp2val) may be the wrong one: re-paired, flagged
                pure = all(c == b or imp_b[c] for c in B.callees_a[w])
                self._repair(m, a, w, forward, review=not pure and backed_w < INLINE_BACKING)
                return True
            if (
                not backed_w
                and not backed_b
                and root
                and w_root
                and private
                and not self._unmatched_twin(a, A, a2b)
            ):
                self._repair(m, a, w, forward, review=True)
                return True
        if doubt and (backed_b == 0 or any(v for v, _ in votes)):
            self.flag(m.old_index, m.new_index)
        return False

    def _inliner_vote(
        self, m: Match, a: int, b: int, A: _Side, B: _Side, a2b: dict, b2a: dict, forward: bool
    ) -> bool | None:
        """An inlining difference with a caller that is no thin wrapper: ``a`` has ``b``'s
        body inlined (or ``b`` is ``a``'s outlined part) and an unmatched caller ``w`` of
        ``b`` with ``a``'s signature is where ``a``'s callers went. ``a``'s matched callers
        decide: some call ``w`` and none calls ``b`` -> re-paired (flagged unless at least
        ``INLINE_BACKING`` callers agree); callers split between the two -> flagged."""
        extra = A.count_a[a] - B.count_a[b]  # what ``a`` has beyond ``b``: ``w``'s own code
        if extra < INLINE_MIN_EXTRA:
            return None  # too little inlined code to tell (checked first: the common case)
        sh = A.shape_a[a]
        if (sh and sh == B.shape_a[b]) or A.body_a[a] == B.body_a[b]:
            return None  # the same code has no inlining difference
        if len(self._families()[0 if forward else 1].get(self._fam_of(a, forward), ())) > 1:
            return None  # a look-alike (families decide)
        imp_b, sig_b, cnt_b = B.imp_a, B.sig_a, B.count_a
        sig_a = A.sig_a[a]
        inliners = [
            w
            for w in B.callers_a[b]
            if w not in b2a
            and not imp_b[w]
            and sig_b[w] == sig_a
            and extra * INLINE_SIZE[0] <= cnt_b[w] <= extra * INLINE_SIZE[1]
        ]
        if not inliners:
            return None
        backed_b = self._backing(a, b, A, B, a2b)
        votes = sorted(((self._backing(a, w, A, B, a2b), w) for w in inliners), reverse=True)
        best, w = votes[0]
        if best == 0:
            return None
        runner_up = votes[1][0] if len(votes) > 1 else 0
        if backed_b == 0 and runner_up == 0:
            self._repair(m, a, w, forward, review=best < INLINE_BACKING)
            return True
        if best >= backed_b:
            self.flag(m.old_index, m.new_index)
        return False

    def _unmatched_twin(self, a: int, A: _Side, a2b: dict) -> bool:
        """An unmatched function of ``a``'s side with its signature and about its size (it
        may be the one the wrapper inlined): scanned only for the rare root-only case."""
        self._wv_twin = True  # (reads the match state of the whole side)
        ra = A.recs[a]
        memo = self._sig_sizes
        by_sig = memo.get(id(A))
        if by_sig is None:  # signature -> [(instr_count, index)], sorted (static)
            by_sig = defaultdict(list)
            for x in A.order:
                if not A.recs[x].imported:
                    by_sig[A.recs[x].type_sig].append((A.recs[x].instr_count, x))
            for v in by_sig.values():
                v.sort()
            memo[id(A)] = by_sig
        lst = by_sig.get(ra.type_sig, [])
        k = bisect.bisect_left(lst, (int(ra.instr_count * 0.8), -1))
        for scanned, (cnt, x) in enumerate(lst[k:]):
            if size_ratio(cnt, ra.instr_count) < 0.8 and cnt > ra.instr_count:
                return False
            if not self.spend(1) or scanned >= HOOD_CAP * 4:
                return True  # not looked at further: assume a twin (keeps the pair, flagged)
            if x != a and x not in a2b and size_ratio(cnt, ra.instr_count) >= 0.8:
                return True
        return False

    def _repair(self, m: Match, a: int, w: int, forward: bool, review: bool) -> None:
        self.unaccept(m.old_index, m.new_index)
        o, n = (a, w) if forward else (w, a)
        self.accept(o, n, FLAGGED_SCORE if review else 0.7, "callgraph", review)

    def _backing(self, a: int, x: int, A: _Side, B: _Side, a2b: dict) -> int:
        """Callers of ``a`` whose images call ``x``."""
        callees_b = B.callees_a
        return sum(
            1
            for c in A.callers_a[a][:HOOD_CAP]
            if (y := a2b.get(c)) is not None and x in callees_b[y]
        )

    def flag(self, o: int, n: int) -> None:
        if self._img_cache:
            self._img_touched.append(o)
        m = self.result[n]
        if not m.review or m.score > FLAGGED_SCORE:
            self.result[n] = new_match(o, n, min(m.score, FLAGGED_SCORE), m.method, True)

    # ---------------------------------------------------------------- families
    def review_families(self) -> int:
        """Swap or flag matched look-alikes the context does not decide; returns how many
        pairs were flagged or re-paired."""
        prev, self.stage = self.stage, "family"
        try:
            return self._review_families()
        finally:
            self.stage = prev

    def _family_keys(self) -> tuple[list[int], list[int], set[int], set[int]]:
        """The family number of every function by index, old and new (-1: no key), and the
        numbers of the families with more than one member on each side (static)."""
        got = self._fam_keys
        if got is None:
            fo, fn = self._families()
            got = (
                self._fam_ids[0],
                self._fam_ids[1],
                {k for k, v in fo.items() if len(v) > 1},
                {k for k, v in fn.items() if len(v) > 1},
            )
            self._fam_keys = got
        return got

    def _review_families(self) -> int:
        fo, fn = self._families()
        keys_o, keys_n, multi_o, multi_n = self._family_keys()
        passed = self._passed
        clean = self._clean_families(fo, fn)
        flagged = 0
        imp_n = self.NEW.imp_a
        for n in sorted(self.result):
            if self.exhausted():
                break
            m = self.result.get(n)
            if m is None or m.review or m.method in NAMED or imp_n[n]:
                continue
            o = m.old_index
            ko, kn = keys_o[o], keys_n[n]
            if ko == kn and ko in clean:
                continue
            # no rival on either side (the common case), what ``_rivals`` would find without
            # looking: each function is alone in its own family (every function is in the
            # family of its key), and where the keys differ, the other side has no family
            # of the partner's key
            if (
                ko not in multi_o
                and kn not in multi_n
                and (ko == kn or (ko not in fn and kn not in fo))
            ):
                continue
            rivals_n = self._rivals(n, fn.get(ko, ()), fn.get(kn, ()))
            rivals_o = self._rivals(o, fo.get(ko, ()), fo.get(kn, ()))
            if not rivals_n and not rivals_o:
                continue
            # a pair a previous pass let stand, whose rivals are matched as they were then
            state = tuple(self.o2n.get(x) for x in rivals_o) + tuple(
                self.n2o.get(y) for y in rivals_n
            )
            if passed.get((o, n)) == state:
                continue
            self.spend(1 + len(rivals_n) + len(rivals_o))
            own = self.context(o, n)
            alt = [(self.context(o, y), o, y) for y in rivals_n]
            alt += [(self.context(x, n), x, n) for x in rivals_o]
            best_alt = max(alt)[0]
            body = self._body_decides(o, n, rivals_o, rivals_n)
            if own >= best_alt + CONTEXT_LEAD:
                if not self._body_elsewhere(o, n, rivals_o, rivals_n) and (
                    body or self._graph_lead(o, n, alt)
                ):
                    passed[(o, n)] = state
                    continue  # the context decides, the body does not object
                # else: only the function (or table) order puts the pair ahead: a twin moved
                # in the source (or the linker's order) takes its rival's place: flagged
            elif best_alt < own + CONTEXT_AGAINST:
                if body:
                    passed[(o, n)] = state
                    continue  # the body decides, the context is (nearly) silent
            elif not body and self._try_swap(o, n, alt):
                flagged += 1  # counted as a change: the caller propagates again
                continue  # the body cannot tell them apart: the context re-pairs
            self.flag(o, n)  # a tie, or context and body disagree
            flagged += 1
        return flagged

    def _body_elsewhere(self, o: int, n: int, rivals_o: list[int], rivals_n: list[int]) -> bool:
        """A rival has exactly the normalised code of ``o`` (or ``n``) while the pair differs.
        A rival the pair's function calls is no objection: that is a wrapper split (the body
        moved into the callee, the wrapper kept the callers)."""
        sh_o, sh_n = self.OLD.shape_a, self.NEW.shape_a
        so, sn = sh_o[o], sh_n[n]
        if so == sn:
            return False
        calls_n, calls_o = set(self.NEW.callees_a[n]), set(self.OLD.callees_a[o])
        return any(so and sh_n[y] == so and y not in calls_n for y in rivals_n) or any(
            sn and sh_o[x] == sn and x not in calls_o for x in rivals_o
        )

    def _clean_families(self, fo: dict, fn: dict) -> set:
        """Families matched member for member onto the same family of the other side, each
        pair byte-identical, in the same index order: nothing in them is ambiguous (the
        common case of two near-identical builds; skipped for speed)."""
        clean = set()
        body_o, body_n = self.OLD.body_a, self.NEW.body_a
        for key, xs in fo.items():
            ys = fn.get(key)
            if not ys or len(xs) != len(ys) or len(xs) < 2:
                continue
            images = [self.o2n.get(x) for x in xs]
            if images != ys:  # ys is index-sorted: same members, same order
                continue
            if all(
                body_o[x] == body_n[y] and not self.result[y].review
                for x, y in zip(xs, ys, strict=True)
            ):
                clean.add(key)
        return clean

    def _rivals(self, i: int, g1: Sequence[int], g2: Sequence[int]) -> list[int]:
        """The ``FAMILY_RIVALS`` members of two index-sorted family lists nearest to ``i``;
        bounded work per pair however large a family is (cached: families are static)."""
        cache = self._rival_cache
        key = (i, id(g1), id(g2))
        got = cache.get(key)
        if got is not None:
            return got
        near: set[int] = set()
        for g in (g1, g2) if g1 is not g2 else (g1,):
            k = bisect.bisect_left(g, i)
            near.update(g[max(0, k - FAMILY_RIVALS) : k + FAMILY_RIVALS + 1])
        near.discard(i)
        # nearest first, ties to the lower index: the (distance, index) pairs sorted (each
        # index once, so no two pairs are equal)
        ranked = sorted([(j - i if j > i else i - j, j) for j in near])
        got = [j for _, j in ranked[:FAMILY_RIVALS]]
        cache[key] = got
        return got

    def _body_decides(self, o: int, n: int, rivals_o: list[int], rivals_n: list[int]) -> bool:
        """The bodies single the pair out: matched callees agree, and either the same
        normalised code no rival shares, or a content similarity (constants, strings, op
        bigrams) ``BODY_LEAD`` ahead of every rival pairing (twins differing in a constant)."""
        if self._callees_contradict(o, n):
            return False
        sh_o, sh_n = self.OLD.shape_a, self.NEW.shape_a
        so, sn = sh_o[o], sh_n[n]
        if so and so == sn:
            return not any(sh_n[y] == so for y in rivals_n) and not any(
                sh_o[x] == sn for x in rivals_o
            )
        own = self._content_score(o, n)
        best = max(
            [self._content_score(o, y) for y in rivals_n]
            + [self._content_score(x, n) for x in rivals_o],
            default=0.0,
        )
        return own >= best + BODY_LEAD

    def _content_score(self, o: int, n: int) -> float:
        total, wsum = self.content(o, n)
        return total / wsum if wsum else 0.0

    def _try_swap(self, o: int, n: int, alt: list[tuple[float, int, int]]) -> bool:
        """Swap with a rival pair (or move to a free rival) when the context is better."""
        own = self.context(o, n)
        for c, x, y in sorted(alt, reverse=True):
            if c <= own:
                break
            if x == o:  # (o, y) wanted: y's partner o2 (if any) takes n
                o2 = self.n2o.get(y)
                cur, new = (
                    ([(o, n)], [(o, y)]) if o2 is None else ([(o, n), (o2, y)], [(o, y), (o2, n)])
                )
            else:  # (x, n) wanted: x's partner n2 (if any) goes to o
                n2 = self.o2n.get(x)
                cur, new = (
                    ([(o, n)], [(x, n)]) if n2 is None else ([(o, n), (x, n2)], [(x, n), (o, n2)])
                )
            if len(cur) > 1 and (
                self.result[cur[1][1]].review or self.result[cur[1][1]].method in NAMED
            ):
                continue  # never undo a pair flagged for another reason, or paired by name
            before = sum(self.context(*p) for p in cur)
            after = sum(self.context(*p) for p in new)
            if after <= before:
                continue
            for p in cur:
                self.unaccept(*p)
            clear = after - before >= 1.0
            for p in new:
                s = self.similarity(*p)
                score = min(0.95, 0.3 + 0.7 * s) if clear else FLAGGED_SCORE
                self.accept(p[0], p[1], score, "callgraph", not clear)
            return True
        return False

    def _sure(self, o: int) -> int | None:
        """The image of old ``o`` under a match not itself flagged for review."""
        n = self.o2n.get(o)
        if n is None or self.result[n].review:
            return None
        return n

    def _table_informative(self) -> bool:
        """The function table's order says something the function order does not: on either
        side some table entries are not in function-index order (a toolchain that lays the
        table out in function order, like Go's, repeats the function order)."""
        got = self._table_info
        if got is None:
            got = any(
                any(a > b for a, b in zip(t, t[1:], strict=False))
                for t in (self.OLD.table, self.NEW.table)
            )
            self._table_info = got
        return got

    def _graph_lead(self, o: int, n: int, alt: list[tuple[float, int, int]]) -> bool:
        """The call graph (callers and callees) and a table order of its own put ``(o, n)``
        ahead of every rival pairing in ``alt``, without the order of the functions."""
        own = self.context(o, n, positions=False)
        return all(own > self.context(x, y, positions=False) for _, x, y in alt)

    def context(self, o: int, n: int, positions: bool = True) -> float:
        """Call-graph and order evidence for pairing ``o`` with ``n`` (counts, not a ratio);
        only matches not flagged for review count as evidence. ``positions=False``: the
        call graph only, and the table order where it is not the function order."""
        caller_imgs, callee_imgs, order_nb, table_nb = self._images(o)
        score = 0.0
        for d, pos in caller_imgs:
            at = self._callee_pos(d).get(n)
            if at is not None:
                score += 1.5 if at == pos else 1.0  # + same place in the call sequence
        if callee_imgs:
            # (``len(callee_imgs & callees)``: the callees are distinct, so a count)
            shared = 0
            for y in self.NEW.callees_a[n]:
                if y in callee_imgs:
                    shared += 1
            score += shared
        if positions:
            for off, y in order_nb:  # matched neighbours in function order at the same offset
                if y - n == off:
                    score += 0.5
        if table_nb and (positions or self._table_informative()):
            # ... and in the function table's order (explicit data: weight 1)
            pos_n = self._pos("table_new")
            at = pos_n.get(n)
            if at is not None:
                for off, y in table_nb:
                    if pos_n.get(y, -1) - at == off:
                        score += 1.0
        return score

    def _images(self, o: int) -> _Images:
        """What ``o``'s context is made of, under sure matches: images of its callers (with
        ``o``'s place in each caller's call sequence), of its defined callees, and of its
        nearest non-look-alike neighbours in function and table order (with their offset);
        cached until the sure match of one of these functions changes."""
        cache = self._img_cache
        if self._img_touched:
            self._drop_images()
        got = cache.get(o)
        if got is not None:
            return got
        OLD = self.OLD
        callers: list[tuple[int, int]] = []
        for c in OLD.callers_a[o][:HOOD_CAP]:
            d = self._sure(c)
            if d is not None:
                callers.append((d, OLD.callees_a[c].index(o)))
        callees: set[int] = set()
        imp_o = OLD.imp_a
        for c in OLD.callees_a[o]:
            if not imp_o[c]:
                d = self._sure(c)
                if d is not None:
                    callees.add(d)
        order_nb: list[tuple[int, int]] = []
        table_nb: list[tuple[int, int]] = []
        rev = self._img_nb_rev
        for step in (-1, 1):
            nb = self._neighbour("order", o, step)
            if nb is not None:
                rev.setdefault(nb[0], set()).add(o)
                if (y := self._sure(nb[0])) is not None:
                    order_nb.append((nb[0] - o, y))
            if self.OLD.table and self.NEW.table:
                nb = self._neighbour("table", o, step)
                if nb is not None:
                    rev.setdefault(nb[0], set()).add(o)
                    if (y := self._sure(nb[0])) is not None:
                        table_nb.append((nb[1], y))
        value = (callers, callees, order_nb, table_nb)
        cache[o] = value
        return value

    def _drop_images(self) -> None:
        """Forget the images that read the sure match of a queued old function: those of
        its callees (it may be one of their callers), of its callers (it is their callee)
        and of the functions it is the nearest order or table neighbour of."""
        touched, self._img_touched = self._img_touched, []
        cache = self._img_cache
        if len(touched) * DROP_ALL >= len(cache):
            cache.clear()
            return
        OLD, rev = self.OLD, self._img_nb_rev
        for x in touched:
            for y in OLD.callees_a[x]:
                cache.pop(y, None)
            for y in OLD.callers_a[x]:
                cache.pop(y, None)
            nbs = rev.get(x)
            if nbs is not None:
                for y in nbs:
                    cache.pop(y, None)

    def _callee_pos(self, d: int) -> dict[int, int]:
        cache = self._cpos_cache
        p = cache.get(d)
        if p is None:
            p = {y: k for k, y in enumerate(self.NEW.callees_a[d])}
            cache[d] = p
        return p

    def _callees_contradict(self, o: int, n: int) -> bool:
        """A callee of ``o`` surely matched to a function ``n`` does not call."""
        callees_n = set(self.NEW.callees_a[n])
        for c in self.OLD.callees_a[o]:
            d = self._sure(c)
            if d is not None and d not in callees_n:
                return True
        return False

    def _neighbour(self, which: str, o: int, step: int) -> tuple[int, int] | None:
        """(x, offset) of the nearest defined non-look-alike of ``o`` in an old sequence
        (``order`` or ``table``) within ``FAMILY_RIVALS`` places; cached (static)."""
        cache = self._nb_cache
        key = (which, o, step)
        if key in cache:
            return cache[key]
        seq = self.OLD.order if which == "order" else self.OLD.table
        pos = self._pos(which).get(o)
        found = None
        if pos is not None:
            fid = self._fid_old()
            own = fid.get(o)
            imp_o = self.OLD.imp_a
            k = pos + step
            while 0 <= k < len(seq) and abs(k - pos) <= FAMILY_RIVALS:
                x = seq[k]
                if not imp_o[x] and (own is None or fid.get(x) != own):
                    found = (x, k - pos)
                    break
                k += step
        cache[key] = found
        return found

    def _fid_old(self) -> dict[int, int]:
        """Old index -> family number (functions with a family key only)."""
        f = self._fid_cache
        if f is None:
            f = {i: k for k, g in enumerate(self._families()[0].values()) for i in g}
            self._fid_cache = f
        return f

    def _pos(self, which: str) -> dict[int, int]:
        cache = self._pos_caches
        p = cache.get(which)
        if p is None:
            seq = {"order": self.OLD.order, "table": self.OLD.table, "table_new": self.NEW.table}
            p = {i: k for k, i in enumerate(seq[which])}
            cache[which] = p
        return p

    # ---------------------------------------------------------------- invariant
    def cap_flagged(self) -> None:
        """No flagged pair keeps a score at or above the review threshold."""
        for n, m in list(self.result.items()):
            if m.review and m.score > FLAGGED_SCORE:
                self.result[n] = new_match(m.old_index, n, FLAGGED_SCORE, m.method, True)
