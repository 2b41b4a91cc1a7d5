"""Annotation events: a function's history and renames, the live feed, the change token."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.queries.functions import functions_by_stable_id
from kbtool.kb.queries.symbols import get_symbol, require_stable_id
from kbtool.kb.queries.versions import list_versions

if TYPE_CHECKING:  # hints only: the TUI's start reads the change token, not the shapes
    from kbtool.kb.queries.shapes import (
        AnnotationEvent,
        EventFeed,
        FeedEvent,
        FunctionAppearance,
        History,
        Rename,
        VersionName,
    )

_EVENT_COLUMNS = (
    "id, kind, written, reason, provenance, confidence, actor, old_name, new_name, old, new,"
    " evidence, version_id, created_at, repeats, last_at"
)


def _event(row: sqlite3.Row) -> AnnotationEvent:
    return {
        "id": row["id"],
        "kind": row["kind"],
        "written": bool(row["written"]),
        "reason": row["reason"],
        "provenance": row["provenance"],
        "confidence": row["confidence"],
        "actor": row["actor"],
        "old_name": row["old_name"],
        "new_name": row["new_name"],
        "old": json.loads(row["old"]) if row["old"] else None,
        "new": json.loads(row["new"]) if row["new"] else None,
        "evidence": json.loads(row["evidence"]) if row["evidence"] else None,
        "version_id": row["version_id"],
        "created_at": row["created_at"],
        "repeats": row["repeats"],  # identical refusals counted on one row (schema 4)
        "last_at": row["last_at"] or row["created_at"],
    }


def annotation_events(conn: sqlite3.Connection, stable_id: str) -> list[AnnotationEvent]:
    return [
        _event(r)
        for r in conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ? ORDER BY id",
            (stable_id,),
        )
    ]


def history(conn: sqlite3.Connection, stable_id: str) -> History:
    """First seen, every version the function appears in (with body_changed), and its events."""
    versions = functions_by_stable_id(conn, stable_id)
    if not versions:
        raise UnknownStableIdError(
            f"unknown stable_id {stable_id!r} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )
    first = versions[0]
    seen_at = conn.execute(
        "SELECT ingested_at FROM versions WHERE id = ?", (first["version_id"],)
    ).fetchone()[0]
    events = annotation_events(conn, stable_id)
    labels = {v["id"]: v["label"] for v in list_versions(conn)}
    for e in events:
        e["version_label"] = labels.get(e["version_id"])
    return {
        "stable_id": stable_id,
        "first_seen": {
            "version_id": first["version_id"],
            "label": first["label"],
            "index": first["index"],
            "ingested_at": seen_at,
        },
        "versions": versions,
        "events": events,
        "symbol": get_symbol(conn, stable_id),
        "names_by_version": _names_by_version(versions, events),
    }


def _names_by_version(
    versions: list[FunctionAppearance], events: list[AnnotationEvent]
) -> list[VersionName]:
    """Time travel: the name the function had when each later version was current."""
    out: list[VersionName] = []
    name = None
    written = [e for e in events if e["written"] and e["new"] is not None]
    pos = 0
    for i, v in enumerate(versions):
        nxt = versions[i + 1]["version_id"] if i + 1 < len(versions) else None
        while pos < len(written) and (nxt is None or (written[pos]["version_id"] or 0) < nxt):
            name = written[pos]["new"].get("name")
            pos += 1
        out.append({"version_id": v["version_id"], "label": v["label"], "name": name})
    return out


def renames(conn: sqlite3.Connection, stable_id: str) -> list[Rename]:
    """The reversible rename trail: written changes, newest first, with the steps to revert each."""
    require_stable_id(conn, stable_id)
    rows = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ? AND written = 1"
        " AND kind NOT IN ('lock', 'unlock') ORDER BY id DESC",
        (stable_id,),
    ).fetchall()
    out: list[Rename] = []
    for step, r in enumerate(rows, start=1):
        e = _event(r)
        out.append(
            {
                "event_id": e["id"],
                "kind": e["kind"],
                "from": e["old_name"],
                "to": e["new_name"],
                "provenance": e["provenance"],
                "confidence": e["confidence"],
                "actor": e["actor"],
                "version_id": e["version_id"],
                "at": e["created_at"],
                "revert_steps": step,
            }
        )
    return out


_TOKEN = (
    "(SELECT COALESCE(MAX(id), 0) FROM versions),"
    " (SELECT COALESCE(MAX(id), 0) FROM annotation_events)"
)
_TOKEN_RUNS = ", (SELECT COALESCE(MAX(id), 0) FROM analysis_runs)"
_MAIN_FILE = "(SELECT file FROM pragma_database_list WHERE name = 'main'), "


def _token_row(conn: sqlite3.Connection, head: str) -> tuple:
    """``head`` columns, then the change token, in one statement."""
    try:
        return tuple(conn.execute("SELECT " + head + _TOKEN + _TOKEN_RUNS).fetchone())
    except sqlite3.OperationalError:  # a KB from before analysis runs were recorded
        return (*conn.execute("SELECT " + head + _TOKEN).fetchone(), 0)


def change_token(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Changes whenever a version is ingested, an annotation decision is recorded or an
    analysis run (analyze, agent, deep: structs, facts) is stored."""
    v, e, r = _token_row(conn, "")
    return v, e, r


def file_and_change_token(conn: sqlite3.Connection) -> tuple[str, tuple[int, int, int]]:
    """The connection's database file ('' in memory) and :func:`change_token`, in one
    statement (a code request asks for both each time; each statement lets go of the GIL)."""
    path, v, e, r = _token_row(conn, _MAIN_FILE)
    return path or "", (v, e, r)


EVENT_PAGE = 200  # most events one feed answer carries
EVENT_DEFAULT_LATEST = 50  # `since` omitted: the latest this many


def events_since(
    conn: sqlite3.Connection, since: int | None = None, limit: int = EVENT_PAGE
) -> EventFeed:
    """The studio's feed: ``{last_id, events}`` with ids greater than ``since`` (oldest
    first, at most ``limit``, capped at EVENT_PAGE); without ``since``, the latest
    EVENT_DEFAULT_LATEST. ``last_id`` is the id to poll from next (the newest id returned, or
    ``since`` when nothing is new)."""
    limit = max(1, min(int(limit), EVENT_PAGE))
    if since is None:
        rows = conn.execute(
            "SELECT * FROM events ORDER BY id DESC LIMIT ?", (min(limit, EVENT_DEFAULT_LATEST),)
        ).fetchall()[::-1]
    else:
        rows = conn.execute(
            "SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?", (int(since), limit)
        ).fetchall()
    events: list[FeedEvent] = [
        {
            "id": r["id"],
            "kind": r["kind"],
            "stable_id": r["stable_id"],
            "version_id": r["version_id"],
            "payload": json.loads(r["payload"] or "{}"),
            "created_at": r["created_at"],
        }
        for r in rows
    ]
    if events:
        last = events[-1]["id"]
    elif since is not None:
        last = int(since)
    else:
        last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
    return {"last_id": last, "events": events}


def last_annotation_event(conn: sqlite3.Connection, stable_id: str) -> AnnotationEvent | None:
    """The newest gate decision recorded for a function (written or refused), or None."""
    row = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ?"
        " ORDER BY id DESC LIMIT 1",
        (stable_id,),
    ).fetchone()
    return _event(row) if row is not None else None
