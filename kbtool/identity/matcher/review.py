"""Review checks over a whole pairing (pure): they flag pairs, never change them.

Used twice: by :func:`kbtool.identity.pairing.pair_rows` on the pairing a diff shows, and by
the matcher on its own final result, so that a pair these checks would flag is never kept as
an *identity* at ingest (a flagged pair's name is carried as a ``diff-carry`` name with a
review flag, at a lower confidence, instead of sharing the old annotation).

A pairing here is anything with ``old_recs``/``new_recs`` (index -> FuncRecord) and
``by_new``/``by_old`` (index -> an object with mutable ``old_index``, ``new_index``,
``score``, ``review``).
"""

from __future__ import annotations

from typing import Any

from kbtool.identity.features import size_ratio
from kbtool.identity.records import FuncRecord

# a pair whose type signature changed is flagged for review below this score
REVIEW_SIG_SCORE = 0.8


def review_signatures(pg: Any) -> int:
    """A changed signature without a high score is a weak match: have a human look."""
    flagged = 0
    for p in pg.by_new.values():
        if not p.review and p.score < REVIEW_SIG_SCORE and \
                pg.old_recs[p.old_index].type_sig != pg.new_recs[p.new_index].type_sig:
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
        p for p in pg.by_new.values()
        if not p.review and p.score < REVIEW_WEAK_SCORE
        and not pg.new_recs[p.new_index].imported
        and size_ratio(pg.old_recs[p.old_index].instr_count,
                       pg.new_recs[p.new_index].instr_count) < WEAK_SIZE_RATIO
    ]
    if not weak:
        return 0
    callers_old = _callers(pg.old_recs)
    callers_new = _callers(pg.new_recs)
    flagged = 0
    for p in weak:
        o, n = p.old_index, p.new_index
        hoods = (
            ([c for c in pg.old_recs[o].calls
              if c != o and c in pg.old_recs and not pg.old_recs[c].imported],
             set(pg.new_recs[n].calls)),
            (callers_old.get(o, ()), set(callers_new.get(n, ()))),
        )
        for lo, ln in hoods:
            if any(q is not None and q.new_index not in ln
                   for q in (pg.by_old.get(x) for x in lo)):
                p.review = True
                flagged += 1
                break
    return flagged


def _callers(recs: dict[int, FuncRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, r in recs.items():
        for c in dict.fromkeys(r.calls):
            if c != i:
                out.setdefault(c, []).append(i)
    return out


