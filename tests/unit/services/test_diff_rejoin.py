"""Issue 30 point 3: a kept diff answer survives annotation writes (the annotations are joined
in when read, byte-identical to a fresh computation), `kbtool ingest` starts the background
preparation, and one KB's answers never evict another's. Real KBs (wat2wasm + the real
ingest), real subprocesses."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DiffCache, DiskAnswers
from kbtool.services.diff.report import compute_diff_with_pairing
from kbtool.services.diff.warm import read_status
from tests.support.cli import run_cli
from tests.support.diff_kb import WAT, two_versions_kb

#: a module with a helper that no changed function calls (renaming it touches no changelog)
EXTRA = WAT.replace(
    '(func $other (export "other")',
    '(func $quiet (export "quiet") (param i32) (result i32) local.get 0)\n'
    '  (func $other (export "other")',
)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _fresh(conn, a: int, b: int) -> tuple[Any, Any]:
    keep: dict[str, Any] = {}
    report, _pg = compute_diff_with_pairing(conn, a, b, keep=keep)
    return _plain(report), _plain(keep["changelog"])


def _kb(tmp_path: Path) -> Path:
    db = two_versions_kb(tmp_path)
    return db


def _sid(conn, version: int, export: str) -> str:
    for f in queries.list_functions(conn, version):
        if f["name"] == export:
            return f["stable_id"]
    raise AssertionError(f"no function {export}")


def _name(db: Path, sid: str, name: str) -> None:
    rw = open_rw(db)
    try:
        assert upsert_symbol(rw, sid, name, provenance="human", confidence=1.0, actor="t")[
            "written"
        ]
    finally:
        rw.close()


def test_a_rename_nobody_reads_is_joined_in_without_computing(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    conn = open_ro(db)
    try:
        DiffCache(disk=disk).report(conn, 2, 1)
        # the report lists every function; the changelog reads only changed ones and their
        # neighbours: rename one it did not read
        meta = next(
            json.loads(p.read_text())
            for p in (tmp_path / "diffs").glob("*.json")
            if "touched" in p.read_text()
        )
        rows = queries.list_functions(conn, 1)
        quiet = [
            f for f in rows if f["index"] not in meta["touched"]["new"] and not f.get("imported")
        ]
        if not quiet:
            pytest.skip("every function of the module is read by the changelog")
        _name(db, quiet[0]["stable_id"], "joined_at_read_time")
        later = DiffCache(disk=disk)  # a new process: only the disk knows the pair
        report, cl = later.report(conn, 2, 1), later.changelog(conn, 2, 1)
        assert (later.computed, later.disk_hits) == (0, 1)
        assert "joined_at_read_time" in {c["name"] for c in report["changes"]}
        assert (_plain(report), _plain(cl)) == _fresh(conn, 2, 1)
    finally:
        conn.close()


def test_a_rename_the_changelog_reads_rebuilds_it_over_the_kept_pairing(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    conn = open_ro(db)
    try:
        DiffCache(disk=disk).changelog(conn, 2, 1)
        _name(db, _sid(conn, 1, "get_field"), "field_reader")  # a modified function
        later = DiffCache(disk=disk)
        report, cl = later.report(conn, 2, 1), later.changelog(conn, 2, 1)
        # the changelog and triage are built again over the kept pairing (no matcher)
        assert (later.computed, later.relabelled, later.disk_hits) == (0, 1, 0)
        assert "field_reader" in json.dumps(cl)
        assert (_plain(report), _plain(cl)) == _fresh(conn, 2, 1)
        again = DiffCache(disk=disk)  # kept again under the new annotations
        assert _plain(again.report(conn, 2, 1)) == _plain(report) and again.computed == 0
    finally:
        conn.close()


def test_the_cli_after_a_rename_prints_what_a_fresh_computation_prints(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), tmp_path / "diffs"
    env = {"KBTOOL_DB": str(db), "KBTOOL_DIFF_CACHE_DIR": str(disk)}
    first = run_cli("diff", "2", "1", "--json", env=env)
    assert first.returncode == 0, first.stderr
    conn = open_ro(db)
    sids = [f["stable_id"] for f in queries.list_functions(conn, 1)]
    conn.close()
    for k, sid in enumerate(sids):  # every function, read by the changelog or not
        _name(db, sid, f"renamed_{k}")
        kept = run_cli("diff", "2", "1", "--json", env=env)
        fresh = run_cli("diff", "2", "1", "--json", env=dict(env, KBTOOL_DIFF_CACHE_DIR="off"))
        assert kept.returncode == 0, kept.stderr
        assert kept.stdout == fresh.stdout and f"renamed_{k}" in kept.stdout


def test_one_kbs_answers_never_evict_anothers(tmp_path: Path) -> None:
    disk = DiskAnswers(tmp_path / "diffs", max_files=3)
    modules = ("a" * 64, "b" * 64)
    for k in range(5):  # KB one: more answers than the cap
        disk.put((("/kb/one.db", (1, 1)), k, k + 1, "report", "c", None), modules, {"k": k})
    disk.put((("/kb/two.db", (1, 2)), 1, 2, "report", "c", None), modules, {"two": 1})
    for k in range(5):  # KB one again: KB two's single answer stays
        disk.put((("/kb/one.db", (1, 1)), k + 9, k, "report", "c", None), modules, {"k": k})
        time.sleep(0.01)
    assert disk.get((("/kb/two.db", (1, 2)), 1, 2, "report", "c", None), modules) == {"two": 1}
    assert len(list((tmp_path / "diffs").glob("*.json"))) == 3 + 1


def test_kbtool_ingest_starts_the_preparation_and_says_so(tmp_path: Path, monkeypatch) -> None:
    disk, db = tmp_path / "diffs", tmp_path / "kb.db"
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(disk))  # where this test reads the status
    env = {"KBTOOL_DB": str(db), "KBTOOL_DIFF_CACHE_DIR": str(disk), "KBTOOL_DIFF_WARM": "on"}
    outs = []
    for label, off, k in (("1.0", 348, 16), ("1.1", 356, 24)):
        src = tmp_path / f"{label}.wat"
        src.write_text(EXTRA.format(off=off, k=k))
        wasm = tmp_path / f"{label}.wasm"
        subprocess.run(["wat2wasm", str(src), "-o", str(wasm)], check=True)
        res = run_cli("ingest", str(wasm), "--label", label, env=env)
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout)
    assert "diffs:" not in outs[0]  # one version: no pair
    assert "diffs: preparing 2 -> 1, 1 -> 2 in the background" in outs[1]
    status = None
    for _ in range(600):
        status = read_status(str(db))
        if status and status["state"] != "running":
            break
        time.sleep(0.1)
    assert status is not None and status["state"] == "done" and status["done"] == 2
    off = run_cli("ingest", str(tmp_path / "1.0.wasm"), "--label", "again", "--force", env=env)
    assert off.returncode == 0, off.stderr
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk))
        cache.report(conn, 2, 1)
        assert (cache.computed, cache.disk_hits) == (0, 1)  # prepared by the ingest
    finally:
        conn.close()


def test_kbtool_ingest_prepares_nothing_when_turned_off(tmp_path: Path, monkeypatch) -> None:
    disk, db = tmp_path / "diffs", two_versions_kb(tmp_path)
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(disk))
    src = tmp_path / "m.wat"
    src.write_text(EXTRA.format(off=360, k=40))
    subprocess.run(["wat2wasm", str(src), "-o", str(tmp_path / "m3.wasm")], check=True)
    env = {"KBTOOL_DB": str(db), "KBTOOL_DIFF_CACHE_DIR": str(disk), "KBTOOL_DIFF_WARM": "off"}
    res = run_cli("ingest", str(tmp_path / "m3.wasm"), "--label", "1.2", env=env)
    assert res.returncode == 0, res.stderr
    assert "diffs:" not in res.stdout and read_status(str(db)) is None


def test_a_rename_the_changelog_reads_is_prepared_again(tmp_path: Path, monkeypatch) -> None:
    from kbtool.services.diff.warm import pairs_to_prepare, prepare_pairs

    db = _kb(tmp_path)
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "diffs"))
    conn = open_ro(db)
    try:
        prepare_pairs(conn, pairs_to_prepare(conn))
        assert pairs_to_prepare(conn) == []
        _name(db, _sid(conn, 1, "get_field"), "field_reader")  # read by both changelogs
        assert pairs_to_prepare(conn) == [(2, 1), (1, 2)]
        assert prepare_pairs(conn, pairs_to_prepare(conn))["prepared"] == 2
        later = DiffCache()
        report, cl = later.report(conn, 2, 1), later.changelog(conn, 2, 1)
        assert (later.computed, later.relabelled, later.disk_hits) == (0, 0, 1)
        assert (_plain(report), _plain(cl)) == _fresh(conn, 2, 1)
    finally:
        conn.close()


def test_a_stale_stored_report_stays_retriaged_after_a_rename(tmp_path: Path) -> None:
    from kbtool.services.diff.report import stored_diff
    from tests.support.diff_kb import make_stale_report

    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    make_stale_report(db)
    conn = open_ro(db)
    try:
        first = DiffCache(disk=disk)
        first.report(conn, 1, 2)
        assert first.retriaged == 1
        _name(db, _sid(conn, 1, "other"), "renamed_after_retriage")  # unchanged: not read
        later = DiffCache(disk=disk)
        report = later.report(conn, 1, 2)
        assert (later.retriaged, later.changelogs, later.disk_hits) == (0, 0, 1)
        assert "renamed_after_retriage" in {c["name"] for c in report["changes"]}
        assert all(c.get("reasons") != ["stale"] for c in report["changes"])
        assert _plain(report) == _plain(stored_diff(conn, 1, 2))  # the full re-triage
    finally:
        conn.close()
