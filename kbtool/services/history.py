"""A function's whole history (``kbtool history``, the TUI history screen): the name record's
events (:func:`kbtool.kb.queries.history`) and the gate's decisions on its knowledge (comment,
line comments, prototype, local names, local types), one timeline labelled by what changed."""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.services import knowledge as ks

#: knowledge kind -> the label shown ("{}": the annotation's key)
KIND_LABELS = {
    "comment": "comment",
    "line_comment": "line +{}",
    "prototype": "prototype",
    "local": "local {}",
    "local_type": "type of local {}",
}


def what_label(subject: str | None, key: str | None) -> str:
    """``name`` for a name event; ``comment``, ``line +9``, ``local 0``... for knowledge."""
    if not subject:
        return "name"
    return KIND_LABELS.get(subject, subject + (" {}" if key else "")).format(key or "")


def function_history(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any]:
    """:func:`kbtool.kb.queries.history` plus ``knowledge_events`` (the function's knowledge
    decisions, oldest first, each with ``what``, ``old_name``/``new_name`` = the texts,
    ``repeats``: identical refusals counted on one row) and ``timeline`` (name and knowledge
    events merged in the order they happened, each with ``what``)."""
    h = queries.history(conn, stable_id)
    labels = {v["id"]: v["label"] for v in queries.list_versions(conn)}
    kev = []
    for e in ks.history(conn, stable_id):
        kev.append(
            {
                **e,
                "what": what_label(e["subject"], e["key"]),
                "old_name": e["old_text"],
                "new_name": e["new_text"],
                "last_at": e.get("last_at") or e["created_at"],
                "version_label": labels.get(e["version_id"]),
            }
        )
    h["knowledge_events"] = kev
    names = [{**e, "what": "name"} for e in h["events"]]
    h["timeline"] = sorted(names + kev, key=lambda e: e["id"])
    return h
