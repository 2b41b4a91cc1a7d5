"""The matcher's driver: the stages in their order over one run (see the package's
docstring for the stages and the evidence each uses)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbtool.wasm.kept import keep_also

from ..records import FuncRecord, Match
from .base import MatchStats, _Side
from .exact import ExactStages
from .features import StorePart, shared_features
from .review import review_pairing


class _Matcher(ExactStages):
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
        view.callers = (self.OLD.callers, self.NEW.callers)  # (the checks' callers: the same)
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
        # each side's callers by function (old, new), when the matcher's sides give them
        self.callers: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]] | None = None


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


class PreparedOld:
    """What a matcher run computes from its old records alone (:func:`prepare_old`)."""

    __slots__ = ("old", "side", "part", "spent")

    def __init__(self, old: Sequence[FuncRecord]) -> None:
        self.old = old
        self.side = _Side(old)
        # the feature store's counts of the old side, in the order a store reads it
        self.part: StorePart | None = StorePart(list(self.side.recs.values()))
        # the run's matcher once done, freed with this object: its teardown (~157 M
        # instructions on ffmpeg, every dict and tuple of the run) not on the answer's
        # path (the early match child holds this until it exits)
        self.spent: object = None


def prepare_old(old: Sequence[FuncRecord]) -> PreparedOld:
    """The old side of a later :func:`match_functions_staged` over these very records
    (``old_prepared=``), made before the new records are known: the side's indexes and the
    feature store's counts of its strings and constants. The run continues from them, with
    the same results. The records must not change meanwhile; the counts serve one run, whose
    matcher (its whole state) the object then holds until it is freed itself."""
    return PreparedOld(old)


def match_functions_staged(
    old: Sequence[FuncRecord],
    new: Sequence[FuncRecord],
    *,
    stats: list[MatchStats] | None = None,
    old_prepared: PreparedOld | None = None,
) -> tuple[list[Match], list[Match]]:
    """``(match_functions(fuzzy=False), match_functions(fuzzy=True))`` from one matcher run:
    the unique evidence ingest carries identities by, and the full pairing diff and carry-over
    use. The first is exactly the non-fuzzy result (a snapshot taken before stage 6, without
    the pairs flagged for review). ``old_prepared``: :func:`prepare_old` of this very ``old``
    (another's is ignored)."""
    prep = old_prepared if old_prepared is not None and old_prepared.old is old else None
    if prep is not None:
        m = _Matcher(old, new, prep.side, prep.part)
        prep.part = None  # (its counts serve one store)
    else:
        m = _Matcher(old, new)
    with _one_store(m):
        out = m.run_staged(True)
    if stats is not None:
        stats.append(m.finish_stats())
    if prep is not None:
        prep.spent = m
    else:  # (a process ending by ``os._exit`` right after its ingest never frees it)
        keep_also(m)
    return out
