"""Review checks over a whole pairing (pure): they flag pairs, never change them.

Used twice: by :func:`kbtool.identity.pairing.pair_rows` on the pairing a diff shows, and by
the matcher on its own final result, so that a pair these checks would flag is never kept as
an *identity* at ingest (a flagged pair's name is carried as a ``diff-carry`` name with a
review flag, at a lower confidence, instead of sharing the old annotation).

A pairing here is anything with ``old_recs``/``new_recs`` (index -> FuncRecord) and
``by_new``/``by_old`` (index -> an object with mutable ``old_index``, ``new_index``,
``score``, ``review``).

:func:`review_pairing` runs them all, in their order. A later release's ingest runs them
twice on the same pairing (the matcher's final result, then the pairing read back from the
KB for the diff report): inside :func:`review_memo` the second run reuses the first's
verdicts when every input is the same (see :func:`review_pairing`).
"""

from __future__ import annotations

import bisect
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

from ..records import FuncRecord
from .features import FeatureCache, size_ratio

# the last reviewed pairing, kept while a review_memo scope is open (None: no scope)
_MEMO: contextvars.ContextVar[list | None] = contextvars.ContextVar("review_memo", default=None)

# every field of a record but its stable id (which no check reads: the matcher's records of a
# fresh module carry none, those read back from the KB carry the ids ingest gave them)
_RECORD_INPUTS = attrgetter(*(f for f in FuncRecord._FIELDS if f != "stable_id"))  # noqa: SLF001


@contextmanager
def review_memo() -> Iterator[None]:
    """While open (in this thread or task), :func:`review_pairing` remembers the last
    pairing it reviewed and gives its verdicts again for a pairing equal in every input;
    scopes nest, and nothing is kept once the outermost closes."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set([])
    try:
        yield
    finally:
        _MEMO.reset(token)


def review_pairing(pg: Any) -> bool:
    """Run every review check on ``pg`` in order (signatures, wrapper splits, weak
    neighbourhoods, inlining boundaries, closer and near rivals, no counterpart).

    Inside :func:`review_memo`, a pairing whose inputs all equal those of the pairing
    reviewed last (the same pairs with the same score, flag and method; records equal in
    every field but the stable id) gets that pairing's verdicts (flags and scores) without
    running the checks: they read nothing else, and each is a pure function of its inputs
    (which pairs a check flags does not depend on the order it reads them in). Returns
    whether the verdicts were reused."""
    memo = _MEMO.get()
    key = None
    if memo is not None:
        key = _pairs_key(pg)
        if (
            memo
            and memo[0] == key
            and _same_records(memo[1], pg.old_recs)
            and _same_records(memo[2], pg.new_recs)
        ):
            by_new = pg.by_new
            for n, (review, score) in memo[3].items():
                p = by_new[n]
                p.review, p.score = review, score
            return True
    review_signatures(pg)
    review_wrapper_splits(pg)
    review_weak_neighbourhoods(pg)
    review_inlining_boundaries(pg)
    review_closer_rivals(pg)
    review_no_counterpart(pg)  # two functions without a counterpart: weak, no name carried
    if memo is not None:
        verdicts = {n: (p.review, p.score) for n, p in pg.by_new.items()}
        memo[:] = [key, pg.old_recs, pg.new_recs, verdicts]
    return False


def _pairs_key(pg: Any) -> tuple[dict[int, tuple], dict[int, int]]:
    """What the checks read of the pairs: each pair's fields by new index, and the pairs by
    old index (the same pairs in any pairing built right)."""
    return (
        {
            n: (p.old_index, p.new_index, p.score, p.review, getattr(p, "method", ""))
            for n, p in pg.by_new.items()
        },
        {o: p.new_index for o, p in pg.by_old.items()},
    )


def _same_records(a: dict[int, FuncRecord], b: dict[int, FuncRecord]) -> bool:
    if a is b:
        return True
    if a.keys() != b.keys():
        return False
    get = b.__getitem__
    return all(x is get(i) or _RECORD_INPUTS(x) == _RECORD_INPUTS(get(i)) for i, x in a.items())


# a pair whose type signature changed is flagged for review below this score (0.85: set on
# the TUNE programs of benchmarks/optlevels.py, where pairs of two different functions with
# changed parameters reached 0.81-0.83 through their callers; right pairs whose compiler
# dropped or added a parameter either scored above 0.85 or were flagged anyway)
REVIEW_SIG_SCORE = 0.85


def review_signatures(pg: Any) -> int:
    """A changed signature without a high score is a weak match: have a human look."""
    flagged = 0
    for p in pg.by_new.values():
        if (
            not p.review
            and p.score < REVIEW_SIG_SCORE
            and pg.old_recs[p.old_index].type_sig != pg.new_recs[p.new_index].type_sig
        ):
            p.review = True
            flagged += 1
    return flagged


# a thin wrapper: few instructions (a call with its arguments passed on, maybe a constant)
WRAPPER_MAX_INSTR = 32
# a pair below this score whose size changed by more than WEAK_SIZE_RATIO and whose matched
# neighbours disagree is flagged for review
REVIEW_WEAK_SCORE = 0.75
WEAK_SIZE_RATIO = 0.75


def review_wrapper_splits(pg: Any) -> int:
    """Flag pairs next to a wrapper split (or merge); returns how many were newly flagged.

    A function the other side has no counterpart for (new, or deleted) that is a thin
    wrapper (at most ``WRAPPER_MAX_INSTR`` instructions, fewer than the paired function),
    directly calls one function of a pair and has the type signature of the pair's *other*
    side is the sign of a split: upstream moved the body into a new function and left a
    thin wrapper under the old name (or, read backwards, folded the wrapper into the body).
    The pair follows the body, so the name (the API) may belong to the wrapper instead.
    """
    flagged = 0
    sides = (
        (pg.new_recs, pg.by_new, pg.old_recs, "old_index", "new_index"),
        (pg.old_recs, pg.by_old, pg.new_recs, "new_index", "old_index"),
    )
    for recs, paired, other_recs, other_attr, own_attr in sides:
        for w, rw in recs.items():
            if rw.imported or w in paired or rw.instr_count > WRAPPER_MAX_INSTR:
                continue
            for c in dict.fromkeys(rw.calls):
                p = paired.get(c)
                if p is None or p.review or c == w:
                    continue
                if recs[getattr(p, own_attr)].imported:
                    continue
                if rw.instr_count >= recs[c].instr_count:
                    continue
                if other_recs[getattr(p, other_attr)].type_sig == rw.type_sig:
                    p.review = True
                    flagged += 1
    return flagged


def review_weak_neighbourhoods(pg: Any) -> int:
    """Flag weak pairs the call graph does not back; returns how many were newly flagged.

    A pair scoring below ``REVIEW_WEAK_SCORE`` whose sizes differ by more than
    ``WEAK_SIZE_RATIO`` (instruction counts) and where a paired callee or caller of the old
    function maps to a function that is not a callee or caller of the new one: three weak
    signs at once, typical of two sibling functions (create/expand, init/reset) paired
    with each other.
    """
    weak = [
        p
        for p in pg.by_new.values()
        if not p.review
        and p.score < REVIEW_WEAK_SCORE
        and not pg.new_recs[p.new_index].imported
        and size_ratio(pg.old_recs[p.old_index].instr_count, pg.new_recs[p.new_index].instr_count)
        < WEAK_SIZE_RATIO
    ]
    if not weak:
        return 0
    callers_old = _callers_of(pg, True)
    callers_new = _callers_of(pg, False)
    flagged = 0
    for p in weak:
        o, n = p.old_index, p.new_index
        hoods = (
            (
                [
                    c
                    for c in pg.old_recs[o].calls
                    if c != o and c in pg.old_recs and not pg.old_recs[c].imported
                ],
                set(pg.new_recs[n].calls),
            ),
            (callers_old.get(o, ()), set(callers_new.get(n, ()))),
        )
        for lo, ln in hoods:
            if any(q is not None and q.new_index not in ln for q in (pg.by_old.get(x) for x in lo)):
                p.review = True
                flagged += 1
                break
    return flagged


def _callers_of(pg: Any, old: bool) -> Mapping[int, Sequence[int]]:
    """The callers of each function of one side (old if ``old``), as :func:`_callers`
    gives them for every function the checks look up (a record's index): the pairing's own
    (``pg.callers``, the matcher's sides': each defined function's distinct callers but
    itself, in index order, ``()`` for none) when it carries them."""
    got = getattr(pg, "callers", None)
    if got is not None:
        return got[0 if old else 1]
    return _callers(pg.old_recs if old else pg.new_recs)


def _callers(recs: dict[int, FuncRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, r in recs.items():
        for c in dict.fromkeys(r.calls):
            if c != i:
                out.setdefault(c, []).append(i)
    return out


# an unpaired neighbour is a rival when its body is at most this far behind the pair's in
# content similarity (measured on the TUNE programs of benchmarks/optlevels.py: rivals
# further behind were nearly all right pairs of an API wrapper and its inlined helper)
BOUNDARY_RIVAL_MARGIN = 0.1


def _plausible(a: int, b: int) -> bool:
    """Sizes close enough for one function to be a rebuild of the other (as the matcher's
    candidate blocking demands: within 12 instructions or a third)."""
    return abs(a - b) <= 12 or size_ratio(a, b) >= 0.33


def review_inlining_boundaries(pg: Any) -> int:
    """Flag pairs an inlining difference may have moved; returns how many were newly flagged.

    Different optimisation levels (and compilers) inline differently: a function ``F`` that
    calls ``G`` in one build is ``F`` with ``G`` inlined in the other, or ``G`` with ``F``
    inlined into its callers. The call graph then pairs ``F`` with ``G`` (``G`` took ``F``'s
    callers) and nothing tells which of the two holds the name. On a pair whose code
    differs (no equal body or shape hash, not paired by a name both binaries carry), each
    of these signs flags it:

    * **a rival at the boundary**: a direct caller or callee of one side has no counterpart,
      has the type signature of the pair's other side, and its body is about as close to
      that other side (content similarity at most ``BOUNDARY_RIVAL_MARGIN`` behind): the
      unpaired neighbour may be where the other side's code and name went;
    * **an unpaired sole caller**: the only caller of one side has no counterpart and has
      the type signature of the pair's other side (a wrapper split of any size: the body
      was paired, the API entry that calls it was not);
    * **callers contradict**: both sides have paired callers and not one paired caller of
      either side calls the other side's function (the pair stands on position alone);
    * **a body pair of implausible size**: paired by body similarity (``similarity``) with
      sizes more than 12 instructions and a factor 3 apart (a call-graph pair may grow
      that much by inlining its callees; a pair the body made may not).
    """
    callers_old = _callers_of(pg, True)
    callers_new = _callers_of(pg, False)
    feats: list[FeatureCache] = []

    def content(a: FuncRecord, b: FuncRecord) -> float:
        if not feats:
            feats.append(FeatureCache(list(pg.old_recs.values()), list(pg.new_recs.values())))
        total, wsum = feats[0].content_similarity(a, b)
        return total / wsum if wsum else 0.0

    flagged = 0
    for p in pg.by_new.values():
        method = getattr(p, "method", "")
        if p.review or method in ("name", "import"):
            continue
        o, n = p.old_index, p.new_index
        ro, rn = pg.old_recs[o], pg.new_recs[n]
        if rn.imported or ro.imported:
            continue
        if (ro.body_hash and ro.body_hash == rn.body_hash) or (
            ro.shape_hash and ro.shape_hash == rn.shape_hash
        ):
            continue
        sign = method == "similarity" and not _plausible(ro.instr_count, rn.instr_count)
        sign = sign or _callers_contradict(pg, o, n, callers_old, callers_new)
        sign = sign or _unpaired_sole_caller(n, ro.type_sig, pg.new_recs, callers_new, pg.by_new)
        sign = sign or _unpaired_sole_caller(o, rn.type_sig, pg.old_recs, callers_old, pg.by_old)
        if not sign:
            rivals = [
                (ro, pg.new_recs[w])
                for w in _unpaired_neighbours(
                    n, rn, ro.type_sig, pg.new_recs, callers_new, pg.by_new
                )
            ]
            rivals += [
                (pg.old_recs[w], rn)
                for w in _unpaired_neighbours(
                    o, ro, rn.type_sig, pg.old_recs, callers_old, pg.by_old
                )
            ]
            if rivals:
                own = content(ro, rn)
                sign = any(content(a, b) >= own - BOUNDARY_RIVAL_MARGIN for a, b in rivals)
        if sign:
            p.review = True
            flagged += 1
    return flagged


def _unpaired_neighbours(
    i: int,
    r: FuncRecord,
    sig: str,
    recs: dict[int, FuncRecord],
    callers: Mapping[int, Sequence[int]],
    paired: dict,
) -> list[int]:
    """Direct callees and callers of ``i`` without a counterpart, of type signature ``sig``."""
    return [
        w
        for w in dict.fromkeys((*r.calls, *callers.get(i, ())))
        if w != i
        and w not in paired
        and w in recs
        and not recs[w].imported
        and recs[w].type_sig == sig
    ]


def _unpaired_sole_caller(
    i: int,
    sig: str,
    recs: dict[int, FuncRecord],
    callers: Mapping[int, Sequence[int]],
    paired: dict,
) -> bool:
    cs = callers.get(i, ())
    return len(cs) == 1 and cs[0] not in paired and recs[cs[0]].type_sig == sig


def _callers_contradict(
    pg: Any,
    o: int,
    n: int,
    callers_old: Mapping[int, Sequence[int]],
    callers_new: Mapping[int, Sequence[int]],
) -> bool:
    """Both functions have paired callers and none of either side calls the other side."""
    imgs = [
        q.new_index for q in (pg.by_old.get(c) for c in callers_old.get(o, ())) if q is not None
    ]
    origs = [
        q.old_index for q in (pg.by_new.get(c) for c in callers_new.get(n, ())) if q is not None
    ]
    if not imgs or not origs:
        return False
    return all(n not in pg.new_recs[d].calls for d in imgs) and all(
        o not in pg.old_recs[d].calls for d in origs
    )


# the score a pair that reads as two functions without a counterpart keeps: below the
# carry-over threshold (``services.diff.carry.CARRY_MIN_SCORE``, 0.55), so the diff lists it
# flagged and carry-over keeps the old name as an open suggestion instead of writing it
WEAK_SCORE = 0.5


def _returns(sig: str) -> str:
    return sig.partition("->")[2].strip()


def review_no_counterpart(pg: Any) -> int:
    """Weaken pairs of two functions that cannot be one; returns how many.

    An inlining difference leaves functions without a counterpart (``F`` inlined into all
    its callers in one build, ``G`` in the other) and the matcher may still pair them (same
    neighbourhood, the closest body left): any name carried over such a pair is wrong. On a
    pair whose code differs (no equal body or shape hash, not paired by a name both binaries
    carry) whose **result type changed** (both return a value, of different types: ``f64``
    against ``i32``) the pair is made weak: flagged, score capped at ``WEAK_SCORE`` (listed
    for review, no name carried, the old name an open suggestion). A compiler drops a
    result nobody reads (binaryen's and LLVM's dead-argument elimination turn ``-> i32``
    into ``-> ()``: emcc's ``memmove`` across -O2/-Os) and adds or drops parameters, so
    those changes alone weaken nothing; it does not turn one value type into another.

    Measured and rejected (``benchmarks/optlevels.py``): weakening on any changed result
    type, on callers that contradict on both sides, or on a flagged pair with changed
    parameters each removed wrong names on the TUNE programs but as many right ones as wrong
    on the HELD-OUT programs and on the zstd release pairs (a dropped result, a parameter a
    release added).
    """
    weak = 0
    for p in pg.by_new.values():
        if getattr(p, "method", "") in ("name", "import"):
            continue
        ro, rn = pg.old_recs[p.old_index], pg.new_recs[p.new_index]
        if ro.imported or rn.imported:
            continue
        if (ro.body_hash and ro.body_hash == rn.body_hash) or (
            ro.shape_hash and ro.shape_hash == rn.shape_hash
        ):
            continue
        ra, rb = _returns(ro.type_sig), _returns(rn.type_sig)
        if ra != rb and ra not in ("", "()") and rb not in ("", "()"):
            p.review = True
            if p.score > WEAK_SCORE:
                p.score = WEAK_SCORE
            weak += 1
    return weak


# bodies are compared as they are only when the sizes are this close (instruction counts):
# below it one side grew by inlining and any function of the right size looks closer (on the
# TUNE programs most right pairs flagged without this bound were such pairs); such a pair
# takes a rival of the very signature sized between its two sides
RIVAL_SIZE_RATIO = 0.5


def review_closer_rivals(pg: Any) -> int:
    """Flag pairs an unpaired function's body is closer to; returns how many were flagged.

    On a pair whose code differs (no equal body or shape hash, not paired by a name both
    binaries carry) whose sizes are comparable (``size_ratio`` at least ``RIVAL_SIZE_RATIO``:
    neither side grew by inlining, so body similarity is a fair measure), the pair is flagged
    when a function **without a counterpart** on either side

    * returns the same type as the pair's side it stands in for (parameters may differ: a
      compiler adds and drops them across optimisation levels),
    * has a comparable size to the side it rivals,
    * is at least as close in content (``FeatureCache.content_similarity``) to the pair's
      other side as the pair's own two functions are, and
    * prefers that function to every other function of that side (the mutual-best check
      of BinDiff and Diaphora: the rival has nowhere better to go).

    On a pair one side of which grew by inlining (sizes further apart) a rival must have the
    very type signature of the function it stands in for and a size strictly between the
    pair's two sizes (it grew less: ``sqlite3WhereExprUsageFull``, 352 instructions at -Os,
    838 at -O3, paired with the 56-instruction ``sqlite3WhereExprListUsage``).

    Such a rival is usually the right counterpart left behind (two look-alike siblings,
    ``check_next1``/``check_next2``, ``singlevar``/``fieldsel``, ``sqlite3VdbeChangeP4``/
    ``vdbeChangeP4Full``) while the call graph placed the pair by position.
    The check reads the flags of the checks before it; pairs it flags do not free rivals
    for one another (the unpaired set is taken once). It then runs
    :func:`review_near_rivals` (look-alikes within a small margin) and counts both.
    """
    todo = []
    for p in pg.by_new.values():
        if p.review or getattr(p, "method", "") in ("name", "import"):
            continue
        ro, rn = pg.old_recs[p.old_index], pg.new_recs[p.new_index]
        if ro.imported or rn.imported:
            continue
        if (ro.body_hash and ro.body_hash == rn.body_hash) or (
            ro.shape_hash and ro.shape_hash == rn.shape_hash
        ):
            continue
        todo.append(p)
    if not todo:
        return review_near_rivals(pg)
    old_list = [r for r in pg.old_recs.values() if not r.imported]
    new_list = [r for r in pg.new_recs.values() if not r.imported]
    free_old = [r for r in old_list if r.index not in pg.by_old]
    free_new = [r for r in new_list if r.index not in pg.by_new]
    feats = FeatureCache(list(pg.old_recs.values()), list(pg.new_recs.values()))

    # the free functions by result type (sized, for windows of comparable sizes) and by
    # signature (0: new, 1: old); the order rivals are read in does not matter (pure tests)
    by_ret: tuple[dict[str, list[FuncRecord]], dict[str, list[FuncRecord]]] = ({}, {})
    by_sig: tuple[dict[str, list[FuncRecord]], dict[str, list[FuncRecord]]] = ({}, {})
    for side, free in enumerate((free_new, free_old)):
        for r in free:
            by_ret[side].setdefault(_returns(r.type_sig), []).append(r)
            by_sig[side].setdefault(r.type_sig, []).append(r)
    ret_sized = tuple({k: _BySize(v) for k, v in side.items()} for side in by_ret)

    # every function of each side by size (0: new, 1: old) for the size windows (a superset
    # of ``size_ratio >= RIVAL_SIZE_RATIO``); the cache's methods called directly (native)
    by_size = (_BySize(new_list), _BySize(old_list))

    def rivals(w_old: bool, stand_in: FuncRecord, target: FuncRecord) -> list[FuncRecord]:
        """The free functions (old side if ``w_old``) whose result type (or signature) and
        size let them rival ``stand_in`` for ``target``."""
        if size_ratio(stand_in.instr_count, target.instr_count) >= RIVAL_SIZE_RATIO:
            t = target.instr_count
            same = ret_sized[w_old].get(_returns(stand_in.type_sig))
            if same is None:
                return []
            return [w for w in same.window(t) if size_ratio(w.instr_count, t) >= RIVAL_SIZE_RATIO]
        # one side grew by inlining: a rival has the very signature and a size between
        lo, hi = sorted((stand_in.instr_count, target.instr_count))
        return [w for w in by_sig[w_old].get(stand_in.type_sig, ()) if lo < w.instr_count < hi]

    def closer(w: FuncRecord, w_old: bool, stand_in, target, own_: list) -> bool:
        """``w`` (old side if ``w_old``, one of :func:`rivals`) is a rival of ``stand_in``
        for ``target`` (``own_``: the pair's own similarity once made, the same both ways)."""
        if not own_:
            own_.append(_sim(feats, stand_in, target) if w_old else _sim(feats, target, stand_in))
        own: float = own_[0]
        # most rivals are far: an upper bound of their similarity (no op histograms) tells,
        # the cheaper one (no set intersections, never below the other) first
        if w_old:
            if feats.weight_bound(w, target) < own or feats.content_bound(w, target) < own:
                return False
        elif feats.weight_bound(target, w) < own or feats.content_bound(target, w) < own:
            return False
        best = _sim(feats, w, target) if w_old else _sim(feats, target, w)
        if best < own:
            return False
        # mutual best: w is at least as close to target as to any other function there of a
        # comparable size (read in a window of sizes around w's: sim is a pure function, so
        # which of several closer functions is met first does not change the answer); the
        # bounds first: a function whose bound is not above ``best`` is not closer
        if w_old:
            return not any(
                x is not target
                and size_ratio(x.instr_count, w.instr_count) >= RIVAL_SIZE_RATIO
                and feats.weight_bound(w, x) > best
                and feats.content_bound(w, x) > best
                and _sim(feats, w, x) > best
                for x in by_size[0].window(w.instr_count)
            )
        return not any(
            x is not target
            and size_ratio(x.instr_count, w.instr_count) >= RIVAL_SIZE_RATIO
            and feats.weight_bound(x, w) > best
            and feats.content_bound(x, w) > best
            and _sim(feats, x, w) > best
            for x in by_size[1].window(w.instr_count)
        )

    flagged = 0
    for p in todo:
        ro, rn = pg.old_recs[p.old_index], pg.new_recs[p.new_index]
        own_sim: list[float] = []
        if any(closer(w, True, ro, rn, own_sim) for w in rivals(True, ro, rn)) or any(
            closer(w, False, rn, ro, own_sim) for w in rivals(False, rn, ro)
        ):
            p.review = True
            flagged += 1
    return flagged + review_near_rivals(pg, feats, by_size)


# a near-tie: a rival this far behind the pair's own content similarity, or closer (set on
# the HELD-OUT sqlite emcc errors it was designed for; see review_near_rivals)
NEAR_RIVAL_MARGIN = 0.05


def review_near_rivals(
    pg: Any, feats: FeatureCache | None = None, sized: tuple[_BySize, _BySize] | None = None
) -> int:
    """Flag pairs a look-alike without a trusted counterpart nearly ties; returns how many.

    The second half of :func:`review_closer_rivals`, for look-alike siblings (two functions
    of one signature and size whose bodies differ by a few instructions:
    ``vdbeSorterCompare``/``vdbeSorterCompareTail``, 23 and 24 instructions): content
    similarity then ranks the right and the wrong counterpart within a few hundredths, and
    the call graph may pick either. On an unflagged pair whose code differs and whose sizes
    are comparable (``RIVAL_SIZE_RATIO``), a function ``w`` on either side is a near rival when

    * it has no trusted counterpart: none at all, or a **flagged** pair whose other function
      is of an implausible size for it (``size_ratio`` below ``RIVAL_SIZE_RATIO``: the pair
      reads as an inlining mismatch) and further from it than the contested function,
    * it has the very type signature of the pair function it stands in for (stricter than
      the closer rival's result type, to pay for the margin) and a comparable size to the
      other one,
    * its content similarity to the pair's other function is at most ``NEAR_RIVAL_MARGIN``
      behind the pair's own, and
    * that function is its best on that side (mutual best, as in the closer rival check).

    The two functions are then a tie nothing measured breaks, and the pair is flagged (the
    name is carried at a review confidence, never as an identity). Nothing is re-paired.
    """
    todo = []
    for p in pg.by_new.values():
        if p.review or getattr(p, "method", "") in ("name", "import"):
            continue
        ro, rn = pg.old_recs[p.old_index], pg.new_recs[p.new_index]
        if ro.imported or rn.imported or _same_code(ro, rn):
            continue
        if size_ratio(ro.instr_count, rn.instr_count) >= RIVAL_SIZE_RATIO:
            todo.append(p)
    if not todo:
        return 0
    old_list = [r for r in pg.old_recs.values() if not r.imported]
    new_list = [r for r in pg.new_recs.values() if not r.imported]
    fc: FeatureCache = (
        FeatureCache(list(pg.old_recs.values()), list(pg.new_recs.values()))
        if feats is None
        else feats
    )

    def loose(w_old: bool) -> dict[str, list[tuple[FuncRecord, FuncRecord | None]]]:
        """Functions without a trusted counterpart, by type signature, with their partner."""
        out: dict[str, list[tuple[FuncRecord, FuncRecord | None]]] = {}
        for r in old_list if w_old else new_list:
            q = (pg.by_old if w_old else pg.by_new).get(r.index)
            partner = None
            if q is not None:
                partner = pg.new_recs[q.new_index] if w_old else pg.old_recs[q.old_index]
                if not q.review or size_ratio(r.instr_count, partner.instr_count) >= (
                    RIVAL_SIZE_RATIO
                ):
                    continue
            out.setdefault(r.type_sig, []).append((r, partner))
        return out

    loose_old, loose_new = loose(True), loose(False)
    # (index 0: new, 1: old; ``sized``: the closer rival check's, of the same two lists)
    by_size = (_BySize(new_list), _BySize(old_list)) if sized is None else sized

    def near(
        w: FuncRecord, partner: FuncRecord | None, w_old: bool, stand_in, target, f_: list
    ) -> bool:
        if size_ratio(w.instr_count, target.instr_count) < RIVAL_SIZE_RATIO:
            return False
        if not f_:  # (``f_``: the pair's floor once made, the same both ways)
            o_, n_ = (stand_in, target) if w_old else (target, stand_in)  # (w's side decides)
            f_.append(_sim(fc, o_, n_) - NEAR_RIVAL_MARGIN)
        floor: float = f_[0]
        # upper bounds of the rival's similarity (no op histograms) first, the cheaper one
        # (no set intersections, never below the other) before the other
        if w_old:
            if fc.weight_bound(w, target) < floor or fc.content_bound(w, target) < floor:
                return False
        elif fc.weight_bound(target, w) < floor or fc.content_bound(target, w) < floor:
            return False
        best = _sim(fc, w, target) if w_old else _sim(fc, target, w)
        if best < floor:
            return False
        if partner is not None:
            if (_sim(fc, w, partner) if w_old else _sim(fc, partner, w)) >= best:
                return False
        return not any(
            x is not target
            and size_ratio(x.instr_count, w.instr_count) >= RIVAL_SIZE_RATIO
            and (fc.weight_bound(w, x) if w_old else fc.weight_bound(x, w)) > best
            and (fc.content_bound(w, x) if w_old else fc.content_bound(x, w)) > best
            and (_sim(fc, w, x) if w_old else _sim(fc, x, w)) > best
            for x in by_size[not w_old].window(w.instr_count)
        )

    flagged = 0
    for p in todo:
        ro, rn = pg.old_recs[p.old_index], pg.new_recs[p.new_index]
        f: list[float] = []
        if any(near(w, pt, True, ro, rn, f) for w, pt in loose_old.get(ro.type_sig, ())) or any(
            near(w, pt, False, rn, ro, f) for w, pt in loose_new.get(rn.type_sig, ())
        ):
            p.review = True
            flagged += 1
    return flagged


def _sim(feats: FeatureCache, old: FuncRecord, new: FuncRecord) -> float:
    """The pair's content similarity (memoised by the feature cache's store)."""
    total, wsum = feats.content_similarity(old, new)
    return total / wsum if wsum else 0.0


class _BySize:
    """Records sorted by size, for windows of the sizes comparable to one."""

    __slots__ = ("recs", "keys")

    def __init__(self, recs: list[FuncRecord]) -> None:
        self.recs = sorted(recs, key=lambda r: r.instr_count)
        self.keys = [r.instr_count for r in self.recs]

    def window(self, n: int) -> list[FuncRecord]:
        """The records whose size may be comparable to ``n`` (a superset of those with
        ``size_ratio >= RIVAL_SIZE_RATIO``: every one of them when ``n`` is not positive)."""
        if n <= 0:
            return self.recs
        keys = self.keys
        lo = bisect.bisect_left(keys, n * RIVAL_SIZE_RATIO - 1)
        hi = bisect.bisect_right(keys, n / RIVAL_SIZE_RATIO + 1)
        return self.recs[lo:hi]


def _same_code(a: FuncRecord, b: FuncRecord) -> bool:
    return bool(
        (a.body_hash and a.body_hash == b.body_hash)
        or (a.shape_hash and a.shape_hash == b.shape_hash)
    )
