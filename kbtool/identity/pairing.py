"""Pairing two versions' functions (pure, over stored rows): identities, then the matcher.

1. Functions that share a ``stable_id`` on both sides are the same logical function (the
   identity the KB recorded at ingest) and are paired first.
2. The matcher (:func:`kbtool.identity.matcher.match_functions`, fuzzy) runs over both whole
   versions; its pairs between functions not paired in step 1 are added. Those are the
   pairs whose new side did not keep the old identity: the ones carry-over names.
3. What is left is ``deleted`` (old side) or ``new`` (new side).

Review flags (never change the pairing): the matcher's own, a changed signature below
``REVIEW_SIG_SCORE``, next to a wrapper split, and weak pairs the call graph does not back.
A flagged pair's score is capped just below ``REVIEW_SCORE`` (``FLAGGED_SCORE``), so no pair
reads as a confident ``unchanged``/``moved`` while it waits for review.
"""

from __future__ import annotations

from typing import Any

from kbtool.identity.features import FeatureCache, shared_features
from kbtool.identity.matcher import REVIEW_SCORE, FuncRecord, Match, match_functions
from kbtool.identity.matcher.family import FLAGGED_SCORE
from kbtool.identity.matcher.review import (  # noqa: F401  (re-exported: the pairing's checks)
    REVIEW_SIG_SCORE,
    REVIEW_WEAK_SCORE,
    WEAK_SCORE,
    WEAK_SIZE_RATIO,
    WRAPPER_MAX_INSTR,
    review_closer_rivals,
    review_inlining_boundaries,
    review_no_counterpart,
    review_pairing,
    review_signatures,
    review_weak_neighbourhoods,
    review_wrapper_splits,
)
from kbtool.identity.records import records_from_rows
from kbtool.plainclass import NEW, Plain


class Pair(Plain):
    """One pair of the report's pairing (a ``@dataclass(slots=True)`` in behaviour:
    :mod:`kbtool.plainclass`, no dataclass made at import)."""

    __slots__ = _FIELDS = ("old_index", "new_index", "score", "method", "review", "identity")

    old_index: int
    new_index: int
    score: float
    method: str  # matcher method, or "identity" when only the KB identity pairs them
    review: bool
    identity: bool  # both sides share the stable_id

    def __init__(
        self,
        old_index: int,
        new_index: int,
        score: float,
        method: str,
        review: bool,
        identity: bool,
    ) -> None:
        self.old_index = old_index
        self.new_index = new_index
        self.score = score
        self.method = method
        self.review = review
        self.identity = identity


class Pairing(Plain):
    """The pairing of two versions plus everything loaded to compute it (a ``@dataclass``
    in behaviour: :mod:`kbtool.plainclass`)."""

    _FIELDS = (
        "from_version_id",
        "to_version_id",
        "old_rows",
        "new_rows",
        "old_recs",
        "new_recs",
        "by_new",
        "by_old",
    )

    from_version_id: int
    to_version_id: int
    old_rows: dict[int, dict[str, Any]]
    new_rows: dict[int, dict[str, Any]]
    old_recs: dict[int, FuncRecord]
    new_recs: dict[int, FuncRecord]
    by_new: dict[int, Pair]
    by_old: dict[int, Pair]

    def __init__(
        self,
        from_version_id: int,
        to_version_id: int,
        old_rows: dict[int, dict[str, Any]],
        new_rows: dict[int, dict[str, Any]],
        old_recs: dict[int, FuncRecord],
        new_recs: dict[int, FuncRecord],
        by_new: dict[int, Pair] = NEW,
        by_old: dict[int, Pair] = NEW,
    ) -> None:
        self.from_version_id = from_version_id
        self.to_version_id = to_version_id
        self.old_rows = old_rows
        self.new_rows = new_rows
        self.old_recs = old_recs
        self.new_recs = new_recs
        self.by_new = {} if by_new is NEW else by_new
        self.by_old = {} if by_old is NEW else by_old

    def defined_pairs(self) -> list[Pair]:
        return [p for n, p in sorted(self.by_new.items()) if not self.new_rows[n]["imported"]]

    def same_code(self, p: Pair) -> bool:
        """The two bodies are the same code up to relocation (see the module docstring)."""
        o, n = self.old_rows[p.old_index], self.new_rows[p.new_index]
        if o["body_hash"] and o["body_hash"] == n["body_hash"]:
            return True
        # the same shape, or the same instruction stream, strings and small constants (only
        # addresses moved) -- and the callees paired with each other (asked last: it is the
        # dearest test, and a pair of other shapes and streams needs no answer from it)
        if not (o["shape_hash"] and o["shape_hash"] == n["shape_hash"]) and not (
            o["ops"] == n["ops"]
            and o["strings"] == n["strings"]
            and _small(o["consts"]) == _small(n["consts"])
        ):
            return False
        return self._callees_map(o, n)

    def _callees_map(self, o: dict[str, Any], n: dict[str, Any]) -> bool:
        co = dict.fromkeys(o["calls"])  # distinct callees in first-call order
        cn = dict.fromkeys(n["calls"])
        if len(co) != len(cn):
            return False
        by_old = self.by_old
        for a, b in zip(co, cn, strict=True):
            q = by_old.get(a)
            if q is None or q.new_index != b:
                return False
        return True


ADDRESS_MIN = 1024  # constants this large may be linear-memory addresses (relocated by a rebuild)


def _small(consts: list[int]) -> set[int]:
    return {c for c in consts if -ADDRESS_MIN < c < ADDRESS_MIN}


def pair_rows(
    from_version_id: int,
    to_version_id: int,
    old_list: list[dict[str, Any]],
    new_list: list[dict[str, Any]],
    *,
    fuzzy: bool = True,
    matches: list[Match] | None = None,
    old_recs: list[FuncRecord] | None = None,
    new_recs: list[FuncRecord] | None = None,
) -> Pairing:
    """Pair two versions' function rows (older, newer): identities first, then the matcher.

    ``matches``: the matcher's result when the caller already ran it (ingest), else run here.
    ``old_recs``: ``records_from_rows(old_list)`` when the caller already built them (ingest:
    the matcher's, which the review memo then finds as the very same objects); ``new_recs``
    likewise of ``new_list`` (ingest: the matcher's records of the module it stored, equal
    field by field to those its stored rows give).
    The matcher and every review check share one store of features and similarities
    (:func:`kbtool.identity.features.shared_features`).
    """
    if old_recs is None:
        old_recs = records_from_rows(old_list)
    if new_recs is None:
        new_recs = records_from_rows(new_list)
    with shared_features(old_recs, new_recs):
        return _pair_records(
            from_version_id, to_version_id, old_list, new_list, old_recs, new_recs, fuzzy, matches
        )


def _pair_records(
    from_version_id: int,
    to_version_id: int,
    old_list: list[dict[str, Any]],
    new_list: list[dict[str, Any]],
    old_recs: list[FuncRecord],
    new_recs: list[FuncRecord],
    fuzzy: bool,
    matches: list[Match] | None,
) -> Pairing:
    pg = Pairing(
        from_version_id=from_version_id,
        to_version_id=to_version_id,
        old_rows={r["index"]: r for r in old_list},
        new_rows={r["index"]: r for r in new_list},
        old_recs={r.index: r for r in old_recs},
        new_recs={r.index: r for r in new_recs},
    )
    if matches is None:
        matches = match_functions(old_recs, new_recs, fuzzy=fuzzy)
    by_new_match: dict[int, Match] = {m.new_index: m for m in matches}

    # 1. identity pairs
    old_by_sid: dict[str, int] = {}
    for r in old_list:
        old_by_sid.setdefault(r["stable_id"], r["index"])
    feats: FeatureCache | None = None
    for r in new_list:
        o = old_by_sid.get(r["stable_id"])
        if o is None or o in pg.by_old:
            continue
        if pg.old_rows[o]["imported"] != r["imported"]:
            continue
        n = r["index"]
        m = by_new_match.get(n)
        if m is not None and m.old_index == o:
            p = Pair(o, n, m.score, m.method, m.review, True)
        else:
            if feats is None:
                feats = FeatureCache(old_recs, new_recs)
            ro, rn = pg.old_recs[o], pg.new_recs[n]
            total, wsum = feats.content_similarity(ro, rn)
            s = total / wsum if wsum else 0.0
            if ro.type_sig != rn.type_sig:
                s *= 0.8
            if ro.body_hash and ro.body_hash == rn.body_hash:
                s = 1.0
            # the KB's identity and the matcher disagree (or the matcher found nothing)
            p = Pair(
                o,
                n,
                round(min(1.0, max(0.0, s)), 4),
                "identity",
                m is not None or s < REVIEW_SCORE,
                True,
            )
        pg.by_new[n] = p
        pg.by_old[o] = p
    # 2. matcher pairs among the rest
    for n in sorted(by_new_match):
        m = by_new_match[n]
        if n in pg.by_new or m.old_index in pg.by_old:
            continue
        p = Pair(m.old_index, n, m.score, m.method, m.review, False)
        pg.by_new[n] = p
        pg.by_old[m.old_index] = p
    # the review checks (two functions without a counterpart last: weak, no name carried);
    # inside review_memo (ingest) the matcher's verdicts on this very pairing are reused
    review_pairing(pg)
    # a flagged pair never shows a confident score (never "unchanged at 0.99, review")
    for p in pg.by_new.values():
        if p.review and p.score > FLAGGED_SCORE:
            p.score = FLAGGED_SCORE
    return pg
