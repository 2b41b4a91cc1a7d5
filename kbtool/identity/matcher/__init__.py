"""Function matcher: pairs the functions of two versions of a module (pure, stdlib only).

Strongest evidence first (the families Diaphora and BinDiff use), each stage one-to-one
among the functions still unmatched:

1. ``import``    same import "module.field" (minified import names need the call graph)
2. ``body``      exact body hash, unique on both sides. Equal bytes mean equal callees only
                 if the callee indices mean the same thing in both builds, so a body that is
                 unique while its shape is not (wrappers calling different targets at
                 coinciding indices) waits until its callees are matched and agree.
3. ``shape``     normalised shape hash, unique on both sides
4. ``name``      a non-minified export / name-section name present on both sides
5. ``callgraph`` propagation from matched pairs to their callees and callers, iterated to a
                 fixpoint: hash groups inside a neighbourhood (equal groups paired by call
                 order), the single remaining pair, a signature unique in both
                 neighbourhoods, the position between matched anchors of the call sequence,
                 a clearly best pair inside a small neighbourhood. The function table
                 (element segments, ``FuncRecord.table_slots``) is one more ordered
                 neighbourhood.
6. ``similarity`` (``fuzzy=True`` only) a feature score (op bigrams, size, idf-weighted
                 constants and strings, loops, call_indirect, agreement of matched callees
                 and callers, position between matched anchors of the function order,
                 signature) with a global best-first one-to-one assignment (lazy greedy,
                 scores refreshed as neighbours get matched) in rounds of falling
                 thresholds, each demanding a lead over the second candidate; from the
                 middle rounds on, an order-preserving alignment (LCS) of the unmatched
                 functions between consecutive anchors, which pairs families of
                 near-identical functions by their order; call-graph propagation after each
                 step. Candidates come from blocking (signature + size window, rare strings
                 and constants, neighbours of matched functions), never all pairs.
   Leftovers: equal bodies in groups of equal size paired by index order, minified
   imports with the same name and signature (both flagged for review).

After stages 1-5 and again at the end, :mod:`kbtool.identity.matcher.family` checks
look-alike families (same signature and instruction stream: context decides, a tie or
context against body is flagged) and wrapper splits (the name follows the callers to a thin
wrapper around the outlined body, or the pair is flagged); a flagged pair's score is capped
just below ``REVIEW_SCORE``.

``review`` is set when the score is below ``REVIEW_SCORE`` or the pair was not at least
``REVIEW_MARGIN`` ahead of the best alternative of either function (alternatives taken by
a match that was itself flagged still count).

With ``fuzzy=False`` only stages 1-5 run (what ingest uses to carry identities).

Bounded work (issue 24): candidates come from blocking with at most ``CAND_IN`` pairs per
function, the assignment checks rivals in O(1), gap alignment only runs on gaps of at most
``GAP_CELLS`` cells, the look-alike review looks at ``FAMILY_RIVALS`` rivals per pair. Each
stage (call graph, similarity, alignment, family) counts its comparisons in a
:class:`MatchStats` and stops at a budget linear in the function count; the stats (and a
note per stage that stopped) come back through the ``stats`` argument.

Determinism: records are ordered by index before anything else, every tie is broken by
indices and sums over sets are exactly rounded, so the result depends neither on the
input order nor on hash seeds.

Compiled with mypyc into the twin ``kbtool.identity._cmatcher`` (every part, the features
included; :mod:`kbtool.identity.matcher_active` picks it as this package starts, and the
pure package is the fallback when it is absent or stale or ``KBTOOL_MATCHER=pure``). The
parts import each other relatively so that the compiled copy calls its own parts.
"""

from __future__ import annotations

from .. import matcher_active as _active

if _active.swap(__name__) is None:  # (else this name is the compiled twin from now on)
    from ..records import FuncRecord, Match
    from .base import REVIEW_MARGIN, REVIEW_SCORE, MatchStats
    from .driver import (  # noqa: F401
        PreparedOld,
        _Flag,
        _Matcher,
        _View,
        match_functions,
        match_functions_staged,
        prepare_old,
    )

__all__ = [
    "FuncRecord",
    "Match",
    "MatchStats",
    "match_functions",
    "match_functions_staged",
    "prepare_old",
    "PreparedOld",
    "REVIEW_SCORE",
    "REVIEW_MARGIN",
]
