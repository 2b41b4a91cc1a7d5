"""The gate for every annotation beyond names (comments, prototypes, local and data names,
types): one ``knowledge`` row keyed by (kind, target, key), the same decision, text discipline,
events and exact revert as names (:mod:`kbtool.kb.gate`, which re-exports these).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from kbtool.kb import knowledge as kn
from kbtool.kb.db import now, transaction
from kbtool.kb.gate_events import _record_event, _require_known
from kbtool.kb.gate_rules import (
    EXCERPT,
    MAX_EVIDENCE_TEXT,
    Decision,
    _decide,
    _merge_evidence,
    clip,
    excerpt,
    validate_confidence,
)
from kbtool.kb.provenance import EVENT_KIND, PROVENANCES

# --------------------------------------------------------------------------- knowledge
# Every other kind of annotation (issue 27: comments, line comments, prototypes, local names,
# data names; types later) goes through the same decision as names: `_decide` (authority,
# confidence, lock), the same text discipline (kind rules in kbtool.kb.knowledge), the same
# events (one row per decision, refusals bounded and counted), the same exact revert. The
# record is one `knowledge` row keyed by (kind, target, key); its events are annotation_events
# rows whose stable_id is `k:<kind>:<target>:<key>` (so a function's name history and name
# revert are unchanged) with subject/target/akey set.


def annotation_id(kind: str, target: str, key: str = "") -> str:
    """The events key of one annotation (``annotation_events.stable_id``)."""
    return f"k:{kind}:{target}:{key}"


def _k_current(conn: sqlite3.Connection, kind: str, target: str, key: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT value, provenance, confidence, locked, evidence FROM knowledge"
        " WHERE kind = ? AND target = ? AND key = ?",
        (kind, target, key),
    ).fetchone()
    if row is None:
        return None
    return {
        "value": json.loads(row[0]),
        "provenance": row[1],
        "confidence": float(row[2]),
        "locked": bool(row[3]),
        "evidence": json.loads(row[4] or "[]"),
    }


def _k_write(
    conn: sqlite3.Connection,
    kind: str,
    target: str,
    key: str,
    rec: dict[str, Any] | None,
    version_id: int | None,
) -> None:
    if rec is None:
        conn.execute(
            "DELETE FROM knowledge WHERE kind = ? AND target = ? AND key = ?", (kind, target, key)
        )
        return
    conn.execute(
        "INSERT INTO knowledge (kind, target, key, value, provenance, confidence, locked, evidence,"
        " version_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(kind, target, key) DO UPDATE"
        " SET value=excluded.value, provenance=excluded.provenance, confidence=excluded.confidence,"
        " locked=excluded.locked, evidence=excluded.evidence, version_id=excluded.version_id,"
        " updated_at=excluded.updated_at",
        (
            kind,
            target,
            key,
            json.dumps(rec["value"], sort_keys=True),
            rec["provenance"],
            rec["confidence"],
            int(rec["locked"]),
            json.dumps(rec["evidence"], sort_keys=True),
            version_id,
            now(),
        ),
    )


def _k_snapshot(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: rec[k] for k in ("value", "provenance", "confidence", "locked", "evidence")}


def _k_target_version(
    conn: sqlite3.Connection, kind: str, target: str
) -> tuple[int | None, str | None]:
    """(latest version id, wasm type signature) of a function target; KB error if unknown."""
    version_id = _require_known(conn, target)
    row = conn.execute(
        "SELECT type_sig FROM functions WHERE stable_id = ? AND version_id = ?",
        (target, version_id),
    ).fetchone()
    return version_id, (row[0] if row else None)


def upsert_knowledge(
    conn: sqlite3.Connection,
    kind: str,
    target: str,
    key: str,
    value: dict[str, Any] | None,
    *,
    provenance: str,
    confidence: float,
    actor: str,
    evidence: dict[str, Any] | None = None,
    lock: bool | None = None,
    version_id: int | None = None,
    event_kind: str | None = None,
    yield_to_human: bool = False,
) -> Decision:
    """Propose ``value`` for the annotation ``(kind, target, key)`` (``None``: clear it); the
    same decision as :func:`upsert_symbol`. Function kinds need a known stable_id
    (:class:`UnknownStableIdError` otherwise); a prototype is normalised and checked against
    the function's wasm signature. Every refusal is a decision with its event."""
    if provenance not in PROVENANCES:
        raise ValueError(f"unknown provenance {provenance!r}; one of {', '.join(PROVENANCES)}")
    if kind not in kn.VALIDATORS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(kn.VALIDATORS)}")
    key = str(key)
    aid = annotation_id(kind, str(target)[:300], key[:40])
    with transaction(conn):
        type_sig = None
        problem = kn.validate_target(kind, target)
        if problem is None and kind in kn.FUNCTION_KINDS:
            ctx_version, type_sig = _k_target_version(conn, kind, target)
            if version_id is None:
                version_id = ctx_version
        cur = _k_current(conn, kind, target, key) if problem is None else None
        ev = excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
        ev.setdefault("actor", actor)
        if problem is None and value is not None:
            if not isinstance(value, dict):
                problem = f"invalid {kind}: not an object"
            else:
                problem = kn.VALIDATORS[kind](key, value)
        if problem is None and kind == "prototype" and value is not None:
            parsed = kn.parse_prototype(value["text"])
            value = dict(parsed)
            if type_sig:
                mismatch = kn.check_prototype(parsed, type_sig)
                if mismatch:
                    problem = f"prototype disagrees with the wasm signature: {mismatch}"
        problem = problem or validate_confidence(confidence)
        common = {"subject": kind, "target": str(target)[:300], "akey": key[:40]}
        proposal = {"value": excerpt(value), "provenance": provenance, "confidence": confidence}
        if problem is not None:
            _record_event(
                conn,
                stable_id=aid,
                kind="rejection",
                written=False,
                reason=problem,
                provenance=provenance,
                confidence=None,
                actor=actor,
                old=_k_snapshot(cur),
                new=excerpt(proposal),
                evidence=ev,
                version_id=version_id,
                **common,
                old_text=kn.display(kind, cur["value"]) if cur else None,
                new_text=clip(
                    str(kn.display(kind, value if isinstance(value, dict) else None)), EXCERPT
                ),
            )
            return {"written": False, "reason": problem}
        confidence = float(confidence)
        want_lock = bool(lock if lock is not None else True) if provenance == "human" else False
        if value is None and cur is None:
            return {"written": False, "reason": "no change"}
        if (
            cur is not None
            and value is not None
            and cur["value"] == value
            and cur["provenance"] == provenance
            and cur["locked"] == want_lock
            and (
                confidence == cur["confidence"]
                or (provenance != "human" and confidence < cur["confidence"])
            )
        ):
            return {"written": False, "reason": "no change"}
        ok, reason = _decide(cur, provenance, confidence)
        reason = "new annotation" if cur is None else reason.replace(" name", "")
        if ok and yield_to_human and cur is not None and cur["provenance"] == "human":
            ok, reason = (
                False,
                "this KB's human annotation stays (an imported one does not replace it)",
            )
        if not ok:
            _record_event(
                conn,
                stable_id=aid,
                kind="rejection",
                written=False,
                reason=reason,
                provenance=provenance,
                confidence=confidence,
                actor=actor,
                old=_k_snapshot(cur),
                new=excerpt(proposal),
                evidence=ev,
                version_id=version_id,
                **common,
                old_text=kn.display(kind, cur["value"]) if cur else None,
                new_text=kn.display(kind, value),
            )
            return {"written": False, "reason": reason}
        new = (
            None
            if value is None
            else {
                "value": value,
                "provenance": provenance,
                "confidence": confidence,
                "locked": want_lock,
                "evidence": _merge_evidence(cur, provenance, ev),
            }
        )
        _k_write(conn, kind, target, key, new, version_id)
        _record_event(
            conn,
            stable_id=aid,
            kind=event_kind or EVENT_KIND[provenance],
            written=True,
            reason=reason if value is not None else f"cleared ({reason})",
            provenance=provenance,
            confidence=confidence,
            actor=actor,
            old=_k_snapshot(cur),
            new=_k_snapshot(new) or {"value": None},
            evidence=ev,
            version_id=version_id,
            **common,
            old_text=kn.display(kind, cur["value"]) if cur else None,
            new_text=kn.display(kind, value),
        )
        return {"written": True, "reason": reason if value is not None else "cleared"}


def record_knowledge_drop(
    conn: sqlite3.Connection,
    kind: str,
    target: str,
    key: str,
    value: dict[str, Any],
    *,
    reason: str,
    actor: str,
    version_id: int | None,
    evidence: dict[str, Any] | None = None,
) -> None:
    """An annotation that could not follow its function (a line comment whose instruction is
    gone): nothing written, one ``carry-dropped`` event on the annotation it would have been."""
    with transaction(conn):
        ev = excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
        ev.setdefault("actor", actor)
        _record_event(
            conn,
            stable_id=annotation_id(kind, target, str(key)),
            kind="carry-dropped",
            written=False,
            reason=reason,
            provenance="diff-carry",
            confidence=None,
            actor=actor,
            old=None,
            new=excerpt({"value": value}),
            evidence=ev,
            version_id=version_id,
            subject=kind,
            target=target,
            akey=str(key),
            new_text=kn.display(kind, value),
        )


def set_knowledge_lock(
    conn: sqlite3.Connection,
    kind: str,
    target: str,
    key: str,
    locked: bool,
    *,
    actor: str = "human",
) -> Decision:
    """Lock or unlock one annotation (a human action, recorded as an event)."""
    key = str(key)
    with transaction(conn):
        cur = _k_current(conn, kind, target, key)
        if cur is None:
            return {
                "written": False,
                "reason": "no annotation to " + ("lock" if locked else "unlock"),
            }
        if cur["locked"] == locked:
            return {"written": False, "reason": "already " + ("locked" if locked else "unlocked")}
        new = dict(cur, locked=locked)
        vid = conn.execute(
            "SELECT version_id FROM knowledge WHERE kind = ? AND target = ? AND key = ?",
            (kind, target, key),
        ).fetchone()[0]
        _k_write(conn, kind, target, key, new, vid)
        _record_event(
            conn,
            stable_id=annotation_id(kind, target, key),
            kind="lock" if locked else "unlock",
            written=True,
            reason="human " + ("lock" if locked else "unlock"),
            provenance=cur["provenance"],
            confidence=cur["confidence"],
            actor=actor,
            old=_k_snapshot(cur),
            new=_k_snapshot(new),
            evidence={"actor": actor},
            version_id=vid,
            subject=kind,
            target=target,
            akey=key,
            old_text=kn.display(kind, cur["value"]),
            new_text=kn.display(kind, cur["value"]),
        )
        return {"written": True, "reason": "locked" if locked else "unlocked"}


def revert_knowledge(
    conn: sqlite3.Connection,
    kind: str,
    target: str,
    key: str = "",
    *,
    steps: int = 1,
    actor: str = "human",
) -> Decision:
    """Restore one annotation exactly as it was before its ``steps``-th latest written change
    (value, provenance, confidence, lock, evidence); past the first value it is cleared."""
    if steps < 1:
        return {"written": False, "reason": "steps must be at least 1"}
    key = str(key)
    aid = annotation_id(kind, target, key)
    with transaction(conn):
        rows = conn.execute(
            "SELECT id, old, version_id FROM annotation_events WHERE stable_id = ? AND written = 1"
            " AND kind NOT IN ('lock', 'unlock') ORDER BY id DESC",
            (aid,),
        ).fetchall()
        if len(rows) < steps:
            return {"written": False, "reason": f"no earlier value {steps} step(s) back"}
        event_id, old, vid = rows[steps - 1][0], rows[steps - 1][1], rows[steps - 1][2]
        target_rec = json.loads(old) if old else None
        if target_rec is not None and target_rec.get("value") is None:
            target_rec = None
        cur = _k_current(conn, kind, target, key)
        if _k_snapshot(cur) == _k_snapshot(target_rec):
            return {"written": False, "reason": "no change"}
        _k_write(conn, kind, target, key, target_rec, vid)
        prov = target_rec["provenance"] if target_rec else "human"
        _record_event(
            conn,
            stable_id=aid,
            kind="revert",
            written=True,
            reason=f"reverted {steps} step(s)" + ("" if target_rec else ": cleared"),
            provenance=prov,
            confidence=target_rec["confidence"] if target_rec else None,
            actor=actor,
            old=_k_snapshot(cur),
            new=_k_snapshot(target_rec) or {"value": None},
            evidence={"actor": actor, "reverted_to_event": event_id},
            version_id=vid,
            subject=kind,
            target=target,
            akey=key,
            old_text=kn.display(kind, cur["value"]) if cur else None,
            new_text=kn.display(kind, target_rec["value"]) if target_rec else None,
        )
        return {"written": True, "reason": "reverted" if target_rec else "reverted: cleared"}
