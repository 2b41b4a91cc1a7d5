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
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from kbtool.kb import knowledge as kn
from kbtool.kb.db import now, transaction
from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.provenance import AUTHORITY, EVENT_KIND, PROVENANCES
from kbtool.textutil import BIDI, INVISIBLE

MAX_NAME = 256          # names typed by people and agents
MAX_BINARY_NAME = 1024  # names copied from binaries (Rust/C++ demangled names are long)
MAX_SUMMARY = 8192
MAX_TYPE_SIGNATURE = 1024
MAX_STABLE_ID = 64      # stable_ids are 16 hex digits; anything longer is not one
EXCERPT = 200           # characters of each refused value kept in its event
MAX_EVIDENCE_TEXT = 1024  # characters of each evidence string (evidence is kept in records)
MAX_EVIDENCE_ITEMS = 32   # keys of an evidence object / items of an evidence list
MAX_REFUSALS_PER_MINUTE = 120  # refusal rows one caller (actor) may add per minute; beyond,
                               # a function's further refusals are counted on one row

# People and agents give C-like identifiers, optionally qualified with `::` (C++/Rust paths).
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(::[A-Za-z_$][A-Za-z0-9_$]*)*\Z")
# Names copied out of binaries (name sections, exports, references) may be demangled
# Rust/C++ names: anything printable without control characters. "Control" here means
# C0/DEL/C1 controls, the line/paragraph separators U+2028/U+2029 and the bidi controls
# (U+061C, U+200E/U+200F, U+202A..U+202E, U+2066..U+2069): characters that move a
# terminal's cursor, set its title, or reorder what a reader sees ("Trojan Source").
# The invisibles (zero-width, soft hyphen, tag characters U+E0000..U+E007F) hide text from a
# reader: refused too. One vocabulary for every surface: kbtool.textutil.
_BIDI = BIDI
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}]")
# Summaries are prose: newlines and tabs are allowed (multi-line descriptions), every other
# control character above is refused. Type signatures are one line: no control at all.
_SUMMARY_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}]")


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


def validate_summary(summary: Any) -> str | None:
    """Why ``summary`` is not acceptable, or None (any writer; ``None`` means "keep")."""
    if summary is None:
        return None
    if not isinstance(summary, str):
        return "invalid summary: not text"
    if len(summary) > MAX_SUMMARY:
        return f"invalid summary: longer than {MAX_SUMMARY} characters"
    if _SUMMARY_CONTROL.search(summary):
        return "invalid summary: control or bidi characters (only newlines and tabs are allowed)"
    return None


def validate_type_signature(type_signature: Any) -> str | None:
    """Why ``type_signature`` is not acceptable, or None (``None`` means "keep")."""
    if type_signature is None:
        return None
    if not isinstance(type_signature, str):
        return "invalid type signature: not text"
    if len(type_signature) > MAX_TYPE_SIGNATURE:
        return f"invalid type signature: longer than {MAX_TYPE_SIGNATURE} characters"
    if _CONTROL.search(type_signature):
        return "invalid type signature: control or bidi characters"
    return None


def validate_confidence(confidence: Any) -> str | None:
    """Why ``confidence`` is not a number within 0.0..1.0 (booleans are not numbers here)."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 <= confidence <= 1  # exact for ints of any size; False for NaN
    ):
        return f"invalid confidence {short_repr(confidence)}: must be within 0.0..1.0"
    return None


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters; never builds a huge string (big ints,
    long texts) just to throw it away."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, str):
        return repr(clip(value, limit))
    if isinstance(value, (bool, int, float, type(None))):
        return repr(value)
    return f"<{type(value).__name__}>"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text)} characters)"


def excerpt(value: Any, limit: int = EXCERPT, _depth: int = 0) -> Any:
    """A JSON-safe, bounded copy of ``value``: strings clipped to ``limit`` characters,
    objects and lists to :data:`MAX_EVIDENCE_ITEMS` entries, 4 levels deep; other values
    (and integers beyond 64 bits, non-finite floats) become a short description."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else short_repr(value)
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if _depth >= 4:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_EVIDENCE_ITEMS]
        return {clip(str(k), 64): excerpt(v, limit, _depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [excerpt(v, limit, _depth + 1) for v in value[:MAX_EVIDENCE_ITEMS]]
    return f"<{type(value).__name__}>"


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
    subject: str | None = None,
    target: str | None = None,
    akey: str | None = None,
    old_text: str | None = None,
    new_text: str | None = None,
) -> None:
    stamp = now()
    fingerprint = None
    if not written:
        fingerprint = _fingerprint(stable_id, kind, reason, provenance, confidence, actor, old, new)
        if _repeat(conn, stable_id, fingerprint, stamp):
            return
        if _refusals_last_minute(conn, actor, stamp) >= MAX_REFUSALS_PER_MINUTE:
            # over the caller's budget: counted on one row per function and caller
            fingerprint = _fingerprint(stable_id, "throttled", actor)
            if _repeat(conn, stable_id, fingerprint, stamp, since_write=False):
                return
            reason = (f"refused proposals from {actor} over {MAX_REFUSALS_PER_MINUTE} a minute,"
                      f" counted here (first: {reason})")
    conn.execute(
        "INSERT INTO annotation_events (stable_id, kind, written, reason, provenance, confidence,"
        " actor, old_name, new_name, old, new, evidence, version_id, created_at, repeats,"
        " last_at, fingerprint, subject, target, akey) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            stable_id, kind, int(written), reason, provenance, confidence, actor,
            old_text if subject else (old.get("name") if old else None),
            new_text if subject else (new.get("name") if new else None),
            json.dumps(old, sort_keys=True) if old else None,
            json.dumps(new, sort_keys=True) if new else None,
            json.dumps(evidence, sort_keys=True) if evidence is not None else None,
            version_id, stamp, 1, stamp, fingerprint, subject, target, akey,
        ),
    )


def _fingerprint(*parts: Any) -> str:
    """What makes two refusals the same refusal (a digest of their JSON)."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()


def _repeat(conn: sqlite3.Connection, stable_id: str, fingerprint: str, stamp: str,
            *, since_write: bool = True) -> bool:
    """Count a repeated refusal on its earlier row (``repeats`` + 1, ``last_at``) when one
    exists and, with ``since_write``, nothing was written to the function since; True then."""
    row = conn.execute(
        "SELECT id FROM annotation_events WHERE fingerprint = ? ORDER BY id DESC LIMIT 1",
        (fingerprint,),
    ).fetchone()
    if row is None:
        return False
    if since_write and conn.execute(
        "SELECT 1 FROM annotation_events WHERE stable_id = ? AND written = 1 AND id > ? LIMIT 1",
        (stable_id, row[0]),
    ).fetchone():
        return False
    conn.execute(
        "UPDATE annotation_events SET repeats = repeats + 1, last_at = ? WHERE id = ?",
        (stamp, row[0]),
    )
    return True


def _refusals_last_minute(conn: sqlite3.Connection, actor: str, stamp: str) -> int:
    """Refusal rows ``actor`` added in the minute before ``stamp``."""
    try:
        t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return 0
    since = (t - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return int(conn.execute(
        "SELECT COUNT(*) FROM annotation_events WHERE actor = ? AND written = 0 AND created_at >= ?",
        (actor, since),
    ).fetchone()[0])


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
            f"unknown stable_id {short_repr(stable_id)} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
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
            "name": name, "summary": summary, "type_signature": type_signature,
            "provenance": provenance, "confidence": confidence,
        }

        problem = (
            validate_name(name, provenance)
            or validate_confidence(confidence)
            or validate_summary(summary)
            or validate_type_signature(type_signature)
        )
        if problem is not None:
            # a refused proposal keeps an excerpt of what was proposed, never the whole input
            _record_event(conn, stable_id=stable_id, kind="rejection", written=False, reason=problem,
                          provenance=provenance, confidence=None, actor=actor,
                          old=_public(cur) if cur else None, new=excerpt(proposal), evidence=ev, version_id=version_id)
            return {"written": False, "reason": problem}
        confidence = float(confidence)

        want_lock = bool(lock if lock is not None else True) if provenance == "human" else None
        if cur is not None and _same(cur, name, summary, type_signature, provenance, confidence, want_lock):
            return {"written": False, "reason": "no change"}

        ok, reason = _decide(cur, provenance, confidence)
        if ok and yield_to_human and cur is not None and cur["provenance"] == "human":
            ok, reason = False, "this KB's human name stays (an imported human name does not replace it)"
        if not ok:
            _record_event(conn, stable_id=stable_id, kind="rejection", written=False, reason=reason,
                          provenance=provenance, confidence=confidence, actor=actor,
                          old=_public(cur) if cur else None, new=excerpt(proposal), evidence=ev, version_id=version_id)
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
                      old=_snapshot(cur), new=_snapshot(new), evidence=ev, version_id=version_id)
        return {"written": True, "reason": reason}


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
        if (not confirm and cur is not None and cur["name"] == name
                and summary in (None, cur["summary"])
                and type_signature in (None, cur["type_signature"])):
            return {"written": False, "reason": "unchanged"}
        return upsert_symbol(conn, stable_id, name, provenance="human", confidence=confidence, actor=actor,
                             summary=summary, type_signature=type_signature, lock=lock,
                             evidence=evidence, version_id=version_id)


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


def _snapshot(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The whole record as a written event keeps it (``old``/``new``): what revert restores."""
    if rec is None:
        return None
    return {**_public(rec), "evidence": rec.get("evidence", [])}


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
                      confidence=cur["confidence"], actor=actor, old=_snapshot(cur), new=_snapshot(new),
                      evidence={"actor": actor}, version_id=version_id)
        return {"written": True, "reason": "locked" if locked else "unlocked"}


def revert(conn: sqlite3.Connection, stable_id: str, *, steps: int = 1, actor: str = "human") -> Decision:
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
            _record_event(conn, stable_id=stable_id, kind="revert", written=True,
                          reason=f"reverted {steps} step(s): name cleared (unnamed)",
                          provenance="human", confidence=None, actor=actor, old=_snapshot(cur),
                          new={"name": None}, evidence={"actor": actor, "reverted_to_event": event_id},
                          version_id=version_id)
            return {"written": True, "reason": "reverted: name cleared (unnamed)"}
        new = {
            "name": target["name"], "summary": target.get("summary"),
            "type_signature": target.get("type_signature"), "provenance": target["provenance"],
            "confidence": float(target["confidence"]), "locked": bool(target.get("locked")),
            # events written before kbtool kept evidence in them: say where the value came from
            "evidence": target["evidence"] if "evidence" in target else [
                {"actor": actor, "reverted_to_event": event_id}],
        }
        if cur is not None and _snapshot(cur) == _snapshot(new):
            return {"written": False, "reason": "no change"}
        _write(conn, stable_id, new, version_id)
        _record_event(conn, stable_id=stable_id, kind="revert", written=True,
                      reason=f"reverted {steps} step(s): {new['provenance']} {new['confidence']:.2f}"
                             + (", locked" if new["locked"] else ""),
                      provenance=new["provenance"], confidence=new["confidence"], actor=actor,
                      old=_snapshot(cur), new=_snapshot(new),
                      evidence={"actor": actor, "reverted_to_event": event_id}, version_id=version_id)
        return {"written": True, "reason": f"reverted to {target['name']!r}"}


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
        " WHERE kind = ? AND target = ? AND key = ?", (kind, target, key)).fetchone()
    if row is None:
        return None
    return {"value": json.loads(row[0]), "provenance": row[1], "confidence": float(row[2]),
            "locked": bool(row[3]), "evidence": json.loads(row[4] or "[]")}


def _k_write(conn: sqlite3.Connection, kind: str, target: str, key: str, rec: dict[str, Any] | None,
             version_id: int | None) -> None:
    if rec is None:
        conn.execute("DELETE FROM knowledge WHERE kind = ? AND target = ? AND key = ?", (kind, target, key))
        return
    conn.execute(
        "INSERT INTO knowledge (kind, target, key, value, provenance, confidence, locked, evidence,"
        " version_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(kind, target, key) DO UPDATE"
        " SET value=excluded.value, provenance=excluded.provenance, confidence=excluded.confidence,"
        " locked=excluded.locked, evidence=excluded.evidence, version_id=excluded.version_id,"
        " updated_at=excluded.updated_at",
        (kind, target, key, json.dumps(rec["value"], sort_keys=True), rec["provenance"],
         rec["confidence"], int(rec["locked"]), json.dumps(rec["evidence"], sort_keys=True),
         version_id, now()),
    )


def _k_snapshot(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: rec[k] for k in ("value", "provenance", "confidence", "locked", "evidence")}


def _k_target_version(conn: sqlite3.Connection, kind: str, target: str) -> tuple[int | None, str | None]:
    """(latest version id, wasm type signature) of a function target; KB error if unknown."""
    version_id = _require_known(conn, target)
    row = conn.execute("SELECT type_sig FROM functions WHERE stable_id = ? AND version_id = ?",
                       (target, version_id)).fetchone()
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
            _record_event(conn, stable_id=aid, kind="rejection", written=False, reason=problem,
                          provenance=provenance, confidence=None, actor=actor, old=_k_snapshot(cur),
                          new=excerpt(proposal), evidence=ev, version_id=version_id, **common,
                          old_text=kn.display(kind, cur["value"]) if cur else None,
                          new_text=clip(str(kn.display(kind, value if isinstance(value, dict) else None)),
                                        EXCERPT))
            return {"written": False, "reason": problem}
        confidence = float(confidence)
        want_lock = bool(lock if lock is not None else True) if provenance == "human" else False
        if value is None and cur is None:
            return {"written": False, "reason": "no change"}
        if cur is not None and value is not None and cur["value"] == value and cur["provenance"] == provenance \
                and cur["locked"] == want_lock and (confidence == cur["confidence"] or (
                    provenance != "human" and confidence < cur["confidence"])):
            return {"written": False, "reason": "no change"}
        ok, reason = _decide(cur, provenance, confidence)
        reason = "new annotation" if cur is None else reason.replace(" name", "")
        if ok and yield_to_human and cur is not None and cur["provenance"] == "human":
            ok, reason = False, "this KB's human annotation stays (an imported one does not replace it)"
        if not ok:
            _record_event(conn, stable_id=aid, kind="rejection", written=False, reason=reason,
                          provenance=provenance, confidence=confidence, actor=actor,
                          old=_k_snapshot(cur), new=excerpt(proposal), evidence=ev,
                          version_id=version_id, **common,
                          old_text=kn.display(kind, cur["value"]) if cur else None,
                          new_text=kn.display(kind, value))
            return {"written": False, "reason": reason}
        new = None if value is None else {
            "value": value, "provenance": provenance, "confidence": confidence, "locked": want_lock,
            "evidence": _merge_evidence(cur, provenance, ev),
        }
        _k_write(conn, kind, target, key, new, version_id)
        _record_event(conn, stable_id=aid, kind=event_kind or EVENT_KIND[provenance], written=True,
                      reason=reason if value is not None else f"cleared ({reason})",
                      provenance=provenance, confidence=confidence, actor=actor,
                      old=_k_snapshot(cur), new=_k_snapshot(new) or {"value": None}, evidence=ev,
                      version_id=version_id, **common,
                      old_text=kn.display(kind, cur["value"]) if cur else None,
                      new_text=kn.display(kind, value))
        return {"written": True, "reason": reason if value is not None else "cleared"}


def record_knowledge_drop(
    conn: sqlite3.Connection, kind: str, target: str, key: str, value: dict[str, Any], *,
    reason: str, actor: str, version_id: int | None, evidence: dict[str, Any] | None = None,
) -> None:
    """An annotation that could not follow its function (a line comment whose instruction is
    gone): nothing written, one ``carry-dropped`` event on the annotation it would have been."""
    with transaction(conn):
        ev = excerpt(dict(evidence or {}), MAX_EVIDENCE_TEXT)
        ev.setdefault("actor", actor)
        _record_event(conn, stable_id=annotation_id(kind, target, str(key)), kind="carry-dropped",
                      written=False, reason=reason, provenance="diff-carry", confidence=None,
                      actor=actor, old=None, new=excerpt({"value": value}), evidence=ev,
                      version_id=version_id, subject=kind, target=target, akey=str(key),
                      new_text=kn.display(kind, value))


def set_knowledge_lock(conn: sqlite3.Connection, kind: str, target: str, key: str, locked: bool, *,
                       actor: str = "human") -> Decision:
    """Lock or unlock one annotation (a human action, recorded as an event)."""
    key = str(key)
    with transaction(conn):
        cur = _k_current(conn, kind, target, key)
        if cur is None:
            return {"written": False, "reason": "no annotation to " + ("lock" if locked else "unlock")}
        if cur["locked"] == locked:
            return {"written": False, "reason": "already " + ("locked" if locked else "unlocked")}
        new = dict(cur, locked=locked)
        vid = conn.execute("SELECT version_id FROM knowledge WHERE kind = ? AND target = ? AND key = ?",
                           (kind, target, key)).fetchone()[0]
        _k_write(conn, kind, target, key, new, vid)
        _record_event(conn, stable_id=annotation_id(kind, target, key), kind="lock" if locked else "unlock",
                      written=True, reason="human " + ("lock" if locked else "unlock"),
                      provenance=cur["provenance"], confidence=cur["confidence"], actor=actor,
                      old=_k_snapshot(cur), new=_k_snapshot(new), evidence={"actor": actor},
                      version_id=vid, subject=kind, target=target, akey=key,
                      old_text=kn.display(kind, cur["value"]), new_text=kn.display(kind, cur["value"]))
        return {"written": True, "reason": "locked" if locked else "unlocked"}


def revert_knowledge(conn: sqlite3.Connection, kind: str, target: str, key: str = "", *, steps: int = 1,
                     actor: str = "human") -> Decision:
    """Restore one annotation exactly as it was before its ``steps``-th latest written change
    (value, provenance, confidence, lock, evidence); past the first value it is cleared."""
    if steps < 1:
        return {"written": False, "reason": "steps must be at least 1"}
    key = str(key)
    aid = annotation_id(kind, target, key)
    with transaction(conn):
        rows = conn.execute(
            "SELECT id, old, version_id FROM annotation_events WHERE stable_id = ? AND written = 1"
            " AND kind NOT IN ('lock', 'unlock') ORDER BY id DESC", (aid,)).fetchall()
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
        _record_event(conn, stable_id=aid, kind="revert", written=True,
                      reason=f"reverted {steps} step(s)" + ("" if target_rec else ": cleared"),
                      provenance=prov, confidence=target_rec["confidence"] if target_rec else None,
                      actor=actor, old=_k_snapshot(cur), new=_k_snapshot(target_rec) or {"value": None},
                      evidence={"actor": actor, "reverted_to_event": event_id}, version_id=vid,
                      subject=kind, target=target, akey=key,
                      old_text=kn.display(kind, cur["value"]) if cur else None,
                      new_text=kn.display(kind, target_rec["value"]) if target_rec else None)
        return {"written": True, "reason": "reverted" if target_rec else "reverted: cleared"}
