"""The head of a diff report: what a screen shows before the whole report is read (issue 30).

The TUI's diff screen opens on the summary, one count per filter and the first screens of the
"changed" entries (modified, new, deleted) in triage order. On ffmpeg the whole report is
5.7 MB of JSON (22.5k entries, ~50 ms to parse) and its kept file is read before anything is
shown; its head is ~0.1 MB: the report without its entries, the entries grouped by
(classification, runtime, review) with each group's count and longest name (every filter
the screen offers is a union of such groups), and the first :data:`HEAD_ROWS` changed entries
in triage order (:func:`kbtool.services.diff.ordering.order_changes`), as the whole report
has them.

File: JSON ``{"format", "annotations", "report", "groups", "changed", "changed_total"}``,
kept with the pair's other kept files (:mod:`kbtool.services.diff.disk`) under the report's
key without the annotations (KB file, both versions, content, the stored report's stamp,
both modules' SHA-256, ``DISK_FORMAT``, ``TRIAGE_RULES``), with the fingerprint of the two
versions' annotations it was made under inside: a rename (any annotation write of the two
versions) misses it exactly as it misses the kept report, and the screen reads the whole
report as before. Made from a final report only (never one answered with
``triage_pending``, never when the KB moved while it was made): by the preparation
(:func:`kbtool.services.diff.warm.prepare_pairs`) and by the screen after it read a whole
report that had none. Read only while the whole report is not in the process's memory (then
that one is at hand).

The head also keeps the KB's change token (:func:`kbtool.kb.queries.change_token`) read before
its key: a process that has not read the two versions' annotations yet (a new one) and finds
the token unchanged takes the head without them (the token moves with every annotation write,
ingest and analysis run, and never goes back: AUTOINCREMENT ids), so the diff screen's first
frame does not wait for both versions' annotation snapshot (~10 ms on ffmpeg, read by the
whole report's worker after that frame). When the token moved, the annotations' fingerprint
decides as before, and the next :func:`keep_head` keeps the head again under today's token.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from kbtool.kb import queries
from kbtool.textutil import printable

if TYPE_CHECKING:
    from kbtool.services.diff.cache import DiffCache

__all__ = ["HEAD_FORMAT", "HEAD_ROWS", "head_key", "keep_head", "make_head", "read_head"]

HEAD_FORMAT = 1  # the head file's shape
HEAD_ROWS = 500  # changed entries kept in the head (a screen's first load is at most this)
_KNOWN: set[tuple] = set()  # report keys whose head this process read or kept
_KNOWN_MAX = 64


def head_key(report_key: tuple) -> tuple:
    """The disk key of the head of ``report_key`` (without the annotations: in the file)."""
    return report_key[:3] + ("head",) + report_key[4:6]


def make_head(report: dict[str, Any], rows: int = HEAD_ROWS) -> dict[str, Any]:
    """The head of a whole report (see the module): the fields besides ``changes``, the
    groups ``[classification, runtime, review, count, longest printable name]`` and the first
    ``rows`` changed entries in triage order."""
    from kbtool.services.diff.ordering import order_changes
    from kbtool.services.diff.report import CHANGED

    groups: dict[tuple[str, bool, bool], list[int]] = {}
    for c in report["changes"]:
        key = (c["classification"], bool(c.get("runtime")), bool(c.get("review")))
        width = len(printable(c.get("name")))
        g = groups.get(key)
        if g is None:
            groups[key] = [1, width]
        else:
            g[0] += 1
            g[1] = max(g[1], width)
    changed = order_changes([c for c in report["changes"] if c["classification"] in CHANGED])
    return {
        "format": HEAD_FORMAT,
        "report": {k: v for k, v in report.items() if k != "changes"},
        "groups": [[cls, rt, rv, n, w] for (cls, rt, rv), (n, w) in groups.items()],
        "changed": changed[:rows],
        "changed_total": len(changed),
    }


def read_head(cache: DiffCache, conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any] | None:
    """The kept head of ``a`` -> ``b`` under today's key and annotations, or None: not kept,
    of another shape, or the whole report is in ``cache``'s memory already."""
    from kbtool.services.diff.cache import _modules

    token = list(queries.change_token(conn))
    head = _read_at_token(cache, conn, a, b, token)
    if head is not None:
        return head
    key = cache._key(conn, a, b, "report")
    if cache._lookup(key, count=False) is not None:
        return None
    head = cache.disk.get(head_key(key), _modules(conn, a, b))
    if head is None or not _valid(head) or head.get("annotations") != key[6]:
        return None
    if head.get("token") == token:
        _know(key)  # else keep_head keeps it again under today's token
    return head


def _read_at_token(
    cache: DiffCache, conn: sqlite3.Connection, a: int, b: int, token: list[int]
) -> dict[str, Any] | None:
    """The kept head when it was kept at today's change ``token`` and this process has not read
    the pair's annotations at it (a new process: their snapshot is what the key would cost),
    or None. The key without the annotations: :meth:`DiffCache._key`'s first six parts."""
    from kbtool.services.diff.cache import _content_token, _file_identity, _modules

    path = queries.database_file(conn)
    if not path:
        return None
    db = (path, _file_identity(path))
    with cache._lock:
        memo = cache._states.get((db, a, b))
    if memo is not None and list(memo[0]) == token:
        return None  # the annotations are known: the key is cheap (the report may be in memory)
    base = (db, a, b, "report", _content_token(conn, a, b), queries.stored_diff_stamp(conn, a, b))
    head = cache.disk.get(head_key(base), _modules(conn, a, b))
    if head is None or not _valid(head) or head.get("token") != token:
        return None
    _know(base + (head["annotations"],))
    return head


def _valid(head: dict[str, Any]) -> bool:
    return (
        head.get("format") == HEAD_FORMAT
        and isinstance(head.get("annotations"), str)
        and isinstance(head.get("report"), dict)
        and isinstance(head.get("groups"), list)
        and isinstance(head.get("changed"), list)
        and isinstance(head.get("changed_total"), int)
    )


def _know(key: tuple) -> None:
    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.clear()
    _KNOWN.add(key)


def keep_head(cache: DiffCache, conn: sqlite3.Connection, a: int, b: int) -> bool:
    """Keep the head of ``a`` -> ``b`` made from its whole report (:meth:`DiffCache.report`:
    a memory hit after a read) unless one is kept under today's key and change token already
    (one kept under today's key at an older token is kept again with today's); True when
    written. Not for a report whose triage is pending, nor when the KB moved meanwhile."""
    from kbtool.services.diff.cache import _modules

    token = list(queries.change_token(conn))  # before the key: a later token never matches
    key = cache._key(conn, a, b, "report")
    if key in _KNOWN:
        return False
    modules = _modules(conn, a, b)
    kept = cache.disk.get(head_key(key), modules)
    if kept is not None and (kept.get("format"), kept.get("annotations")) == (HEAD_FORMAT, key[6]):
        _know(key)
        if kept.get("token") == token:
            return False
        kept["token"] = token  # the same head (today's key), kept again with today's token
        cache.disk.put(head_key(key), modules, kept)
        return True
    report = cache.report(conn, a, b)
    if report.get("triage_pending") or cache._key(conn, a, b, "report") != key:
        return False
    head = make_head(report)
    head["annotations"] = key[6]
    head["token"] = token
    cache.disk.put(head_key(key), modules, head)
    _know(key)
    return True
