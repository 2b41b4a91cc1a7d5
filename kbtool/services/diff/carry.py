"""Carry-over: names follow matched functions into a newer version, through the gate.

Functions that kept their identity (same ``stable_id``) already share the annotation, so
only matched new-side functions with a *different* stable_id receive anything: the old
function's name (and summary) as a ``diff-carry`` annotation, via
:func:`kbtool.kb.gate.upsert_symbol` (the lowest authority: it never overrides a human,
oracle, export or agent name, and every refusal is recorded as an event).

Confidence: ``score x old confidence``, capped at 0.49 when the match is flagged for
review (so ``run_agent_pass --only-unconfident`` looks at those again), rounded to 4
places.

Knowledge beyond names (comments, prototypes, line comments, local names) follows the same
pairs through :func:`kbtool.services.knowledge.carry_knowledge` (``diff-carry``, evidence
``{carried_from, how}``; a line comment whose instruction context is gone is dropped with an
event); counted as ``knowledge_carried`` / ``knowledge_dropped``.

Weak pairs (score below ``CARRY_MIN_SCORE``: always flagged for review) carry no name: the
old name becomes an open *suggestion* of the new version when the function has no name and
the name is free (``weak`` counts the pairs, ``suggested`` the suggestions; the TUI's
suggestions screen and ``accept_suggestion`` take them), and the diff report lists the pair
for review.

Skipped without a gate decision: the new function already has the same name (``already``),
or the name is already bound to another function of the new version (``duplicate``: one
of the two matches is wrong, the one that kept its identity is trusted).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.report import Pair, Pairing, pair_versions
from kbtool.services.knowledge_carry import CarriedPair, carry_knowledge

__all__ = ["carry_names", "carry_confidence", "REVIEW_CAP", "CARRY_MIN_SCORE", "ACTOR"]

REVIEW_CAP = 0.49
# pairs scoring below this carry no name, only a suggestion (issue 23 point 10, measured by
# benchmarks/optlevels.py: a fifth of such names were wrong across opt levels)
CARRY_MIN_SCORE = 0.55
ACTOR = "diff-carry"


def carry_confidence(score: float, old_confidence: float | None, review: bool) -> float:
    """Confidence of a carried name, derived from the match score (see the module docstring)."""
    c = max(0.0, min(1.0, float(score))) * max(
        0.0, min(1.0, float(old_confidence if old_confidence is not None else 1.0))
    )
    if review:
        c = min(c, REVIEW_CAP)
    return round(c, 4)


def _suggest(
    conn: sqlite3.Connection,
    p: Pair,
    pg: Pairing,
    src: dict[str, Any],
    vid: int,
    parent: int,
    *,
    free: bool,
) -> int:
    """A weak pair's old name as an open suggestion (TUI ``S``, ``accept_suggestion``) when
    the function has no name and the name is not used elsewhere; returns 1 when stored."""
    if not free:
        return 0
    return int(
        store.save_suggestion(
            conn,
            {
                "version_id": vid,
                "stable_id": pg.new_rows[p.new_index]["stable_id"],
                "func_index": p.new_index,
                "name": src["name"],
                "confidence": carry_confidence(p.score, src["confidence"], True),
                "backend": ACTOR,
                "model": None,
                "rule": "weak-pair",
                "source": "diff",
                "evidence": {
                    "from_version_id": parent,
                    "from_index": p.old_index,
                    "method": p.method,
                    "score": p.score,
                    "reasons": [
                        f"paired with function {p.old_index} of version {parent} "
                        f"({p.method}, score {p.score:.2f}): too weak to carry"
                    ],
                },
            },
        )
    )


def _named(conn: sqlite3.Connection, version_id: int) -> dict[int, dict[str, Any]]:
    return queries.annotations_by_index(conn, version_id, defined_only=True)


def carry_names(
    conn: sqlite3.Connection,
    parent_version_id: int,
    new_version_id: int,
    *,
    pairing: Pairing | None = None,
    actor: str = ACTOR,
    defined: list[Pair] | None = None,
) -> dict[str, Any]:
    """Carry names from ``parent_version_id`` to matched functions of ``new_version_id``
    (``defined``: ``pairing.defined_pairs()`` when the caller has it).

    Returns counts: ``considered`` (matched pairs with a new identity whose old side is
    named), ``written``, ``refused`` (by the gate), ``already`` (same name there),
    ``duplicate`` (name bound elsewhere in the new version), ``review`` (written names
    whose match is flagged for review).
    """
    pg = pairing or pair_versions(conn, parent_version_id, new_version_id)
    old_named = _named(conn, parent_version_id)
    new_named = _named(conn, new_version_id)
    bound = {}
    for idx, a in new_named.items():
        bound.setdefault(a["name"], idx)
    out = {
        "considered": 0,
        "written": 0,
        "refused": 0,
        "already": 0,
        "duplicate": 0,
        "review": 0,
        "weak": 0,
        "suggested": 0,
    }
    moved: list[CarriedPair] = []
    with transaction(conn):
        for p in pg.defined_pairs() if defined is None else defined:
            if p.identity:
                continue
            osid = pg.old_rows[p.old_index]["stable_id"]
            nsid = pg.new_rows[p.new_index]["stable_id"]
            if osid != nsid:
                moved.append(CarriedPair(p.old_index, p.new_index, osid, nsid, p.score, p.review))
            src = old_named.get(p.old_index)
            if src is None:
                continue
            orow, nrow = pg.old_rows[p.old_index], pg.new_rows[p.new_index]
            if orow["stable_id"] == nrow["stable_id"]:
                continue
            out["considered"] += 1
            if p.score < CARRY_MIN_SCORE:  # a weak pair: a suggestion for a person, no name
                out["weak"] += 1
                out["suggested"] += _suggest(
                    conn,
                    p,
                    pg,
                    src,
                    new_version_id,
                    parent_version_id,
                    free=p.new_index not in new_named and src["name"] not in bound,
                )
                continue
            cur = new_named.get(p.new_index)
            if cur is not None and cur["name"] == src["name"]:
                out["already"] += 1
                continue
            holder = bound.get(src["name"])
            if holder is not None and holder != p.new_index:
                out["duplicate"] += 1
                continue
            conf = carry_confidence(p.score, src["confidence"], p.review)
            d = upsert_symbol(
                conn,
                nrow["stable_id"],
                src["name"],
                provenance="diff-carry",
                confidence=conf,
                actor=actor,
                summary=src["summary"],
                version_id=new_version_id,
                evidence={
                    "source": "diff",
                    "from_version_id": parent_version_id,
                    "from_index": p.old_index,
                    "from_stable_id": orow["stable_id"],
                    "from_provenance": src["provenance"],
                    "method": p.method,
                    "score": p.score,
                    "review": p.review,
                },
            )
            if d["written"]:
                out["written"] += 1
                out["review"] += int(p.review)
                bound.setdefault(src["name"], p.new_index)
            elif d["reason"] != "no change":
                out["refused"] += 1
        k = carry_knowledge(conn, parent_version_id, new_version_id, moved)
    out["knowledge_carried"], out["knowledge_dropped"] = k["written"], k["dropped"]
    return out
