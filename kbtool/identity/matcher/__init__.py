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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbtool.identity.features import shared_features
from kbtool.identity.matcher.base import REVIEW_MARGIN, REVIEW_SCORE, MatcherBase, MatchStats
from kbtool.identity.matcher.callgraph import CallgraphStage
from kbtool.identity.matcher.exact import ExactStages
from kbtool.identity.matcher.family import FamilyStage
from kbtool.identity.matcher.review import review_pairing
from kbtool.identity.matcher.similarity import SimilarityStage
from kbtool.identity.records import FuncRecord, Match

__all__ = [
    "FuncRecord",
    "Match",
    "MatchStats",
    "match_functions",
    "match_functions_staged",
    "REVIEW_SCORE",
    "REVIEW_MARGIN",
]


class _Matcher(ExactStages, CallgraphStage, SimilarityStage, FamilyStage, MatcherBase):
    # ---------------------------------------------------------------- driver
    def run(self, fuzzy: bool) -> list[Match]:
        # the final pairing only: the undoubted identities (a second pass of the review
        # checks, a quarter of a diff's pairing on ffmpeg) are ingest's, not a diff's
        return self.run_staged(fuzzy, identities=False)[-1]

    def run_staged(
        self, fuzzy: bool, *, identities: bool = True
    ) -> tuple[list[Match], list[Match]]:
        """(stages 1-5 result, final result): one run gives both (ingest needs both).
        ``identities=False``: the first is the stages 1-5 result before the final pairing's
        review (:meth:`undoubted`), for a caller that reads only the final result."""
        self.stage_imports()
        while True:
            before = len(self.result)
            self.stage_hash("body_hash", "body")
            self.stage_hash("shape_hash", "shape")
            self.stage_names()
            self.propagate()
            if self.stage_wrapper_splits():
                self.propagate()
                continue
            if len(self.result) == before:
                break
        if self.review_families():
            self.propagate()  # a re-paired family freed functions the call graph may place
            self.review_families()
        self.cap_flagged()
        # identities are kept by decided evidence only: a flagged pair (a look-alike nothing
        # decides, a doubtful wrapper split) stays in the full pairing, where carry-over
        # names it with a review flag, but is no identity
        exact = [self.result[n] for n in sorted(self.result) if not self.result[n].review]
        if not fuzzy:
            return exact, exact
        for threshold, margin in self.ROUNDS:
            while not self.exhausted("similarity"):
                got = self.similarity_round(threshold, margin)
                self.propagate()
                if threshold <= self.GAP_FROM:
                    got += self.gap_align(max(threshold, self.GAP_MIN))
                    self.propagate()
                if not got:
                    break
        self.stage_equal_groups()
        self.propagate()
        self.stage_minified_imports()
        self.propagate()
        if self.stage_wrapper_splits():
            self.propagate()
        if self.review_families():
            self.propagate()
            self.review_families()
        self.cap_flagged()
        final = [self.result[n] for n in sorted(self.result)]
        return (self.undoubted(exact, final) if identities else exact), final

    def undoubted(self, exact: list[Match], final: list[Match]) -> list[Match]:
        """The exact pairs still unflagged in the final pairing once the pairing's own review
        checks (:mod:`kbtool.identity.matcher.review`) ran on it: a pair a diff would show
        flagged is no identity (its name is carried with the review flag instead)."""
        view = _View(self.OLD.recs, self.NEW.recs, final)
        review_pairing(view)  # (inside review_memo, ingest's pairing reuses these verdicts)
        ok = {(p.old_index, p.new_index) for p in view.by_new.values() if not p.review}
        return [m for m in exact if (m.old_index, m.new_index) in ok]


@dataclass(slots=True)
class _Flag:
    old_index: int
    new_index: int
    score: float
    review: bool
    method: str


class _View:
    """A pairing as the review checks read it (mutable copies of the matches)."""

    def __init__(self, old_recs: dict, new_recs: dict, matches: list[Match]) -> None:
        self.old_recs, self.new_recs = old_recs, new_recs
        self.by_new = {
            m.new_index: _Flag(m.old_index, m.new_index, m.score, m.review, m.method)
            for m in matches
        }
        self.by_old = {p.old_index: p for p in self.by_new.values()}


def _one_store(m: _Matcher):
    """The run's stages and its review checks (:meth:`_Matcher.undoubted`) share one store
    of features and similarities (they read the same records: the sides' by-index lists)."""
    return shared_features(list(m.OLD.recs.values()), list(m.NEW.recs.values()))


def match_functions(
    old: Sequence[FuncRecord],
    new: Sequence[FuncRecord],
    *,
    fuzzy: bool = True,
    stats: list[MatchStats] | None = None,
) -> list[Match]:
    """One-to-one matches between the functions of ``old`` and ``new``, sorted by new index.

    ``fuzzy=False``: only unique, non-similarity evidence (imports, hashes, names, call
    graph) not flagged for review, what ingest uses to carry stable identities.
    ``stats``: a list the run's :class:`MatchStats` (work per stage, budget notes) is
    appended to.
    """
    m = _Matcher(old, new)
    with _one_store(m):
        out = m.run(fuzzy)
    if stats is not None:
        stats.append(m.finish_stats())
    return out


def match_functions_staged(
    old: Sequence[FuncRecord],
    new: Sequence[FuncRecord],
    *,
    stats: list[MatchStats] | None = None,
) -> tuple[list[Match], list[Match]]:
    """``(match_functions(fuzzy=False), match_functions(fuzzy=True))`` from one matcher run:
    the unique evidence ingest carries identities by, and the full pairing diff and carry-over
    use. The first is exactly the non-fuzzy result (a snapshot taken before stage 6, without
    the pairs flagged for review)."""
    m = _Matcher(old, new)
    with _one_store(m):
        out = m.run_staged(True)
    if stats is not None:
        stats.append(m.finish_stats())
    return out
