"""The gate's events: one ``annotation_events`` row per decision, repeated refusals counted on
their earlier row, each caller's refusals bounded per minute (:mod:`kbtool.kb.gate`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

from kbtool.kb.db import now
from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.gate_rules import MAX_REFUSALS_PER_MINUTE, short_repr

#: ``json.dumps(value, sort_keys=True)``'s encoder made once (the same text)
_sorted_json = json.JSONEncoder(sort_keys=True).encode


def _latest_version(conn: sqlite3.Connection, stable_id: str) -> int | None:
    row = conn.execute(
        "SELECT MAX(version_id) FROM functions WHERE stable_id = ?", (stable_id,)
    ).fetchone()
    return row[0] if row else None


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
            reason = (
                f"refused proposals from {actor} over {MAX_REFUSALS_PER_MINUTE} a minute,"
                f" counted here (first: {reason})"
            )
    conn.execute(
        "INSERT INTO annotation_events (stable_id, kind, written, reason, provenance, confidence,"
        " actor, old_name, new_name, old, new, evidence, version_id, created_at, repeats,"
        " last_at, fingerprint, subject, target, akey) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            stable_id,
            kind,
            int(written),
            reason,
            provenance,
            confidence,
            actor,
            old_text if subject else (old.get("name") if old else None),
            new_text if subject else (new.get("name") if new else None),
            _sorted_json(old) if old else None,
            _sorted_json(new) if new else None,
            _sorted_json(evidence) if evidence is not None else None,
            version_id,
            stamp,
            1,
            stamp,
            fingerprint,
            subject,
            target,
            akey,
        ),
    )


def _fingerprint(*parts: Any) -> str:
    """What makes two refusals the same refusal (a digest of their JSON)."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()


def _repeat(
    conn: sqlite3.Connection,
    stable_id: str,
    fingerprint: str,
    stamp: str,
    *,
    since_write: bool = True,
) -> bool:
    """Count a repeated refusal on its earlier row (``repeats`` + 1, ``last_at``) when one
    exists and, with ``since_write``, nothing was written to the function since; True then."""
    row = conn.execute(
        "SELECT id FROM annotation_events WHERE fingerprint = ? ORDER BY id DESC LIMIT 1",
        (fingerprint,),
    ).fetchone()
    if row is None:
        return False
    if (
        since_write
        and conn.execute(
            "SELECT 1 FROM annotation_events WHERE stable_id = ? AND written = 1 AND id > ? LIMIT 1",
            (stable_id, row[0]),
        ).fetchone()
    ):
        return False
    conn.execute(
        "UPDATE annotation_events SET repeats = repeats + 1, last_at = ? WHERE id = ?",
        (stamp, row[0]),
    )
    return True


_STAMP_DIGITS = ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19), (20, 26))


def _parse_stamp(stamp: str) -> datetime:
    """``datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")`` in UTC, the same value or the same
    ValueError. The shape :func:`~kbtool.kb.db.now` writes (``2026-11-29T06:00:00.123456Z``, ASCII
    digits) is read by hand: strptime's first use imports ``_strptime``, ``calendar`` and
    ``locale`` (a later ingest that refuses a name paid ~0.5-3 ms for them); any other text
    (a ``KBTOOL_FROZEN_TIME`` of another shape) goes to strptime as before."""
    if (
        len(stamp) == 27
        and stamp[4] == "-"
        and stamp[7] == "-"
        and stamp[10] == "T"
        and stamp[13] == ":"
        and stamp[16] == ":"
        and stamp[19] == "."
        and stamp[26] == "Z"
    ):
        parts = [stamp[a:b] for a, b in _STAMP_DIGITS]
        if all(p.isascii() and p.isdigit() for p in parts):
            # (datetime() refuses what strptime's pattern or its date check refuses here:
            # month 0 or 13, day 0 or 32, Feb 30, hour 24, minute or second 60/61, year 0)
            return datetime(*map(int, parts), tzinfo=UTC)
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _refusals_last_minute(conn: sqlite3.Connection, actor: str, stamp: str) -> int:
    """Refusal rows ``actor`` added in the minute before ``stamp``."""
    try:
        t = _parse_stamp(stamp)
    except ValueError:
        return 0
    since = (t - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM annotation_events WHERE actor = ? AND written = 0 AND created_at >= ?",
            (actor, since),
        ).fetchone()[0]
    )


def _require_known(conn: sqlite3.Connection, stable_id: str) -> int:
    version_id = _latest_version(conn, stable_id)
    if version_id is None:
        raise UnknownStableIdError(
            f"unknown stable_id {short_repr(stable_id)} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )
    return version_id
