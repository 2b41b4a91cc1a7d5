"""A stored diff report is brought up to today's triage rules once, not once per process:
the re-triaged report and its changelog are kept on disk like a computed answer (the rules'
version is part of the file's name), and so is the changelog of a stored report (built
from the facts: on a big module every modified body is read)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.cli import main
from kbtool.kb.db import open_ro
from kbtool.services.diff.cache import DiffCache, DiskAnswers
from tests.support.diff_kb import make_stale_report
from tests.support.triage_pair import V1, V2

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")


def _kb(tmp_path: Path) -> Path:
    db = tmp_path / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
        wat, wasm = tmp_path / f"{name}.wat", tmp_path / f"{name}.wasm"
        wat.write_text(text)
        subprocess.run(["wat2wasm", str(wat), "-o", str(wasm)], check=True)
        base = ["--base", "1"] if name == "v2" else []
        assert main(["--db", str(db), "ingest", str(wasm), "-l", name, *base]) == 0
    return db


_make_stale = make_stale_report


def _modified(report: dict) -> dict:
    return {
        c["to_index"]: (c["triage"], c["reasons"])
        for c in report["changes"]
        if c["classification"] == "modified"
    }


def test_a_stale_stored_report_is_retriaged_once_across_processes(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    _make_stale(db)
    disk = tmp_path / "answers"
    conn = open_ro(db)
    first = DiffCache(disk=DiskAnswers(disk))
    report = first.report(conn, 1, 2)
    assert first.retriaged == 1 and first.computed == 0
    assert _modified(report) and all(r != ["stale"] for _t, r in _modified(report).values())
    cl = first.changelog(conn, 1, 2)
    assert first.changelogs == 0  # it came with the re-triage

    # another process (a new cache over the same directory): read back, nothing re-triaged
    second = DiffCache(disk=DiskAnswers(disk))
    again = second.report(conn, 1, 2)
    assert second.retriaged == 0 and second.disk_hits == 1
    assert _modified(again) == _modified(report)
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)
    assert second.changelog(conn, 1, 2) == cl
    assert second.changelogs == 0

    # without the disk, each process re-triages (what the kept answer saves)
    third = DiffCache(disk=DiskAnswers(None))
    assert _modified(third.report(conn, 1, 2)) == _modified(report)
    assert third.retriaged == 1


def test_a_stored_reports_changelog_is_built_once_across_processes(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    disk = tmp_path / "answers"
    conn = open_ro(db)
    first = DiffCache(disk=DiskAnswers(disk))
    assert first.report(conn, 1, 2)["stored"] is True
    cl = first.changelog(conn, 1, 2)
    assert first.changelogs == 1 and first.retriaged == 0
    second = DiffCache(disk=DiskAnswers(disk))
    assert second.changelog(conn, 1, 2) == cl
    assert second.changelogs == 0 and second.disk_hits == 2  # its report and changelog, kept


def test_a_rename_is_not_served_from_an_older_answer(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    _make_stale(db)
    disk = tmp_path / "answers"
    conn = open_ro(db)
    before = DiffCache(disk=DiskAnswers(disk)).report(conn, 1, 2)
    change = next(c for c in before["changes"] if c["classification"] == "modified")
    assert main(["--db", str(db), "set-name", change["to_stable_id"], "patched_fn"]) == 0
    conn = open_ro(db)
    after = DiffCache(disk=DiskAnswers(disk))
    report = after.report(conn, 1, 2)
    assert after.disk_hits == 0 and after.retriaged == 1
    named = next(c for c in report["changes"] if c["to_index"] == change["to_index"])
    assert named["name"] == "patched_fn"


def test_a_long_lived_surface_answers_at_once_and_retriages_in_the_background(
    tmp_path: Path,
) -> None:
    db = _kb(tmp_path)
    _make_stale(db)
    conn = open_ro(db)
    cache = DiffCache(disk=DiskAnswers(tmp_path / "answers"), background=True)
    first = cache.report(conn, 1, 2)
    # the stored answer as saved (older rules), flagged; the re-triage runs in a thread
    assert first["triage_pending"] is True
    assert all(r == ["stale"] for _t, r in _modified(first).values())
    cl = cache.changelog(conn, 1, 2)  # waits for that thread: the same work
    assert cl["modified"]
    fresh = cache.report(conn, 1, 2)
    assert "triage_pending" not in fresh
    assert all(r != ["stale"] for _t, r in _modified(fresh).values())
    assert cache.retriaged == 1  # once, in the background
    # a new process finds it on disk and answers with today's triage at once
    other = DiffCache(disk=DiskAnswers(tmp_path / "answers"), background=True)
    assert _modified(other.report(conn, 1, 2)) == _modified(fresh)
    assert other.retriaged == 0


def test_a_one_shot_cache_retriages_at_once(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    _make_stale(db)
    cache = DiffCache(disk=DiskAnswers(None), background=False)
    report = cache.report(open_ro(db), 1, 2)
    assert "triage_pending" not in report and cache.retriaged == 1
