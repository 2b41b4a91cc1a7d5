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

Text rules (every writer; a violation is a refusal with its event): human/agent names are
C-like identifiers (``::`` allowed) of at most 256 characters; names from binaries at most
1024 printable characters. No name, summary or type signature may hold a C0/DEL/C1 control,
U+2028/U+2029 or a bidi control (U+061C, U+200E/F, U+202A-E, U+2066-9): they retitle or
clear terminals and reorder what a reader sees. Summaries are prose and may span lines:
``\n`` and ``\t`` are their only allowed controls (``\r`` is refused; exports and views
escape newlines and tabs for their formats). A refused proposal's event keeps an excerpt
of each value (:data:`EXCERPT` characters), never the whole input; evidence is bounded in
events and records alike (:func:`excerpt`).

Parts: :mod:`kbtool.kb.gate_rules` (text checks, excerpts, the decision),
:mod:`kbtool.kb.gate_events` (one event per decision, refusals bounded),
:mod:`kbtool.kb.gate_knowledge` (every kind beyond names); this module writes names and
re-exports the others' public names, so ``from kbtool.kb.gate import ...`` is the one import.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from kbtool.kb.db import now, transaction
from kbtool.kb.gate_events import (  # noqa: F401  (re-exported: the names stay importable here)
    _record_event,
    _require_known,
)
from kbtool.kb.gate_rules import (  # noqa: F401  (re-exported: the names stay importable here)
    EXCERPT,
    MAX_BINARY_NAME,
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_TEXT,
    MAX_NAME,
    MAX_REFUSALS_PER_MINUTE,
    MAX_STABLE_ID,
    MAX_SUMMARY,
    MAX_TYPE_SIGNATURE,
    Decision,
    _decide,
    _merge_evidence,
    clip,
    excerpt,
    short_repr,
    validate_confidence,
    validate_name,
    validate_summary,
    validate_type_signature,
)
from kbtool.kb.provenance import EVENT_KIND, PROVENANCES

#: ``json.dumps(value, sort_keys=True)`` without building its encoder at every call (that is
#: what ``dumps`` does with any argument but the value: ~3 us of a ~8 us call; three a name a
#: named module's first ingest writes): the same encoder's ``encode``, the same text
_sorted_json = json.JSONEncoder(sort_keys=True).encode

#: the knowledge half's public names (:mod:`kbtool.kb.gate_knowledge`), importable from here
#: and imported when first asked for: a plain ingest writes names only, and the knowledge
#: half with its rules (``kb.knowledge``, ``kb.types``) is ~2 ms of a small module's start
_KNOWLEDGE_NAMES = frozenset(
    {
        "annotation_id",
        "record_knowledge_drop",
        "revert_knowledge",
        "set_knowledge_lock",
        "upsert_knowledge",
    }
)


def __getattr__(name: str) -> Any:  # PEP 562: ``from kbtool.kb.gate import upsert_knowledge``
    if name in _KNOWLEDGE_NAMES:
        from kbtool.kb import gate_knowledge

        return getattr(gate_knowledge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


_WRITE_SQL = (
    "INSERT INTO symbols (stable_id, name, summary, type_signature, provenance, confidence,"
    " locked, evidence, version_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT(stable_id) DO UPDATE SET name=excluded.name, summary=excluded.summary,"
    " type_signature=excluded.type_signature, provenance=excluded.provenance,"
    " confidence=excluded.confidence, locked=excluded.locked, evidence=excluded.evidence,"
    " version_id=excluded.version_id, updated_at=excluded.updated_at"
)


def _write(
    conn: sqlite3.Connection, stable_id: str, rec: dict[str, Any], version_id: int | None
) -> None:
    conn.execute(
        _WRITE_SQL,
        (
            stable_id,
            rec["name"],
            rec["summary"],
            rec["type_signature"],
            rec["provenance"],
            rec["confidence"],
            int(rec["locked"]),
            _sorted_json(rec["evidence"]),
            version_id,
            now(),
        ),
    )


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
    yield_to_human: bool = False,
) -> Decision:
    """Propose ``name`` for ``stable_id``; the one decision point for every annotation write.

    ``lock`` only matters for human writes (default: locked). ``summary``/``type_signature``
    of None keep the current values when the write wins. ``yield_to_human``: a human name
    from elsewhere (a teammate's export) that never replaces a human name of this KB. Raises
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
        ev = excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
        ev.setdefault("actor", actor)
        ev_kind = kind or EVENT_KIND[provenance]
        proposal = {
            "name": name,
            "summary": summary,
            "type_signature": type_signature,
            "provenance": provenance,
            "confidence": confidence,
        }

        problem = (
            validate_name(name, provenance)
            or validate_confidence(confidence)
            or validate_summary(summary)
            or validate_type_signature(type_signature)
        )
        if problem is not None:
            # a refused proposal keeps an excerpt of what was proposed, never the whole input
            _record_event(
                conn,
                stable_id=stable_id,
                kind="rejection",
                written=False,
                reason=problem,
                provenance=provenance,
                confidence=None,
                actor=actor,
                old=_public(cur) if cur else None,
                new=excerpt(proposal),
                evidence=ev,
                version_id=version_id,
            )
            return {"written": False, "reason": problem}
        confidence = float(confidence)

        want_lock = bool(lock if lock is not None else True) if provenance == "human" else None
        if cur is not None and _same(
            cur, name, summary, type_signature, provenance, confidence, want_lock
        ):
            return {"written": False, "reason": "no change"}

        ok, reason = _decide(cur, provenance, confidence)
        if ok and yield_to_human and cur is not None and cur["provenance"] == "human":
            ok, reason = (
                False,
                "this KB's human name stays (an imported human name does not replace it)",
            )
        if not ok:
            _record_event(
                conn,
                stable_id=stable_id,
                kind="rejection",
                written=False,
                reason=reason,
                provenance=provenance,
                confidence=confidence,
                actor=actor,
                old=_public(cur) if cur else None,
                new=excerpt(proposal),
                evidence=ev,
                version_id=version_id,
            )
            return {"written": False, "reason": reason}

        new = {
            "name": name,
            "summary": summary if summary is not None else (cur or {}).get("summary"),
            "type_signature": type_signature
            if type_signature is not None
            else (cur or {}).get("type_signature"),
            "provenance": provenance,
            "confidence": confidence,
            "locked": bool(want_lock) if provenance == "human" else False,
            "evidence": _merge_evidence(cur, provenance, ev),
        }
        _write(conn, stable_id, new, version_id)
        _record_event(
            conn,
            stable_id=stable_id,
            kind=ev_kind,
            written=True,
            reason=reason,
            provenance=provenance,
            confidence=confidence,
            actor=actor,
            old=_snapshot(cur),
            new=_snapshot(new),
            evidence=ev,
            version_id=version_id,
        )
        return {"written": True, "reason": reason}


def _text_only(evidence: Any) -> bool:
    """Whether ``evidence`` is None or a plain dict of str keys and str values, whose
    :func:`excerpt` cannot raise (made only for its errors on the "no change" path: ~3 us a
    proposal, most of a later named module's ~540 carried names)."""
    if evidence is None:
        return True
    if type(evidence) is not dict:
        return False
    for k, v in evidence.items():
        if type(k) is not str or type(v) is not str:
            return False
    return True


#: one proposal of :func:`upsert_symbols`: ``(stable_id, name, confidence, evidence)``
Proposal = tuple[str, str, float, dict[str, Any]]


def upsert_symbols(
    conn: sqlite3.Connection,
    proposals: list[Proposal],
    *,
    provenance: str,
    actor: str,
    version_id: int,
) -> list[Decision]:
    """:func:`upsert_symbol` for each proposal in turn (one decision each, in order), with
    the same records and events; the proposals that find no record yet and pass the text
    checks (``unnamed``: always written, e.g. a new version's names from its binary) are
    written together, in one ``executemany`` each for records and events (~6x cheaper than
    one call each: an ingest of a named module proposes one name per function). Every other
    proposal (a human name, which is locked; a current record, a refusal, an id proposed
    twice) goes through :func:`upsert_symbol` itself, in its place, but for one that would
    change nothing (a current record with the same name and provenance, a confidence not
    above it): that decision (``no change``: no write, no event) is made here from one read
    of the current records. Raises :class:`UnknownStableIdError` (nothing written) for an id
    the KB has never seen."""
    if provenance not in PROVENANCES:
        raise ValueError(f"unknown provenance {provenance!r}; one of {', '.join(PROVENANCES)}")
    if not proposals:
        return []
    with transaction(conn):
        ids = json.dumps([p[0] for p in proposals])
        known = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT f.stable_id FROM json_each(?) j"
                " JOIN functions f ON f.stable_id = j.value",
                (ids,),
            )
        }
        for p in proposals:
            if p[0] not in known:
                _require_known(conn, p[0])  # (raises: the unknown id's own message)
        # the current records, as far as upsert_symbol's "no change" test reads them (no
        # proposal here has a summary or type): an id proposed again meets what it wrote
        named = {
            r[0]: {"name": r[1], "provenance": r[2], "confidence": r[3], "locked": bool(r[4])}
            for r in conn.execute(
                "SELECT s.stable_id, s.name, s.provenance, s.confidence, s.locked"
                " FROM json_each(?) j JOIN symbols s ON s.stable_id = j.value",
                (ids,),
            )
        }
        want_lock = True if provenance == "human" else None  # (upsert_symbol's, no lock given)
        kind = EVENT_KIND[provenance]
        decisions: list[Decision] = []
        records: list[tuple] = []
        events: list[tuple] = []
        seen: set[str] = set()

        def flush() -> None:
            if not records:
                return
            stamp = now()
            conn.executemany(_WRITE_SQL, [(*r, stamp) for r in records])
            conn.executemany(
                _FRESH_EVENT_SQL,
                [(*e, stamp, stamp) for e in events],
            )
            records.clear()
            events.clear()

        for sid, name, confidence, evidence in proposals:
            valid = (
                sid not in seen
                and validate_name(name, provenance) is None
                and validate_confidence(confidence) is None
            )
            cur = named.get(sid)
            seen.add(sid)
            if valid and cur is not None:
                # upsert_symbol's path to "no change" (a later version's carried names): its
                # evidence excerpt (for the same errors: none from text keys and values, the
                # evidence of a module's names), no write, no event, no query
                if not _text_only(evidence):
                    excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
                if _same(cur, name, None, None, provenance, float(confidence), want_lock):
                    decisions.append({"written": False, "reason": "no change"})
                    continue
            # (a human name takes upsert_symbol's path: its record is locked)
            fresh = valid and cur is None and provenance != "human"
            if not fresh:  # the general path, in its place among the others
                flush()
                decisions.append(
                    upsert_symbol(
                        conn,
                        sid,
                        name,
                        provenance=provenance,
                        confidence=confidence,
                        actor=actor,
                        evidence=evidence,
                        version_id=version_id,
                    )
                )
                continue
            # upsert_symbol's written path with no current record (reason "unnamed")
            confidence = float(confidence)
            ev = excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
            ev.setdefault("actor", actor)
            new = {
                "name": name,
                "summary": None,
                "type_signature": None,
                "provenance": provenance,
                "confidence": confidence,
                "locked": False,
                "evidence": [ev],
            }
            records.append(
                (
                    sid,
                    name,
                    None,
                    None,
                    provenance,
                    confidence,
                    0,
                    _sorted_json(new["evidence"]),
                    version_id,
                )
            )
            events.append(
                (
                    sid,
                    kind,
                    "unnamed",
                    provenance,
                    confidence,
                    actor,
                    name,
                    _sorted_json(_snapshot(new)),
                    _sorted_json(ev),
                    version_id,
                )
            )
            decisions.append({"written": True, "reason": "unnamed"})
        flush()
    return decisions


#: a written event of :func:`upsert_symbols`' batch: what :func:`_record_event` inserts for a
#: written decision with no earlier record (no fingerprint, no subject)
_FRESH_EVENT_SQL = (
    "INSERT INTO annotation_events (stable_id, kind, written, reason, provenance, confidence,"
    " actor, old_name, new_name, old, new, evidence, version_id, created_at, repeats,"
    " last_at, fingerprint, subject, target, akey)"
    " VALUES (?,?,1,?,?,?,?,NULL,?,NULL,?,?,?,?,1,?,NULL,NULL,NULL,NULL)"
)


def human_rename(
    conn: sqlite3.Connection,
    stable_id: str,
    name: str,
    *,
    actor: str,
    summary: str | None = None,
    type_signature: str | None = None,
    confidence: float = 1.0,
    lock: bool = True,
    confirm: bool = False,
    evidence: dict[str, Any] | None = None,
    version_id: int | None = None,
) -> Decision:
    """A person renaming a function (``set-name``, a rename dialog). The unchanged name, with
    no new summary or type, writes nothing and records nothing (reason ``unchanged``): an
    oracle name at 0.60 stays one. ``confirm`` makes the unchanged name the person's own
    human name (locked unless ``lock=False``)."""
    with transaction(conn):
        _require_known(conn, stable_id)
        cur = _current(conn, stable_id)
        if (
            not confirm
            and cur is not None
            and cur["name"] == name
            and summary in (None, cur["summary"])
            and type_signature in (None, cur["type_signature"])
        ):
            return {"written": False, "reason": "unchanged"}
        return upsert_symbol(
            conn,
            stable_id,
            name,
            provenance="human",
            confidence=confidence,
            actor=actor,
            summary=summary,
            type_signature=type_signature,
            lock=lock,
            evidence=evidence,
            version_id=version_id,
        )


def _same(
    cur: dict[str, Any],
    name: str,
    summary: str | None,
    type_signature: str | None,
    provenance: str,
    confidence: float,
    want_lock: bool | None,
) -> bool:
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


def _public(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        k: rec[k]
        for k in ("name", "summary", "type_signature", "provenance", "confidence", "locked")
    }


def _snapshot(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The whole record as a written event keeps it (``old``/``new``): what revert restores."""
    if rec is None:
        return None
    return {**_public(rec), "evidence": rec.get("evidence", [])}


def set_lock(
    conn: sqlite3.Connection, stable_id: str, locked: bool, *, actor: str = "human"
) -> Decision:
    """Lock or unlock a record (a human action, recorded as an event)."""
    with transaction(conn):
        version_id = _require_known(conn, stable_id)
        cur = _current(conn, stable_id)
        if cur is None:
            return {
                "written": False,
                "reason": "no annotation to " + ("lock" if locked else "unlock"),
            }
        if cur["locked"] == locked:
            return {"written": False, "reason": "already " + ("locked" if locked else "unlocked")}
        new = dict(cur, locked=locked)
        _write(conn, stable_id, new, version_id)
        _record_event(
            conn,
            stable_id=stable_id,
            kind="lock" if locked else "unlock",
            written=True,
            reason="human " + ("lock" if locked else "unlock"),
            provenance=cur["provenance"],
            confidence=cur["confidence"],
            actor=actor,
            old=_snapshot(cur),
            new=_snapshot(new),
            evidence={"actor": actor},
            version_id=version_id,
        )
        return {"written": True, "reason": "locked" if locked else "unlocked"}


def revert(
    conn: sqlite3.Connection, stable_id: str, *, steps: int = 1, actor: str = "human"
) -> Decision:
    """Restore the record as it was before the ``steps``-th latest written change, exactly:
    name, summary, type signature, provenance, confidence, lock and evidence (an oracle name
    at 0.60 comes back as that, not as a human name). Going back past the first name clears
    it (the function is unnamed again, open to every writer). Recorded as a ``revert`` event
    by ``actor``; reverting a revert redoes the change."""
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
        event_id, old = rows[steps - 1]["id"], rows[steps - 1]["old"]
        target = json.loads(old) if old is not None else None
        if target is not None and target.get("name") is None:
            target = None  # a name cleared by an older kbtool's revert: unnamed
        cur = _current(conn, stable_id)
        if target is None:
            if cur is None:
                return {"written": False, "reason": "no change"}
            conn.execute("DELETE FROM symbols WHERE stable_id = ?", (stable_id,))
            _record_event(
                conn,
                stable_id=stable_id,
                kind="revert",
                written=True,
                reason=f"reverted {steps} step(s): name cleared (unnamed)",
                provenance="human",
                confidence=None,
                actor=actor,
                old=_snapshot(cur),
                new={"name": None},
                evidence={"actor": actor, "reverted_to_event": event_id},
                version_id=version_id,
            )
            return {"written": True, "reason": "reverted: name cleared (unnamed)"}
        new = {
            "name": target["name"],
            "summary": target.get("summary"),
            "type_signature": target.get("type_signature"),
            "provenance": target["provenance"],
            "confidence": float(target["confidence"]),
            "locked": bool(target.get("locked")),
            # events written before kbtool kept evidence in them: say where the value came from
            "evidence": target["evidence"]
            if "evidence" in target
            else [{"actor": actor, "reverted_to_event": event_id}],
        }
        if cur is not None and _snapshot(cur) == _snapshot(new):
            return {"written": False, "reason": "no change"}
        _write(conn, stable_id, new, version_id)
        _record_event(
            conn,
            stable_id=stable_id,
            kind="revert",
            written=True,
            reason=f"reverted {steps} step(s): {new['provenance']} {new['confidence']:.2f}"
            + (", locked" if new["locked"] else ""),
            provenance=new["provenance"],
            confidence=new["confidence"],
            actor=actor,
            old=_snapshot(cur),
            new=_snapshot(new),
            evidence={"actor": actor, "reverted_to_event": event_id},
            version_id=version_id,
        )
        return {"written": True, "reason": f"reverted to {target['name']!r}"}
