"""A kept diff is read as few files as the question needs (issue 30 point 3): a stored pair's
report is one kept file (no changelog read to re-triage it), a computed pair's report is read
without its changelog; every answer is byte-identical to a computation with the cache off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kbtool.cli import main
from kbtool.kb.db import open_ro
from kbtool.services.diff.cache import DiffCache, DiskAnswers
from tests.support.diff_kb import make_stale_report, two_versions_kb


class _Recording(DiskAnswers):
    """The real disk answers, noting the kind of each file read."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.read: list[str] = []

    def get(self, key: tuple, modules: tuple) -> dict[str, Any] | None:
        self.read.append(key[3])
        return super().get(key, modules)


def _fresh(db: Path, a: int, b: int) -> tuple[bytes, bytes]:
    """Report and changelog computed with the cache off (nothing kept, nothing read back)."""
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(None))
        return orjson.dumps(cache.report(conn, a, b)), orjson.dumps(cache.changelog(conn, a, b))
    finally:
        conn.close()


def _ask(db: Path, disk: Path, a: int, b: int, *, changelog: bool = False) -> tuple:
    """A new process's cache over ``disk``: ``(cache, files read, report[, changelog])``."""
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=_Recording(disk))
        report = orjson.dumps(cache.report(conn, a, b))
        read = list(cache.disk.read)  # type: ignore[attr-defined]
        cl = orjson.dumps(cache.changelog(conn, a, b)) if changelog else None
        return cache, read, report, cl
    finally:
        conn.close()


def test_a_stored_pairs_report_is_one_kept_file(tmp_path: Path) -> None:
    db = two_versions_kb(tmp_path)
    disk = tmp_path / "answers"
    first, _read, report, cl = _ask(db, disk, 1, 2, changelog=True)
    assert first.loaded == 1
    second, read, again, cl_again = _ask(db, disk, 1, 2, changelog=True)
    assert read == ["stored"] and second.loaded == 0 and second.disk_hits >= 1
    assert (report, cl) == (again, cl_again) == _fresh(db, 1, 2)


def test_a_stale_stored_report_is_read_back_without_its_changelog(tmp_path: Path) -> None:
    db = two_versions_kb(tmp_path)
    make_stale_report(db)
    disk = tmp_path / "answers"
    first, _read, report, _cl = _ask(db, disk, 1, 2)
    assert first.retriaged == 1 and b'"stale"' not in report
    second, read, again, _cl = _ask(db, disk, 1, 2)
    assert read == ["stored"] and (second.retriaged, second.changelogs) == (0, 0)
    assert again == report == _fresh(db, 1, 2)[0]


def test_a_rename_is_never_read_from_the_kept_stored_report(tmp_path: Path) -> None:
    db = two_versions_kb(tmp_path)
    make_stale_report(db)
    disk = tmp_path / "answers"
    _ask(db, disk, 1, 2, changelog=True)
    conn = open_ro(db)
    sid = next(
        c["to_stable_id"]
        for c in DiffCache(disk=DiskAnswers(None)).report(conn, 1, 2)["changes"]
        if c["classification"] == "modified"
    )
    conn.close()
    for name in ("patched_fn", "get_field_v2"):
        assert main(["--db", str(db), "set-name", sid, name]) == 0
        after, read, report, cl = _ask(db, disk, 1, 2, changelog=True)
        assert read[0] == "stored" and after.loaded == 1  # kept under other names: a miss
        assert name.encode() in report and (report, cl) == _fresh(db, 1, 2)
        _cache, read, again, _cl = _ask(db, disk, 1, 2)
        assert read == ["stored"] and again == report  # kept again under today's names


def test_a_computed_pairs_report_is_read_without_its_changelog(tmp_path: Path) -> None:
    db = two_versions_kb(tmp_path)
    disk = tmp_path / "answers"
    first, _read, report, cl = _ask(db, disk, 2, 1, changelog=True)
    assert first.computed == 1
    conn = open_ro(db)
    try:
        second = DiffCache(disk=_Recording(disk))
        again = orjson.dumps(second.report(conn, 2, 1))
        assert "changelog" not in second.disk.read  # type: ignore[attr-defined]
        assert second.disk_hits == 1 and second.computed == 0
        cl_again = orjson.dumps(second.changelog(conn, 2, 1))  # read when first asked for
        assert "changelog" in second.disk.read  # type: ignore[attr-defined]
        assert (second.computed, second.relabelled) == (0, 0)
    finally:
        conn.close()
    assert (report, cl) == (again, cl_again) == _fresh(db, 2, 1)
