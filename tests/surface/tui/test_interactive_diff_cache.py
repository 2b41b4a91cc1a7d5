"""A computed diff is computed once, not once per process: the next process reads it from disk
(issue 30), and a gate write, another KB at the same path or a corrupt file never serve a stale answer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DiffCache, DiskAnswers, _modules, disk_dir
from kbtool.services.diff.report import compute_diff
from tests.support.diff_kb import two_versions_kb

_build = two_versions_kb  # (tmp_path, name, k0): the two-version KB of the diff-cache tests


def _fresh(disk: Path) -> DiffCache:
    """What a new process starts with: an empty memory, the same disk."""
    return DiffCache(disk=DiskAnswers(disk))


def test_a_new_process_reads_the_computed_pair_from_disk(tmp_path: Path) -> None:
    kb, disk = _build(tmp_path), tmp_path / "diffs"
    conn = open_ro(kb)
    assert all(len(d or "") == 64 for d in _modules(conn, 2, 1))  # both modules' SHA-256 in the key
    first = _fresh(disk)
    report = first.report(conn, 2, 1)  # not stored: the matcher runs
    assert first.computed == 1 and first.disk_hits == 0
    assert len(list(disk.glob("*.json"))) == 4  # report, changelog, annotations, entry state
    second = _fresh(disk)
    again = second.report(conn, 2, 1)
    assert second.computed == 0 and second.disk_hits == 1
    assert again == json.loads(json.dumps(compute_diff(conn, 2, 1)))  # what computing gives
    assert again == json.loads(json.dumps(report))
    assert second.changelog(conn, 2, 1) == json.loads(json.dumps(first.changelog(conn, 2, 1)))
    assert second.computed == 0
    conn.close()


def test_a_rename_is_never_served_stale_from_disk(tmp_path: Path) -> None:
    kb, disk = _build(tmp_path), tmp_path / "diffs"
    conn = open_ro(kb)
    _fresh(disk).report(conn, 2, 1)
    w = open_rw(kb)
    sid = queries.list_functions(w, 1)[0]["stable_id"]
    upsert_symbol(w, sid, "renamed_after_the_diff", provenance="human", confidence=1.0, actor="t")
    w.close()
    later = _fresh(disk)
    report = later.report(conn, 2, 1)
    assert later.computed + later.relabelled == 1 and later.disk_hits == 0
    assert "renamed_after_the_diff" in {c["name"] for c in report["changes"]}
    conn.close()


def test_another_kb_at_the_same_path_is_another_answer(tmp_path: Path) -> None:
    disk = tmp_path / "diffs"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    kb = _build(tmp_path / "a")
    conn = open_ro(kb)
    _fresh(disk).report(conn, 2, 1)
    conn.close()
    other = _build(tmp_path / "b", k0=40)  # other modules, same version ids and token
    for suffix in ("", "-wal", "-shm"):
        Path(str(kb) + suffix).unlink(missing_ok=True)
    shutil.copy(other, kb)
    conn = open_ro(kb)
    fresh = _fresh(disk)
    fresh.report(conn, 2, 1)
    assert fresh.computed == 1 and fresh.disk_hits == 0
    conn.close()


def test_a_corrupt_file_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    kb, disk = _build(tmp_path), tmp_path / "diffs"
    conn = open_ro(kb)
    good = _fresh(disk).report(conn, 2, 1)
    for f in disk.glob("*.json"):
        f.write_text("{not json")
    again = _fresh(disk)
    assert again.report(conn, 2, 1) == json.loads(json.dumps(good))
    assert again.computed == 1
    assert all(json.loads(f.read_text()) for f in disk.glob("*.json"))
    conn.close()


def test_disk_dir_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", "off")
    assert disk_dir() is None
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", str(tmp_path / "x"))
    assert disk_dir() == tmp_path / "x"
    monkeypatch.delenv("KBTOOL_DIFF_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_dir() == tmp_path / "xdg" / "kbtool" / "diffs"


def test_off_keeps_nothing(tmp_path: Path) -> None:
    kb = _build(tmp_path)
    conn = open_ro(kb)
    cache = DiffCache(disk=DiskAnswers(None))
    cache.report(conn, 2, 1)
    assert cache.computed == 1 and not (tmp_path / "diffs").exists()
    conn.close()


def test_two_real_processes_compute_once(tmp_path: Path) -> None:
    """`kbtool serve`'s cache in two interpreters: the second reads what the first computed."""
    kb, disk = _build(tmp_path), tmp_path / "diffs"
    code = (
        "import sys, json\n"
        "from kbtool.kb.db import open_ro\n"
        "from kbtool.services.diff.cache import DIFF_CACHE\n"
        "r = DIFF_CACHE.report(open_ro(sys.argv[1]), 2, 1)\n"
        "print(json.dumps([DIFF_CACHE.computed, DIFF_CACHE.disk_hits, r['summary']]))\n"
    )
    env = {"KBTOOL_DIFF_CACHE_DIR": str(disk), "PATH": "/usr/bin:/bin"}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code, str(kb)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(2)
    ]
    assert [r[:2] for r in runs] == [[1, 0], [0, 1]]
    assert runs[0][2] == runs[1][2]
