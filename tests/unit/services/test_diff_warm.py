"""Diffs prepared ahead (issue 30, point 3): a pair nobody stored is computed in the
background after ``analyze`` and kept on disk; the answer a person then gets is exactly the
full computation's, also after a rename (the annotations are joined in when read). Real KBs (the demo's
two zstd releases, sql.js 1.10.3 / 1.12.0), real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.analyze import analyze_version
from kbtool.services.diff.cache import DiffCache, _annotation_state
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.report import compute_diff_with_pairing, stored_diff
from kbtool.services.diff.warm import (
    describe_status,
    pairs_to_prepare,
    prepare_pairs,
    read_status,
    status_path,
)
from kbtool.services.ingest import ingest_file
from tests.support.cli import run_cli
from tests.support.diff_kb import make_stale_report
from tests.support.paths import CORPUS


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))  # what a file gives back (tuples become lists)


def _full(conn, a: int, b: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full computation of the pair (no cache): its report and changelog (a stored
    report as read, with the changelog built from the facts)."""
    report = stored_diff(conn, a, b)
    if report is not None:
        return _plain(report), _plain(changelog(conn, report))
    keep: dict[str, Any] = {}
    report, _pairing = compute_diff_with_pairing(conn, a, b, keep=keep)
    return _plain(report), _plain(keep["changelog"])


def _check_prepared_equals_full(db: Path) -> list[tuple[int, int]]:
    conn = open_ro(db)
    try:
        pairs = pairs_to_prepare(conn)
        assert pairs, "a KB of two releases has an unstored reverse pair"
        done = prepare_pairs(conn, pairs)
        assert done["prepared"] == len(pairs)
        assert pairs_to_prepare(conn) == []  # all kept now
        for a, b in pairs:
            cache = DiffCache()  # a new process's cache: only the disk knows the pair
            report, cl = cache.report(conn, a, b), cache.changelog(conn, a, b)
            assert (cache.computed, cache.changelogs, cache.retriaged) == (0, 0, 0)
            assert cache.disk_hits >= 1
            assert (report, cl) == _full(conn, a, b)
    finally:
        conn.close()
    return pairs


def test_a_prepared_pair_is_the_full_computation(demo_kb: Path, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    # the reverse of the ingest pair, then the ingest pair's changelog
    assert _check_prepared_equals_full(demo_kb) == [(2, 1), (1, 2)]


def test_a_report_stored_under_older_triage_rules_is_retriaged_ahead(
    demo_kb: Path, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    make_stale_report(demo_kb)
    assert _check_prepared_equals_full(demo_kb) == [(2, 1), (1, 2)]
    conn = open_ro(demo_kb)
    report = DiffCache().report(conn, 1, 2)  # read back: today's triage, not the stale one
    conn.close()
    assert all(c.get("reasons") != ["stale"] for c in report["changes"])


def test_a_rename_keeps_the_computed_pair_and_shows_the_new_name(
    demo_kb: Path, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    conn = open_rw(demo_kb)
    try:
        prepare_pairs(conn, pairs_to_prepare(conn))
        assert pairs_to_prepare(conn) == []
        sid = queries.list_functions(conn, 1)[0]["stable_id"]
        d = upsert_symbol(conn, sid, "warm_check", provenance="human", confidence=1.0, actor="t")
        assert d["written"]
        # both pairs are kept by content: the rename is joined in when read
        assert pairs_to_prepare(conn) == []
        cache = DiffCache()
        report = cache.report(conn, 2, 1)
        assert cache.computed == 0 and cache.disk_hits == 1
        assert "warm_check" in json.dumps(report)
        assert _plain(report) == _full(conn, 2, 1)[0]
        cl = cache.changelog(conn, 1, 2)  # the stored pair's changelog, read back as well
        assert (cache.computed, cache.changelogs, cache.relabelled) == (0, 0, 0)
        assert _plain(cl) == _full(conn, 1, 2)[1]
    finally:
        conn.close()


def test_analyze_prepares_the_pair_in_the_background(demo_kb: Path, tmp_path, monkeypatch) -> None:
    disk = tmp_path / "diffs"
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(disk))
    monkeypatch.setenv("KBTOOL_DIFF_WARM", "on")  # tests turn it off by default
    conn = open_rw(demo_kb)
    try:
        res = analyze_version(conn, 2, prepare_diffs=True)
    finally:
        conn.close()
    started = res["diffs_preparing"]
    assert started["pairs"] == [[2, 1], [1, 2]] and started["pid"]
    os.waitpid(started["pid"], 0)  # our child: the detached preparation
    status = read_status(str(demo_kb))
    assert status is not None and status["state"] == "done" and status["done"] == 2
    assert "done: 2 of 2 (2 -> 1, 1 -> 2)" in describe_status(status)
    # a new process answers from the kept file, the same as a full computation
    env = {"KBTOOL_DB": str(demo_kb), "KBTOOL_DIFF_CACHE_DIR": str(disk)}
    names = {p.name: (p.stat().st_ino, p.read_bytes()) for p in disk.glob("*.json")}
    for a, b in (("2", "1"), ("1", "2")):
        kept = run_cli("diff", a, b, "--json", env=env)
        fresh = run_cli("diff", a, b, "--json", env=dict(env, KBTOOL_DIFF_CACHE_DIR="off"))
        assert kept.returncode == 0, kept.stderr
        assert kept.stdout == fresh.stdout
    assert {
        p.name: (p.stat().st_ino, p.read_bytes()) for p in disk.glob("*.json")
    } == names  # only read (a rewrite is a new file: os.replace)
    # nothing left to prepare: a second analyze starts no process
    conn = open_rw(demo_kb)
    try:
        assert pairs_to_prepare(conn) == []
    finally:
        conn.close()


def test_warm_off_starts_nothing(demo_kb: Path, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    monkeypatch.setenv("KBTOOL_DIFF_WARM", "off")
    conn = open_rw(demo_kb)
    try:
        res = analyze_version(conn, 2, prepare_diffs=True)
    finally:
        conn.close()
    assert res["diffs_preparing"]["pid"] is None
    assert not (tmp_path / "diffs").exists()


@pytest.mark.slow
def test_sqljs_prepared_pairs_equal_the_full_computation(tmp_path, monkeypatch) -> None:
    wasm = [CORPUS / "release" / f"sql.js-{v}.sql-wasm.wasm" for v in ("1.10.3", "1.12.0")]
    if not all(p.exists() for p in wasm):
        pytest.skip("sql.js corpus modules not present")
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    db = tmp_path / "sqljs.db"
    conn = open_rw(db)
    try:
        for path in wasm:
            ingest_file(conn, path, label=path.stem, glue_path=path.with_suffix(".js"))
    finally:
        conn.close()
    assert _check_prepared_equals_full(db) == [(2, 1), (1, 2)]


def test_a_request_waits_for_the_background_run_computing_its_pair(
    demo_kb: Path, tmp_path, monkeypatch
) -> None:
    """The pair the background run is computing is not computed a second time beside it:
    the request waits, then reads the kept answer."""
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        status = status_path(str(demo_kb))
        assert status is not None
        status.parent.mkdir(parents=True)
        running = {"state": "running", "pid": busy.pid, "pairs": [[2, 1]], "done": 0}
        status.write_text(json.dumps(running | {"current": [2, 1], "seconds": 0.0}))
        asker, got = DiffCache(), {}

        def ask() -> None:
            conn = open_ro(demo_kb)
            got["report"] = asker.report(conn, 2, 1)
            conn.close()

        waiting = threading.Thread(target=ask)
        waiting.start()
        conn = open_ro(demo_kb)
        try:
            # meanwhile "the background run" computes the pair in full (as long as the
            # request would need to compute it) and keeps it
            report, cl = _full(conn, 2, 1)
            assert waiting.is_alive()  # still waiting: it did not compute the pair beside us
            key = asker._key(conn, 2, 1, "report")
            modules = tuple(queries.version_info(conn, v)["sha256"] for v in (2, 1))
            asker.disk.put(key[:6], modules, report)
            asker.disk.put(key[:3] + ("changelog",) + key[4:6], modules, cl)
            meta = {"snapshot": _annotation_state(conn, 2, 1)[0], "touched": {"old": [], "new": []}}
            asker.disk.put(key[:3] + ("meta",) + key[4:6], modules, meta)
            status.write_text(json.dumps(running | {"state": "done", "done": 1, "current": None}))
            waiting.join()
        finally:
            conn.close()
        assert (asker.computed, asker.disk_hits) == (0, 1)
        assert _plain(got["report"]) == report
    finally:
        busy.kill()
        busy.wait()


def test_kbtool_analyze_says_which_diffs_it_prepares(demo_kb: Path, tmp_path, monkeypatch) -> None:
    disk = tmp_path / "diffs"
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(disk))  # where this test reads the status
    env = {"KBTOOL_DB": str(demo_kb), "KBTOOL_DIFF_CACHE_DIR": str(disk), "KBTOOL_DIFF_WARM": "on"}
    res = run_cli("analyze", "2", env=env)
    assert res.returncode == 0, res.stderr
    assert "diffs: preparing 2 -> 1, 1 -> 2 in the background" in res.stdout
    status = _finished(demo_kb)
    assert status is not None and status["state"] == "done" and status["done"] == 2
    # the answers are kept: the pair is read back, not computed
    conn = open_ro(demo_kb)
    try:
        assert pairs_to_prepare(conn) == []
    finally:
        conn.close()


def _finished(db: Path) -> dict[str, Any] | None:
    """The background run's last status once it stopped running (it is not this test's
    child: its status file is read)."""
    status = None
    for _ in range(3000):
        status = read_status(str(db))
        if status and status["state"] != "running":
            break
        time.sleep(0.1)
    return status


def test_a_run_that_died_reads_as_stopped_and_is_not_waited_for(
    demo_kb: Path, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid now names no process
    st = {"state": "running", "pid": gone.pid, "pairs": [[2, 1]], "done": 0, "current": [2, 1]}
    status = status_path(str(demo_kb))
    assert status is not None
    status.parent.mkdir(parents=True)
    status.write_text(json.dumps(st))
    assert describe_status(read_status(str(demo_kb))) == (
        "diff preparation stopped: 0 of 1 done (2 -> 1)"
    )
    conn = open_ro(demo_kb)
    try:
        cache = DiffCache()
        cache.report(conn, 2, 1)  # computed at once: nobody is preparing it
        assert cache.computed == 1
    finally:
        conn.close()
