"""Matcher state shared by every stage: both sides, bookkeeping, the pair similarity."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..records import FuncRecord, Match
from .bigrams import _TYPED, append, i64, vec
from .features import FeatureCache, StorePart, is_minified_name, size_ratio

REVIEW_SCORE = 0.6  # matches scoring below this are flagged for review
REVIEW_MARGIN = 0.05  # ... and those whose best candidate is not this far ahead of the second

_SCORE = {"import": 1.0, "body": 1.0, "shape": 0.99, "name": 0.95}


# --------------------------------------------------------------------------- helpers


def _import_field_minified(import_name: str | None) -> bool:
    if not import_name:
        return False
    _mod, _, field = import_name.partition(".")
    return is_minified_name(field)


def _plausible_size(a: int, b: int) -> bool:
    """Sizes close enough for the two functions to be versions of one another."""
    return abs(a - b) <= 12 or size_ratio(a, b) >= 0.33


def bisect_ints(a: list[int], x: int) -> int:
    """``bisect.bisect_left(a, x)`` on a sorted list of ints: a typed loop in the compiled
    twin (native compares, no generic call), the C function in pure Python."""
    if not _TYPED:
        return bisect.bisect_left(a, x)
    lo = 0
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


# a Match's slots set through their descriptors: the very object the frozen dataclass's
# ``__init__`` makes, without its interpreted ``object.__setattr__`` per field (one per
# accept: ~45k on ffmpeg). (A tuple: a module name bound to a slot wrapper has no module.)
_MATCH_MAKE = (
    object.__new__,
    Match.__dict__["old_index"].__set__,
    Match.__dict__["new_index"].__set__,
    Match.__dict__["score"].__set__,
    Match.__dict__["method"].__set__,
    Match.__dict__["review"].__set__,
)


def new_match(o: int, n: int, score: float, method: str, review: bool) -> Match:
    """``Match(o, n, score, method, review)``, made faster (see above)."""
    new, set_o, set_n, set_s, set_m, set_r = _MATCH_MAKE
    m = new(Match)
    set_o(m, o)
    set_n(m, n)
    set_s(m, score)
    set_m(m, method)
    set_r(m, review)
    return m


def _bisect_vec(a: vec[i64], x: i64) -> i64:
    """``bisect.bisect_left(a, x)`` on a sorted native array of ints (a typed loop in the
    twin; a vec is no sequence for :mod:`bisect`)."""
    lo: i64 = 0
    hi: i64 = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _weak_name(name: str) -> bool:
    """Short names (3 characters) are only trusted together with an equal signature."""
    return len(name) <= 3


# an old function's context (``family._images``): its callers', callees', neighbours' images
_Images = tuple[list[tuple[int, int]], set[int], list[tuple[int, int]], list[tuple[int, int]]]

# a call list this short is deduplicated by scanning the callees kept (no dict per function)
_SHORT_CALLS = 16


class _Side:
    __slots__ = (
        "recs",
        "order",
        "callees",
        "callers",
        "callees_a",
        "callers_a",
        "table",
        "in_table",
        "imported",
        "positions",
        "size",
        "imp_a",
        "body_a",
        "shape_a",
        "body_set",
        "shape_set",
        "sig_a",
        "count_a",
        "tpos_a",
    )

    def __init__(self, recs: Iterable[FuncRecord]) -> None:
        by_index: dict[int, FuncRecord] = {}
        for r in recs:
            ri: int = r.index
            if ri in by_index:
                raise ValueError(f"duplicate function index {ri}")
            if ri < 0:
                raise ValueError(f"negative function index {ri}")
            by_index[ri] = r
        order = sorted(by_index)
        self.order = order
        # (records given in index order, the usual case: that very dict, same keys and order)
        self.recs = by_index if list(by_index) == order else {i: by_index[i] for i in order}
        callees: dict[int, tuple[int, ...]] = {}
        # each function's callers gathered by index (a list per function, as the dict was)
        nsz = order[-1] + 1 if order else 0
        gather: list[list[int]] = [[] for _ in range(nsz)]
        for i, r in self.recs.items():
            calls = r.calls
            if len(calls) <= _SHORT_CALLS:
                # (the first of each defined callee but itself, in call order: what
                # ``dict.fromkeys`` below gives, by a scan of the few kept so far)
                kept: list = []
                for c in calls:
                    if c != i and c in by_index and c not in kept:
                        kept.append(c)
                seq = tuple(kept)
            else:
                seq = tuple(c for c in dict.fromkeys(calls) if c in by_index and c != i)
            callees[i] = seq
            for c in seq:
                gather[c].append(i)
        self.callees = callees
        self.callers = {i: tuple(gather[i]) for i in order}
        first = sorted((min(r.table_slots), i) for i, r in self.recs.items() if r.table_slots)
        self.table = tuple(i for _, i in first)
        self.in_table = frozenset(self.table)
        self.imported = frozenset(i for i, r in self.recs.items() if r.imported)
        # position of each function in a neighbour list (callees, the table), by list id
        # (the lists live as long as the side: made once, never changed)
        self.positions: dict[int, tuple[Sequence[int], dict[int, int]]] = {}
        # dense arrays by function index (wasm indices are dense from 0): what the call
        # graph and the pair tails read per function, without a dict or attribute lookup
        size = self.order[-1] + 1 if self.order else 0
        self.size = size
        imp_a = [False] * size
        body_a: list[str | None] = [None] * size
        shape_a: list[str | None] = [None] * size
        sig_a: list[str | None] = [""] * size
        count_a = [0] * size
        for i, r in self.recs.items():
            imp_a[i] = bool(r.imported)
            body_a[i] = r.body_hash
            shape_a[i] = r.shape_hash
            sig_a[i] = r.type_sig
            count_a[i] = r.instr_count
        self.imp_a = imp_a
        self.body_a = body_a
        self.shape_a = shape_a
        # every body and shape hash of the side (a hash the other side lacks forms no group)
        self.body_set = frozenset(h for h in body_a if h)
        self.shape_set = frozenset(h for h in shape_a if h)
        self.sig_a = sig_a
        self.count_a = count_a
        # each function's position in the function table (-1: not in it)
        tpos_a = [-1] * size
        for j, i in enumerate(self.table):
            tpos_a[i] = j
        self.tpos_a = tpos_a
        # the neighbour lists as dense arrays by function index too (the same tuple objects;
        # () where no function is): what the hot paths read, no int-keyed dict lookup
        empty: tuple[int, ...] = ()
        callees_a = [empty] * size
        callers_a = [empty] * size
        for i, t in callees.items():
            callees_a[i] = t
        for i, t in self.callers.items():
            callers_a[i] = t
        self.callees_a = callees_a
        self.callers_a = callers_a

    def position(self, seq: Sequence[int]) -> dict[int, int]:
        """function index -> its position in ``seq`` (one of this side's neighbour lists;
        the last position of a function listed twice, as ``{y: j for j, y in ...}``)."""
        got = self.positions.get(id(seq))
        if got is None or got[0] is not seq:
            got = self.positions[id(seq)] = (seq, {y: j for j, y in enumerate(seq)})
        return got[1]


@dataclass
class MatchStats:
    """What a matcher run cost: comparisons per stage, each stage's budget, and one note per
    stage stopped at its budget (ingest prints them). ``work`` counts pair scorings,
    candidate pairs generated, rival and neighbourhood entries scanned and alignment cells:
    the units every stage's running time is proportional to."""

    functions: int = 0
    work: dict[str, int] = field(default_factory=dict)
    budget: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    left_unmatched: int = 0

    @property
    def total(self) -> int:
        return sum(self.work.values())


STAGES = ("callgraph", "similarity", "alignment", "family")


class MatcherBase:
    # work budget of each stage: BUDGET_PER_FUNCTION * (functions of both sides) + BUDGET_BASE
    # comparisons; far above what real modules need (see benchmarks/crafted.py), so only a
    # hostile input (one huge family of look-alikes) meets it
    BUDGET_PER_FUNCTION = 400
    BUDGET_BASE = 200_000
    # callgraph acceptance thresholds on the pair similarity
    CG_SINGLE = 0.45  # the only unmatched pair of a neighbourhood, same signature
    CG_SINGLE_XSIG = 0.75  # ... different signature
    CG_UNIQUE_SIG = 0.55  # the only pair of a signature inside a neighbourhood ...
    CG_RIVAL_MARGIN = 0.03  # ... ahead of every other pair of the neighbourhood
    CG_GAP = 0.5  # the only pair between two matched anchors of a call sequence
    CG_BEST = 0.7  # a mutual best inside a small neighbourhood ...
    CG_BEST_MARGIN = 0.15  # ... this far ahead of every alternative
    SMALL_HOOD = 12  # neighbourhoods larger than this only resolve by hashes
    # (similarity threshold, required lead over the second candidate), one round each
    ROUNDS = ((0.85, 0.05), (0.72, 0.05), (0.6, 0.04), (0.5, 0.03), (0.42, 0.02), (0.42, 0.0))
    GAP_FROM = 0.6  # align gaps only once the confident content rounds are done
    GAP_MIN = 0.55  # never align below this similarity
    GAP_SINGLE = 0.4  # a 1x1 gap with the same signature
    GAP_CELLS = 4096
    ALIGN_PAIR = 1.0  # weight of one aligned pair over its similarity (count first)  # largest gap (unmatched old x unmatched new) aligned
    ANCHOR_STEP = 2048  # positions between the kept states of the anchors' run
    SCAN_PER_UNIT = 16  # entries of a rival or neighbourhood scan charged as one comparison
    MIN_TINY = 6  # below this many instructions a function carries too little evidence

    def __init__(
        self,
        old: Sequence[FuncRecord],
        new: Sequence[FuncRecord],
        old_side: _Side | None = None,
        old_part: StorePart | None = None,
    ) -> None:
        self.OLD = old_side if old_side is not None else _Side(old)  # (driver.prepare_old)
        self.NEW = _Side(new)
        self._old_part = old_part
        self.o2n: dict[int, int] = {}
        self.n2o: dict[int, int] = {}
        # the same two maps as dense arrays by function index (-1: unmatched), kept in step
        # by ``accept`` and ``unaccept``: what the call graph's loops read
        self.o2n_a: list[int] = [-1] * self.OLD.size
        self.n2o_a: list[int] = [-1] * self.NEW.size
        self.result: dict[int, Match] = {}  # by new index
        self.queue: deque[int] = deque()  # matched pairs waiting: keys ``o << 32 | n``
        self.queued: set[int] = set()
        self._feats: FeatureCache | None = None
        # each pair's content sum by one int key, ``o << 32 | n`` (no tuple per lookup)
        self._content: dict[int, tuple[float, float]] = {}
        self.anchor_o: list[int] | None = None
        self._anchors_at = -1
        # the anchors' last run, kept to resume it (see ``_compute_anchors``): the smallest
        # old index whose pairing changed since (None: none; -1: from the start), the
        # sequences it read, its back links and its state every ANCHOR_STEP positions
        self._anchor_dirty: int | None = -1
        self._anchor_run: tuple[vec[i64], vec[i64], vec[i64], list] | None = None
        self._scored: tuple[int, list[tuple[float, int, int]]] | None = None
        self._heap0: tuple[list, list, dict, dict] | None = None  # (similarity_round)
        self.anchor_n: list[int] = []
        self.span_o = self.span_n = (0, 0)
        # the function tables' matched states: a version bumped whenever a function of
        # either table is matched or unmatched, and what the call graph derived from the
        # tables at that version (pure functions of those states: see ``table_memo``)
        self._table_ver = 0
        self._table_memo: dict = {}
        size = len(self.OLD.order) + len(self.NEW.order)
        budget = self.BUDGET_PER_FUNCTION * size + self.BUDGET_BASE
        self.stats = MatchStats(
            functions=size, work=dict.fromkeys(STAGES, 0), budget=dict.fromkeys(STAGES, budget)
        )
        self.stage = "callgraph"  # the stage the work meter charges
        self._stopped: set[str] = set()
        # the stages' caches, made on first use (static ones, or keyed by the match state)
        # the blocking indexes' native tables (similarity: ``_blocking_tables``)
        self._blk: tuple[vec[i64], vec[i64], vec[i64], vec[i64], vec[i64]] | None = None
        self._margins: tuple[list, list[tuple[float, float]]] | None = None
        self._fam_cache: tuple[dict[int, list[int]], dict[int, list[int]]] | None = None
        self._fam_ids: tuple[list[int], list[int]] = ([], [])  # (set with _fam_cache)
        self._fam_keys: tuple[list[int], list[int], set[int], set[int]] | None = None
        self._passed: dict = {}
        self._rival_cache: dict = {}
        self._table_info: bool | None = None
        # old index -> its images (family); an old index whose sure match changed is queued
        # in ``_img_touched``, dropping the images that read it (``_img_nb_rev``: neighbours)
        self._img_cache: dict[int, _Images] = {}
        self._img_touched: list[int] = []
        self._img_nb_rev: dict[int, set[int]] = {}
        self._cpos_cache: dict[int, dict[int, int]] = {}
        self._nb_cache: dict = {}
        self._fid_cache: dict[int, int] | None = None
        self._pos_caches: dict[str, dict[int, int]] = {}
        self._sig_sizes: dict[int, dict] = {}
        # the wrapper splits' votes (family): from their first pass on, every change of a
        # match stamps the functions whose vote reads it (the pair's own two and their
        # callees: a vote reads the match state of the pair's callers), by a clock; a pair
        # whose vote changed nothing is kept with its match, the clock and the work charged
        # (new index -> (match, clock, units)); ``_wv_twin``: a vote read the unmatched twins
        self._wv_chg: tuple[list[int], list[int]] | None = None
        self._wv_clock = 0
        self._wv_seen: dict[int, tuple[Match, int, int]] = {}
        self._wv_twin = False
        # the ints 0 .. the larger side's size as objects (the anchors' lists hold these)
        self._ints: list[object] = list(range(max(self.OLD.size, self.NEW.size)))
        # ``_graph_term``'s stamps by old index and its clock
        self._gt_mark: vec[i64] = vec[i64]([0] * self.OLD.size)
        self._gt_clock: i64 = 0

    # ---------------------------------------------------------------- work meter
    def spend(self, units: int, stage: str | None = None) -> bool:
        """Charge ``units`` comparisons to ``stage`` (default: the current one); False once
        that stage's budget is spent (the stage then stops and a note says so)."""
        st = stage or self.stage
        w = self.stats.work[st] + units
        self.stats.work[st] = w
        if w <= self.stats.budget[st]:
            return True
        self._stopped.add(st)
        return False

    def exhausted(self, stage: str | None = None) -> bool:
        """The stage's budget is spent (it stops; :meth:`finish_stats` writes the note)."""
        st = stage or self.stage
        if self.stats.work[st] > self.stats.budget[st]:
            self._stopped.add(st)
        return st in self._stopped

    def finish_stats(self) -> MatchStats:
        """Fill the notes of the stages that stopped at their budget."""
        st = self.stats
        left = sum(1 for i in self.NEW.order if i not in self.n2o and not self.NEW.recs[i].imported)
        st.left_unmatched = left
        st.notes = [
            f"matcher: {name} stage stopped at its work budget after {st.work[name]:,} "
            f"comparisons; {left:,} functions left unmatched"
            for name in STAGES
            if name in self._stopped
        ]
        return st

    # ---------------------------------------------------------------- bookkeeping
    @property
    def feats(self) -> FeatureCache:
        if self._feats is None:
            self._feats = FeatureCache(
                list(self.OLD.recs.values()), list(self.NEW.recs.values()), self._old_part
            )
            self._old_part = None
        return self._feats

    def accept(self, o: int, n: int, score: float, method: str, review: bool = False) -> None:
        assert o not in self.o2n and n not in self.n2o
        self.o2n[o] = n
        self.n2o[n] = o
        self.o2n_a[o] = n
        self.n2o_a[n] = o
        score = max(0.0, min(1.0, score))
        self.result[n] = new_match(o, n, round(score, 4), method, bool(review))
        if self._img_cache:
            self._img_touched.append(o)
        if self._wv_chg is not None:
            self.stamp_change(o, n)
        d = self._anchor_dirty
        if d is None or o < d:
            self._anchor_dirty = o
        if o in self.OLD.in_table or n in self.NEW.in_table:
            self._table_ver += 1
        self._enqueue(o, n)
        # the neighbourhoods of matched neighbours just changed: look at them again
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        for x in self.OLD.callers_a[o]:
            y = o2n_a[x]
            if y >= 0:
                self._enqueue(x, y)
        for x in self.OLD.callees_a[o]:
            y = o2n_a[x]
            if y >= 0:
                self._enqueue(x, y)
        for y in self.NEW.callers_a[n]:
            z = n2o_a[y]
            if z >= 0:
                self._enqueue(z, y)
        for y in self.NEW.callees_a[n]:
            z = n2o_a[y]
            if z >= 0:
                self._enqueue(z, y)

    def stamp_change(self, o: int, n: int) -> None:
        """The match of ``o`` and ``n`` changed: stamp the functions whose wrapper vote
        reads it (``o``, ``n`` and their callees: ``callers`` is the exact inverse)."""
        assert self._wv_chg is not None
        t = self._wv_clock + 1
        self._wv_clock = t
        chg_o, chg_n = self._wv_chg
        chg_o[o] = t
        chg_n[n] = t
        for c in self.OLD.callees_a[o]:
            chg_o[c] = t
        for c in self.NEW.callees_a[n]:
            chg_n[c] = t

    def table_memo(self, key: str, make):
        """``make()`` for the function tables' current matched states: computed once per
        state (``make`` must read nothing else of the match state than which functions of
        the two tables are matched, and to what)."""
        memo = self._table_memo
        if memo.get(None) != self._table_ver:
            memo.clear()
            memo[None] = self._table_ver
        got = memo.get(key)
        if got is None:
            got = memo[key] = make()
        return got

    def _enqueue(self, o: int, n: int) -> None:
        k: Any = (o << 32) | n  # (one int object for the set and the queue)
        if k not in self.queued:
            self.queued.add(k)
            self.queue.append(k)

    def unmatched_old(self) -> list[int]:  # (the dense arrays: no dict lookup per function)
        return [i for i in self.OLD.order if self.o2n_a[i] < 0]

    def unmatched_new(self) -> list[int]:
        return [i for i in self.NEW.order if self.n2o_a[i] < 0]

    def callee_check(self, o: int, n: int) -> tuple[int, int, int]:
        """(agree, disagree, defined callees) of the pair's callees under the current match:
        a callee matched to a callee of the other side agrees, matched elsewhere disagrees."""
        imp_o, imp_n = self.OLD.imp_a, self.NEW.imp_a
        co = [c for c in self.OLD.callees_a[o] if not imp_o[c]]
        cn = [c for c in self.NEW.callees_a[n] if not imp_n[c]]
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        agree = disagree = 0
        if len(co) == len(cn):
            for a, b in zip(co, cn, strict=True):
                m = o2n_a[a]
                if m >= 0:
                    if m == b:
                        agree += 1
                    else:
                        disagree += 1
                elif n2o_a[b] >= 0:
                    disagree += 1
        else:
            mapped = {o2n_a[a] for a in co if o2n_a[a] >= 0}
            known = {b for b in cn if n2o_a[b] >= 0}
            agree = len(mapped & known)
            disagree = len(mapped ^ known)
        return agree, disagree, max(len(co), len(cn))

    # ---------------------------------------------------------------- similarity
    def content(self, o: int, n: int) -> tuple[float, float]:
        key = (o << 32) | n
        v = self._content.get(key)
        if v is None:
            v = self.feats.content_similarity(self.OLD.recs[o], self.NEW.recs[n], o, n)
            self._content[key] = v
        return v

    def _graph_term(self, lo: tuple[int, ...], ln: tuple[int, ...]) -> float | None:
        """Agreement of two neighbour lists under the current match: a neighbour matched to
        a neighbour of the other side counts 1, a pair of still unknown ones counts 1/2."""
        if not lo and not ln:
            return None
        o2n_a, n2o_a = self.o2n_a, self.n2o_a
        # ``lo``'s members stamped in a native array by old index (no set of images): a
        # neighbour y of ``ln`` is the image of one of them iff its own image ``n2o_a[y]``
        # is stamped (the match is one-to-one); both lists have distinct entries, so the
        # counts are those of the images' set and its intersection with ``ln``
        mark = self._gt_mark
        clock: i64 = self._gt_clock + 1
        self._gt_clock = clock
        matched = 0
        for x in lo:
            if o2n_a[x] >= 0:
                matched += 1
            mark[x] = clock
        unk_o = len(lo) - matched
        unk_n = 0
        agree = 0
        for y in ln:
            z = n2o_a[y]
            if z < 0:
                unk_n += 1
            elif mark[z] == clock:
                agree += 1
        return (agree + 0.5 * min(unk_o, unk_n)) / max(len(lo), len(ln))

    def update_anchors(self) -> None:
        if self._anchors_at == len(self.result):
            return
        self._anchors_at = len(self.result)
        self._compute_anchors()

    def _compute_anchors(self) -> None:
        """Matched pairs that keep their relative order in both index sequences.

        Linkers lay functions out in object-file and source order; between two builds most
        matched pairs keep their order, so an unmatched function most likely sits between
        the images of its nearest matched neighbours in index order (a diff of the function
        sequence). Crossing pairs are dropped by a longest increasing subsequence.

        Resumed where the last run's input first differs: the state of the longest chain
        scan after a prefix depends only on that prefix, so the run keeps its state every
        ANCHOR_STEP positions and restarts from the last one before the first old index
        whose pairing changed (accept/unaccept record the smallest). Same chain as a
        run from the start.
        """
        o2n_a, imported = self.o2n_a, self.NEW.imp_a
        dirty, run = self._anchor_dirty, self._anchor_run
        self._anchor_dirty = None
        if dirty is None and run is not None:
            return  # no pairing changed since the last run: the same anchors
        # (the run's sequences as native arrays in the twin, ``vec[i64]``: no int boxed per
        # entry; lists in pure Python. A vec is cut by a slice and grown by ``append``'s
        # result, never through an alias)
        step: i64 = self.ANCHOR_STEP
        marks: list[tuple[vec[i64], vec[i64]]]
        p: i64 = 0
        if run is None or dirty is None or dirty < 0:  # (None: only with no run)
            os_ = vec[i64]()
            ns = vec[i64]()
            prev = vec[i64]()
            marks = []
        else:
            os_, ns, prev, marks = run
            p = _bisect_vec(os_, dirty)  # positions before p read the same pairs
        c: i64 = 0
        if marks:
            c = min(p // step, len(marks) - 1)
        start: i64 = c * step
        os_, ns, prev = os_[:start], ns[:start], prev[:start]
        del marks[c + 1 :]
        # the matched pairs by old index from ``start`` (one new index each), imported new
        # ones left out
        no: i64 = len(os_)
        for o in range(os_[no - 1] + 1 if no else 0, len(o2n_a)):
            m = o2n_a[o]
            if m >= 0 and not imported[m]:
                os_ = append(os_, o)
                ns = append(ns, m)
        # new index at the end of the best chain of each length, and its position
        if marks:
            tails, tail_pos = marks[c][0][:], marks[c][1][:]
        else:
            tails, tail_pos = vec[i64](), vec[i64]()
        nn: i64 = len(ns)
        for s0 in range(start, nn, step):
            if s0 != start or not marks:
                marks.append((tails[:], tail_pos[:]))
            for k in range(s0, min(s0 + step, nn)):
                n = ns[k]
                nt: i64 = len(tails)
                # (each ``prev`` entry appended at its position k, in order)
                if not nt or n > tails[nt - 1]:
                    # the chain grows (bisect_left would give len(tails): the same step)
                    prev = append(prev, tail_pos[nt - 1] if nt else -1)
                    tails = append(tails, n)
                    tail_pos = append(tail_pos, k)
                    continue
                j = _bisect_vec(tails, n)
                tails[j] = n
                tail_pos[j] = k
                prev = append(prev, tail_pos[j - 1] if j else -1)
        self._anchor_run = (os_, ns, prev, marks)
        # (the chain's indices as the int objects of ``_ints``: none made per entry)
        ints = self._ints
        chain_o: list[object] = []
        chain_n: list[object] = []
        nt = len(tail_pos)
        kk: i64 = tail_pos[nt - 1] if nt else -1
        while kk >= 0:
            chain_o.append(ints[os_[kk]])
            chain_n.append(ints[ns[kk]])
            kk = prev[kk]
        chain_o.reverse()
        chain_n.reverse()
        anchor_o = cast(list[int], chain_o)
        anchor_n = cast(list[int], chain_n)
        self.anchor_o = anchor_o
        self.anchor_n = anchor_n
        self.span_o = (self.OLD.order[0] - 1, self.OLD.order[-1] + 1) if self.OLD.order else (0, 0)
        self.span_n = (self.NEW.order[0] - 1, self.NEW.order[-1] + 1) if self.NEW.order else (0, 0)

    def locality(self, o: int, n: int) -> float | None:
        """1.0 when ``n`` sits where ``o`` sits between matched anchors, 0.0 outside the gap."""
        ao = self.anchor_o
        if ao is None:
            return None
        an = self.anchor_n
        k = bisect_ints(ao, o)
        lo_o, lo_n = (ao[k - 1], an[k - 1]) if k else (self.span_o[0], self.span_n[0])
        hi_o, hi_n = (ao[k], an[k]) if k < len(ao) else (self.span_o[1], self.span_n[1])
        if not lo_n < n < hi_n:
            return 0.0
        fo = (o - lo_o) / (hi_o - lo_o)
        fn = (n - lo_n) / (hi_n - lo_n)
        return 0.5 + 0.5 * (1.0 - abs(fo - fn))

    def similarity(self, o: int, n: int, sig_penalty: bool = True) -> float:
        self.charge(o, n)
        return self.score(o, n, self.content(o, n), self.tail(o, n), sig_penalty)

    def charge(self, o: int, n: int) -> None:
        """The work of one scoring: 1, plus the neighbour lists it walks (a hub's callers)
        at 1/16 an entry."""
        OLD, NEW = self.OLD, self.NEW
        hood = (
            len(OLD.callers_a[o])
            + len(NEW.callers_a[n])
            + len(OLD.callees_a[o])
            + len(NEW.callees_a[n])
        )
        self.stats.work[self.stage] += 1 + hood // 16

    def tail(self, o: int, n: int) -> tuple:
        """What a pair's score reads of the match state (:meth:`score`): the agreement of
        the callees and of the callers, the position between anchors, and whether an equal
        shape is not contradicted by matched callees (None: the shapes differ)."""
        h = self.OLD.shape_a[o]
        shape = None
        if h and h == self.NEW.shape_a[n]:
            shape = not self.callee_check(o, n)[1]
        return (
            self._graph_term(self.OLD.callees_a[o], self.NEW.callees_a[n]),
            self._graph_term(self.OLD.callers_a[o], self.NEW.callers_a[n]),
            self.locality(o, n),
            shape,
        )

    def content_bound(self, o: int, n: int) -> tuple[float, float]:
        """:meth:`content` with the bigram cosine at its largest (the value itself when
        known): the score computed from it (:meth:`score`, same tail) is never below the
        pair's score, every float step of the score being monotone in the content sum."""
        v = self._content.get((o << 32) | n)
        if v is None:
            v = self.feats.content_bound_sum(self.OLD.recs[o], self.NEW.recs[n], o, n)
        return v

    def score(
        self, o: int, n: int, content: tuple[float, float], tail: tuple, sig_penalty: bool
    ) -> float:
        """The pair similarity from its content sum and its :meth:`tail`."""
        SO, SN = self.OLD, self.NEW
        total, wsum = content
        g_callees, g_callers, loc, shape = tail
        if g_callees is not None:
            total += 0.25 * g_callees
            wsum += 0.25
        if g_callers is not None:
            total += 0.15 * g_callers
            wsum += 0.15
        if loc is not None:
            total += 0.2 * loc
            wsum += 0.2
        s = total / wsum if wsum else 0.0
        if sig_penalty and SO.sig_a[o] != SN.sig_a[n]:
            s *= 0.8
        if shape:
            s = max(s, 0.9)  # same normalised code, callees not contradicting
        # very small functions carry little evidence; temper their score
        small = min(SO.count_a[o], SN.count_a[n])
        if small < self.MIN_TINY:
            s *= 0.85 + 0.15 * small / self.MIN_TINY
        return s
