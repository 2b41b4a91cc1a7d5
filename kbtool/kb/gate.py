"""The gate: the provenance/confidence economy, the only writer of the ``symbols`` table.

Every annotation write in kbtool (ingest names, oracle matches, diff carry-over, agents,
MCP ``propose_symbol``, ``set-name``, ``unlock``, ``revert``, ``import-names``) calls
:func:`upsert_symbol` (or :func:`set_lock` / :func:`revert`, which share its internals).
Each decision, written or refused, is one row in ``annotation_events``; a proposal equal
to the current record is a no-op and leaves no trace (re-runs converge).

Authority, high to low: human locked, human, oracle, export, agent, diff-carry, unnamed.

| current            | writer                 | decision                                  |
|--------------------|------------------------|-------------------------------------------|
| none               | any                    | written                                   |
| any                | human                  | written (locked unless lock=False)        |
| human, locked      | not human              | refused: locked                           |
| human, unlocked    | agent, diff-carry      | refused: human                            |
| human, unlocked    | oracle, export         | written only if c > e                     |
| oracle/export/...  | higher authority       | written                                   |
| oracle/export/...  | same or lower authority| written only if c > e (strictly)          |
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any, TypedDict

from kbtool.kb.db import now, transaction
from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.provenance import AUTHORITY, EVENT_KIND, PROVENANCES

MAX_NAME = 256          # names typed by people and agents
MAX_BINARY_NAME = 1024  # names copied from binaries (Rust/C++ demangled names are long)
MAX_SUMMARY = 8192

# People and agents give C-like identifiers, optionally qualified with `::` (C++/Rust paths).
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(::[A-Za-z_$][A-Za-z0-9_$]*)*\Z")
# Names copied out of binaries (name sections, exports, references) may be demangled
# Rust/C++ names: anything printable without control characters.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Decision(TypedDict):
    written: bool
    reason: str


def validate_name(name: Any, provenance: str) -> str | None:
    """Why ``name`` is not acceptable from ``provenance``, or None when it is."""
    if not isinstance(name, str) or not name:
        return "invalid name: empty"
    if provenance in ("human", "agent"):
        if len(name) > MAX_NAME:
            return f"invalid name: longer than {MAX_NAME} characters"
        if not _IDENT.match(name):
            return "invalid name: not a C-like identifier"
        return None
    if len(name) > MAX_BINARY_NAME:
        return f"invalid name: longer than {MAX_BINARY_NAME} characters"
    if _CONTROL.search(name) or name != name.strip():
        return "invalid name: control characters or surrounding whitespace"
    return None


def _current(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT name, summary, type_signature, provenance, confidence, locked, evidence "
        "FROM symbols WHERE stable_id = ?",
        (stable_id,),
    ).fetchone()
    if row is None:
        return None
    rec = dict(row)
    rec["locked"] = bool(rec["locked"])
    rec["evidence"] = json.loads(rec["evidence"] or "[]")
    return rec


def _latest_version(conn: sqlite3.Connection, stable_id: str) -> int | None:
    row = conn.execute(
        "SELECT MAX(version_id) FROM functions WHERE stable_id = ?", (stable_id,)
    ).fetchone()
    return row[0] if row else None


def _decide(cur: dict[str, Any] | None, provenance: str, confidence: float) -> tuple[bool, str]:
    if cur is None:
        return True, "unnamed"
    if provenance == "human":
        return True, "human edit"
    if cur["locked"]:
        return False, "locked"
    cur_prov, e = cur["provenance"], float(cur["confidence"])
    if cur_prov == "human":
        if provenance in ("agent", "diff-carry"):
            return False, "human name outranks " + provenance
        if confidence > e:
            return True, f"confidence {confidence:g} > {e:g} over unlocked human name"
        return False, f"confidence {confidence:g} not above human {e:g}"
    if AUTHORITY[provenance] > AUTHORITY[cur_prov]:
        return True, f"{provenance} outranks {cur_prov}"
    if confidence > e:
        return True, f"confidence {confidence:g} > {e:g}"
    return False, f"confidence {confidence:g} not above {cur_prov} {e:g}"


def _record_event(
    conn: sqlite3.Connection,
    *,
    stable_id: str,
    kind: str,
    written: bool,
    reason: str,
    provenance: str,
    confidence: float | None,
    actor: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    evidence: Any,
    version_id: int | None,
) -> None:
    conn.execute(
        "INSERT INTO annotation_events (stable_id, kind, written, reason, provenance, confidence,"
        " actor, old_name, new_name, old, new, evidence, version_id, created_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            stable_id, kind, int(written), reason, provenance, confidence, actor,
            old.get("name") if old else None,
            new.get("name") if new else None,
            json.dumps(old, sort_keys=True) if old else None,
            json.dumps(new, sort_keys=True) if new else None,
            json.dumps(evidence, sort_keys=True) if evidence is not None else None,
            version_id, now(),
        ),
    )


def _write(conn: sqlite3.Connection, stable_id: str, rec: dict[str, Any], version_id: int | None) -> None:
    conn.execute(
        "INSERT INTO symbols (stable_id, name, summary, type_signature, provenance, confidence,"
        " locked, evidence, version_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(stable_id) DO UPDATE SET name=excluded.name, summary=excluded.summary,"
        " type_signature=excluded.type_signature, provenance=excluded.provenance,"
        " confidence=excluded.confidence, locked=excluded.locked, evidence=excluded.evidence,"
        " version_id=excluded.version_id, updated_at=excluded.updated_at",
        (
            stable_id, rec["name"], rec["summary"], rec["type_signature"], rec["provenance"],
            rec["confidence"], int(rec["locked"]), json.dumps(rec["evidence"], sort_keys=True),
            version_id, now(),
        ),
    )


def _require_known(conn: sqlite3.Connection, stable_id: str) -> int:
    version_id = _latest_version(conn, stable_id)
    if version_id is None:
        raise UnknownStableIdError(
            f"unknown stable_id {stable_id!r} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )
    return version_id


def upsert_symbol(
    conn: sqlite3.Connection,
    stable_id: str,
    name: str,
    *,
    provenance: str,
    confidence: float,
    actor: str,
    summary: str | None = None,
    type_signature: str | None = None,
    evidence: dict[str, Any] | None = None,
    lock: bool | None = None,
    version_id: int | None = None,
    kind: str | None = None,
) -> Decision:
    """Propose ``name`` for ``stable_id``; the one decision point for every annotation write.

    ``lock`` only matters for human writes (default: locked). ``summary``/``type_signature``
    of None keep the current values when the write wins. Raises
    :class:`UnknownStableIdError` for an id the KB has never seen; every other refusal is a
    ``{"written": False, "reason": ...}`` decision with its event.
    """
    if provenance not in PROVENANCES:
        raise ValueError(f"unknown provenance {provenance!r}; one of {', '.join(PROVENANCES)}")
    with transaction(conn):
        ctx_version = _require_known(conn, stable_id)
        if version_id is None:
            version_id = ctx_version
        cur = _current(conn, stable_id)
        ev = dict(evidence or {})
        ev.setdefault("actor", actor)
        ev_kind = kind or EVENT_KIND[provenance]
        proposal = {
            "name": name, "summary": summary, "type_signature": type_signature,
            "provenance": provenance, "confidence": confidence,
        }

        problem = validate_name(name, provenance)
        if problem is None and (
            isinstance(confidence, bool)
            or not isinstance(confidence, (int, float))
            or not 0.0 <= float(confidence) <= 1.0
        ):
            problem = f"invalid confidence {confidence!r}: must be within 0.0..1.0"
        if problem is None and summary is not None and (
            not isinstance(summary, str) or len(summary) > MAX_SUMMARY
        ):
            problem = f"invalid summary: longer than {MAX_SUMMARY} characters"
        if problem is not None:
            _record_event(conn, stable_id=stable_id, kind="rejection", written=False, reason=problem,
                          provenance=provenance, confidence=None, actor=actor,
                          old=_public(cur) if cur else None, new=_jsonable(proposal), evidence=ev, version_id=version_id)
            return {"written": False, "reason": problem}
        confidence = float(confidence)

        want_lock = bool(lock if lock is not None else True) if provenance == "human" else None
        if cur is not None and _same(cur, name, summary, type_signature, provenance, confidence, want_lock):
            return {"written": False, "reason": "no change"}

        ok, reason = _decide(cur, provenance, confidence)
        if not ok:
            _record_event(conn, stable_id=stable_id, kind="rejection", written=False, reason=reason,
                          provenance=provenance, confidence=confidence, actor=actor,
                          old=_public(cur) if cur else None, new=proposal, evidence=ev, version_id=version_id)
            return {"written": False, "reason": reason}

        new = {
            "name": name,
            "summary": summary if summary is not None else (cur or {}).get("summary"),
            "type_signature": type_signature if type_signature is not None else (cur or {}).get("type_signature"),
            "provenance": provenance,
            "confidence": confidence,
            "locked": bool(want_lock) if provenance == "human" else False,
            "evidence": _merge_evidence(cur, provenance, ev),
        }
        _write(conn, stable_id, new, version_id)
        _record_event(conn, stable_id=stable_id, kind=ev_kind, written=True, reason=reason,
                      provenance=provenance, confidence=confidence, actor=actor,
                      old=_public(cur) if cur else None, new=_public(new), evidence=ev, version_id=version_id)
        return {"written": True, "reason": reason}


def _same(cur: dict[str, Any], name: str, summary: str | None, type_signature: str | None,
          provenance: str, confidence: float, want_lock: bool | None) -> bool:
    """A proposal that would change nothing (an idempotent re-run)."""
    if cur["name"] != name or cur["provenance"] != provenance:
        return False
    if summary is not None and summary != cur["summary"]:
        return False
    if type_signature is not None and type_signature != cur["type_signature"]:
        return False
    if want_lock is not None and want_lock != cur["locked"]:
        return False
    return confidence == float(cur["confidence"]) or (
        provenance != "human" and confidence < float(cur["confidence"])
    )


def _merge_evidence(cur: dict[str, Any] | None, provenance: str, ev: dict[str, Any]) -> list[dict[str, Any]]:
    """Evidence of the record: the new item first, older items of the same provenance kept (max 8)."""
    items = [ev]
    if cur is not None and cur["provenance"] == provenance:
        items += [e for e in cur["evidence"] if e != ev]
    return items[:8]


def _public(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: rec[k] for k in ("name", "summary", "type_signature", "provenance", "confidence", "locked")}


def _jsonable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in rec.items():
        out[k] = v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
    return out


def set_lock(conn: sqlite3.Connection, stable_id: str, locked: bool, *, actor: str = "human") -> Decision:
    """Lock or unlock a record (a human action, recorded as an event)."""
    with transaction(conn):
        version_id = _require_known(conn, stable_id)
        cur = _current(conn, stable_id)
        if cur is None:
            return {"written": False, "reason": "no annotation to " + ("lock" if locked else "unlock")}
        if cur["locked"] == locked:
            return {"written": False, "reason": "already " + ("locked" if locked else "unlocked")}
        new = dict(cur, locked=locked)
        _write(conn, stable_id, new, version_id)
        _record_event(conn, stable_id=stable_id, kind="lock" if locked else "unlock", written=True,
                      reason="human " + ("lock" if locked else "unlock"), provenance=cur["provenance"],
                      confidence=cur["confidence"], actor=actor, old=_public(cur), new=_public(new),
                      evidence={"actor": actor}, version_id=version_id)
        return {"written": True, "reason": "locked" if locked else "unlocked"}


def revert(conn: sqlite3.Connection, stable_id: str, *, steps: int = 1, actor: str = "human") -> Decision:
    """Restore the value the record had ``steps`` written changes ago, as a recorded human edit."""
    if steps < 1:
        return {"written": False, "reason": "steps must be at least 1"}
    with transaction(conn):
        version_id = _require_known(conn, stable_id)
        rows = conn.execute(
            "SELECT id, old FROM annotation_events WHERE stable_id = ? AND written = 1"
            " AND kind NOT IN ('lock', 'unlock') ORDER BY id DESC",
            (stable_id,),
        ).fetchall()
        if len(rows) < steps:
            return {"written": False, "reason": f"no earlier value {steps} step(s) back"}
        old = rows[steps - 1]["old"]
        # back past the first name: the function was unnamed, so the name is cleared
        target = json.loads(old) if old is not None else {"name": None}
        cur = _current(conn, stable_id)
        new = {
            "name": target["name"], "summary": target.get("summary"),
            "type_signature": target.get("type_signature"), "provenance": "human",
            # a cleared name: confidence 0, unlocked, so oracle/export names may fill it later
            "confidence": 1.0 if target["name"] is not None else 0.0,
            "locked": target["name"] is not None,
            "evidence": [{"actor": actor, "reverted_to_event": rows[steps - 1]["id"],
                          "restored_provenance": target.get("provenance")}],
        }
        if cur is not None and _public(cur) == _public(new):
            return {"written": False, "reason": "no change"}
        _write(conn, stable_id, new, version_id)
        _record_event(conn, stable_id=stable_id, kind="revert", written=True,
                      reason=f"reverted {steps} step(s)", provenance="human", confidence=new["confidence"],
                      actor=actor, old=_public(cur) if cur else None, new=_public(new),
                      evidence=new["evidence"][0], version_id=version_id)
        if target["name"] is None:
            return {"written": True, "reason": "reverted: name cleared (unnamed)"}
        return {"written": True, "reason": f"reverted to {target['name']!r}"}
