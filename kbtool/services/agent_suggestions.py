"""Agent names below the write floor wait for a person: accept one (a human name, locked, as
`kbtool set-name`), accept every one above a threshold (provenance agent at its calibrated
confidence: the threshold is vouched for, not each name), or dismiss one. Front-ends:
``kbtool suggestions``, the TUI's suggestions screen, MCP ``list_suggestions``."""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries, store
from kbtool.kb.gate import upsert_symbol
from kbtool.services.agent_writes import PROVENANCE


class NoSuggestion(LookupError):
    """No open suggestion for that function (never made, or already accepted/dismissed)."""


def _open(conn: sqlite3.Connection, stable_id: str, version_id: int | None) -> dict[str, Any]:
    s = queries.open_suggestion(conn, stable_id, version_id)
    if s is None:
        where = f" in version {version_id}" if version_id is not None else ""
        raise NoSuggestion(
            f"no open suggestion for {stable_id!r}{where} (list them with `kbtool suggestions VERSION`)"
        )
    return s


def accept_suggestion(
    conn: sqlite3.Connection,
    stable_id: str,
    version_id: int | None = None,
    *,
    as_human: bool = True,
    actor: str = "human:cli",
) -> dict[str, Any]:
    """Write the open suggestion of ``stable_id`` through the gate and mark it accepted.

    ``as_human`` (default): provenance human, locked, confidence 1.0 (a person chose the name);
    else provenance agent at the suggestion's calibrated confidence. Returns the gate's
    decision plus ``name``, ``stable_id`` and ``version_id``; a refused write leaves the
    suggestion open. Raises :class:`NoSuggestion`.
    """
    s = _open(conn, stable_id, version_id)
    evidence = {
        "accepted_suggestion": {
            k: s[k] for k in ("backend", "model", "rule", "source", "confidence", "created_at")
        },
        "reasons": list(s["evidence"].get("reasons") or [])[:8],
    }
    summary = s["evidence"].get("summary") or None
    if as_human:
        d = upsert_symbol(
            conn,
            s["stable_id"],
            s["name"],
            provenance="human",
            confidence=1.0,
            actor=actor,
            summary=summary,
            evidence=evidence,
            lock=True,
            version_id=s["version_id"],
        )
    else:
        d = upsert_symbol(
            conn,
            s["stable_id"],
            s["name"],
            provenance=PROVENANCE,
            confidence=float(s["confidence"]),
            actor=actor,
            summary=summary,
            evidence={**s["evidence"], **evidence},
            version_id=s["version_id"],
        )
    if d["written"]:
        store.decide_suggestion(conn, s["version_id"], s["stable_id"], "accepted")
        store.append_event(
            conn,
            "suggestion-accepted",
            stable_id=s["stable_id"],
            version_id=s["version_id"],
            payload={"name": s["name"], "as_human": as_human, "actor": actor},
        )
    return {**d, "name": s["name"], "stable_id": s["stable_id"], "version_id": s["version_id"]}


def accept_suggestions_above(
    conn: sqlite3.Connection,
    version_id: int,
    threshold: float,
    *,
    as_human: bool = False,
    actor: str = "human:cli",
) -> list[dict[str, Any]]:
    """Accept every open suggestion of ``version_id`` at confidence ``threshold`` or more
    (provenance agent unless ``as_human``); one decision per suggestion, highest first."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the threshold must be between 0 and 1, not {threshold:g}")
    out = []
    while True:
        page = queries.suggestions(conn, version_id, min_confidence=threshold, limit=200)
        todo = [s for s in page["items"] if s["stable_id"] not in {d["stable_id"] for d in out}]
        if not todo:
            return out
        for s in todo:
            out.append(
                accept_suggestion(conn, s["stable_id"], version_id, as_human=as_human, actor=actor)
            )


def dismiss_suggestion(
    conn: sqlite3.Connection,
    stable_id: str,
    version_id: int | None = None,
    *,
    actor: str = "human:cli",
) -> dict[str, Any]:
    """Mark the open suggestion of ``stable_id`` dismissed (a re-run does not bring the same
    name back). Raises :class:`NoSuggestion`."""
    s = _open(conn, stable_id, version_id)
    store.decide_suggestion(conn, s["version_id"], s["stable_id"], "dismissed")
    store.append_event(
        conn,
        "suggestion-dismissed",
        stable_id=s["stable_id"],
        version_id=s["version_id"],
        payload={"name": s["name"], "actor": actor},
    )
    return {"stable_id": s["stable_id"], "version_id": s["version_id"], "name": s["name"]}
