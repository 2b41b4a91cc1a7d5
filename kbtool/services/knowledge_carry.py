"""Carry-over of knowledge beyond names to a new release (issue 27): comments, prototypes, line
comments and local names along matched functions, as ``diff-carry`` through the gate. Split from
:mod:`kbtool.services.knowledge`, which re-exports :func:`carry_knowledge`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from kbtool.kb import knowledge as kn
from kbtool.kb.gate import record_knowledge_drop, upsert_knowledge

CARRY_ACTOR = "diff-carry"


class CarriedPair(NamedTuple):
    """A matched pair whose knowledge may follow it (:func:`carry_knowledge`)."""

    old_index: int
    new_index: int
    old_stable_id: str
    new_stable_id: str
    score: float
    review: bool


def carry_knowledge(
    conn: sqlite3.Connection,
    parent_version_id: int,
    new_version_id: int,
    pairs: Iterable[CarriedPair | tuple[int, int, str, str, float, bool]],
) -> dict[str, int]:
    """Carry comments, prototypes, line comments and local names along matched functions
    ``(old index, new index, old stable_id, new stable_id, score, review)`` whose identity
    changed, as ``diff-carry`` through the gate (evidence ``{carried_from, how}``). A line
    comment is re-anchored by its instruction context, or dropped with an event."""
    out = {"written": 0, "refused": 0, "dropped": 0, "considered": 0}
    olds = [p for p in map(CarriedPair._make, pairs) if p.old_stable_id != p.new_stable_id]
    if not olds:
        return out
    by_sid = kn.for_targets(conn, sorted({p.old_stable_id for p in olds}))
    if not by_sid:
        return out
    # (the code model only once there is knowledge to carry: a later ingest of a KB without
    # any does not import it)
    from kbtool.services.knowledge_code import KnowledgeError, _anchor, _Code, _match_line

    old_code = new_code = None
    for oi, ni, osid, nsid, score, review in olds:
        recs = by_sid.get(osid)
        if not recs:
            continue
        conf_base = max(0.0, min(1.0, float(score)))
        for r in recs:
            out["considered"] += 1
            conf = round(conf_base * float(r["confidence"]), 4)
            if review:
                conf = min(conf, 0.49)
            key, value, how = r["key"], r["value"], "same function"
            if r["kind"] in ("line_comment", "local"):
                if old_code is None:
                    old_code, new_code = _Code(conn, parent_version_id), _Code(conn, new_version_id)
                assert new_code is not None
                try:
                    ostart, oinstrs, otypes = old_code.body(oi)
                    nstart, ninstrs, ntypes = new_code.body(ni)
                except KnowledgeError:
                    continue
                if r["kind"] == "local":
                    li = int(key)
                    if li < len(otypes) and li < len(ntypes) and otypes[li] == ntypes[li]:
                        how = "same local index and type"
                    else:
                        record_knowledge_drop(
                            conn,
                            "local",
                            nsid,
                            key,
                            value,
                            actor=CARRY_ACTOR,
                            version_id=new_version_id,
                            reason=f"local {li} has no counterpart of the same type",
                            evidence={"carried_from": parent_version_id},
                        )
                        out["dropped"] += 1
                        continue
                else:
                    same = [m for _o, m in oinstrs] == [m for _o, m in ninstrs]
                    pos = None
                    if same:
                        pos = next(
                            (k for k, (o, _m) in enumerate(oinstrs) if o - ostart == int(key)), None
                        )
                        how = "same instructions"
                    if pos is None:
                        pos = _match_line(value, ninstrs)
                        how = "re-anchored line"
                    if pos is None:
                        record_knowledge_drop(
                            conn,
                            "line_comment",
                            nsid,
                            key,
                            value,
                            actor=CARRY_ACTOR,
                            version_id=new_version_id,
                            reason="the line's instruction context is gone from the new body",
                            evidence={"carried_from": parent_version_id, "from_index": oi},
                        )
                        out["dropped"] += 1
                        continue
                    key = str(ninstrs[pos][0] - nstart)
                    value = dict(value, anchor=_anchor(ninstrs, pos), ordinal=pos)
            d = upsert_knowledge(
                conn,
                r["kind"],
                nsid,
                key,
                value,
                provenance="diff-carry",
                confidence=conf,
                actor=CARRY_ACTOR,
                version_id=new_version_id,
                evidence={
                    "carried_from": parent_version_id,
                    "how": how,
                    "from_index": oi,
                    "from_stable_id": osid,
                    "from_provenance": r["provenance"],
                    "score": score,
                    "review": review,
                },
            )
            if d["written"]:
                out["written"] += 1
            elif d["reason"] != "no change":
                out["refused"] += 1
    return out
