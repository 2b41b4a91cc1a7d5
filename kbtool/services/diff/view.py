"""What the read-only diff views need from a KB (a path or an open connection): a pure read.

The report is the stored one when saved, else computed with carry-over off and nothing
stored; the changelog reuses the pairing the report was computed from.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.kb.db import connection
from kbtool.services.diff.cache import DIFF_CACHE, DiffCache
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.head import keep_head, read_head
from kbtool.services.diff.report import Pairing, compute_diff_with_pairing, stored_diff

KB = str | os.PathLike[str] | sqlite3.Connection


def read_report(
    conn: sqlite3.Connection, from_version_id: int, to_version_id: int
) -> tuple[dict[str, Any], Pairing | None]:
    """``(report, pairing)``: the stored report (pairing None), else computed with carry-over
    off (a pure read) together with its pairing."""
    queries.get_version(conn, from_version_id)  # UnknownVersionError with the known ids
    queries.get_version(conn, to_version_id)
    report = stored_diff(conn, from_version_id, to_version_id)
    if report is not None:
        return report, None
    return compute_diff_with_pairing(conn, from_version_id, to_version_id)


def toolchain_changed(conn: sqlite3.Connection, report: dict[str, Any]) -> bool:
    """Both toolchain versions known and different (runtime changes then count as churn)."""
    a = queries.get_version(conn, report["from_version_id"])["toolchain_version"]
    b = queries.get_version(conn, report["to_version_id"])["toolchain_version"]
    return bool(a and b and a != b)


def diff_view(
    kb: KB, from_version_id: int, to_version_id: int, *, with_changelog: bool = True
) -> dict[str, Any]:
    """``{"report", "changelog" (or None), "toolchain_changed"}`` for one pair."""
    with connection(kb) as conn:
        report, pairing = read_report(conn, from_version_id, to_version_id)
        return {
            "report": report,
            "changelog": changelog(conn, report, pairing=pairing) if with_changelog else None,
            "toolchain_changed": toolchain_changed(conn, report),
        }


def changelog_of(kb: KB, report: dict[str, Any]) -> dict[str, Any]:
    """The semantic changelog of an already loaded report."""
    with connection(kb) as conn:
        return changelog(conn, report)


def coverage_of(kb: KB, version_id: int) -> dict[str, Any]:
    """The coverage object of one version."""
    with connection(kb) as conn:
        return dict(queries.coverage(conn, version_id))


def cached_view(
    conn: sqlite3.Connection,
    from_version_id: int,
    to_version_id: int,
    *,
    cache: DiffCache | None = None,
    with_changelog: bool = True,
) -> dict[str, Any]:
    """:func:`diff_view` through the in-process cache (:mod:`kbtool.services.diff.cache`):
    the long-lived surfaces (``kbtool serve``, the TUI) ask for the same pair again."""
    cache = cache if cache is not None else DIFF_CACHE
    queries.get_version(conn, from_version_id)  # UnknownVersionError with the known ids
    queries.get_version(conn, to_version_id)
    report = cache.report(conn, from_version_id, to_version_id)
    return {
        "report": report,
        "changelog": (
            cache.changelog(conn, from_version_id, to_version_id) if with_changelog else None
        ),
        "toolchain_changed": toolchain_changed(conn, report),
    }


def cached_head(
    conn: sqlite3.Connection,
    from_version_id: int,
    to_version_id: int,
    *,
    cache: DiffCache | None = None,
) -> dict[str, Any] | None:
    """``{"head", "toolchain_changed"}``: the kept head of the pair's report
    (:mod:`kbtool.services.diff.head`: what a screen shows first), or None when none is kept
    under today's key or the whole report is in the cache's memory (read that one)."""
    cache = cache if cache is not None else DIFF_CACHE
    queries.get_version(conn, from_version_id)  # UnknownVersionError with the known ids
    queries.get_version(conn, to_version_id)
    head = read_head(cache, conn, from_version_id, to_version_id)
    if head is None:
        return None
    return {"head": head, "toolchain_changed": toolchain_changed(conn, head["report"])}


def keep_cached_head(
    conn: sqlite3.Connection,
    from_version_id: int,
    to_version_id: int,
    *,
    cache: DiffCache | None = None,
) -> bool:
    """Keep the head of the pair's report (made from the cached whole report) when none is
    kept under today's key (:func:`kbtool.services.diff.head.keep_head`); True when written."""
    cache = cache if cache is not None else DIFF_CACHE
    return keep_head(cache, conn, from_version_id, to_version_id)


def kept_view(
    conn: sqlite3.Connection,
    from_version_id: int,
    to_version_id: int,
    *,
    with_changelog: bool = True,
) -> dict[str, Any]:
    """:func:`cached_view` for a one-shot command (``kbtool diff``, ``kbtool ui diff``): no
    background work, and a pair any process computed before is read back from disk
    (:class:`kbtool.services.diff.cache.DiskAnswers`) instead of running the matcher again."""
    return cached_view(
        conn, from_version_id, to_version_id, cache=DiffCache(), with_changelog=with_changelog
    )
