"""Hardening (issue 11, points 6 and 8): foreign files are refused untouched; read-only KBs and
full disks end in one clear line, exit 1, and leave the KB intact."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro, open_rw, transaction
from kbtool.kb.errors import KBFullError, KBReadOnlyError, NotAKBError
from testkit.kb import bare_kb
from tests.support.paths import DEMO_DIR, ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]
MODULE = DEMO_DIR / "zstd-1.5.6.wasm"
SID = "ad3b6a9464533b98"  # a function of the demo KB's version 1


def kbtool(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    return subprocess.run(
        [*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecars(path: Path) -> list[Path]:
    return [
        p for p in (Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")) if p.exists()
    ]


def assert_one_line_error(res: subprocess.CompletedProcess[str], *words: str) -> None:
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]


# ----------------------------------------------------------------- 6: foreign files


def _foreign_sqlite(path: Path, *, wal: bool = False) -> None:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    assert not sidecars(path)


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
@pytest.mark.parametrize(
    "command",
    [
        ["set-name", SID, "foo"],
        ["ingest", str(MODULE)],
        ["diff", "1", "2", "--save"],
        ["unlock", SID],
    ],
)
def test_foreign_sqlite_file_is_refused_untouched(tmp_path, command, wal):
    f = tmp_path / "f.db"
    _foreign_sqlite(f, wal=wal)
    before = digest(f)
    res = kbtool("--db", f, *command)
    assert_one_line_error(res, "not a kbtool KB")
    assert digest(f) == before
    assert not sidecars(f)


@pytest.mark.parametrize("command", [["versions"], ["search", "x", "--json"], ["export", "1"]])
def test_read_commands_create_nothing_beside_a_foreign_wal_file(tmp_path, command):
    f = tmp_path / "w.db"
    _foreign_sqlite(f, wal=True)
    before = digest(f)
    assert_one_line_error(kbtool("--db", f, *command), "not a kbtool KB")
    assert digest(f) == before
    assert not sidecars(f)


@pytest.mark.parametrize(
    "content",
    [b"hello, not a database\n", b"SQLite format 3\x00" + b"\xff" * 200],
    ids=["text", "bad-header"],
)
def test_non_sqlite_file_is_refused_untouched(tmp_path, content):
    f = tmp_path / "g.db"
    f.write_bytes(content)
    for command in (["set-name", SID, "foo"], ["ingest", str(MODULE)]):
        res = kbtool("--db", f, *command)
        assert_one_line_error(res, "not a kbtool KB")
        assert f.read_bytes() == content
        assert not sidecars(f)


def test_empty_file_is_not_a_kb_for_commands_that_need_one(tmp_path):
    f = tmp_path / "e.db"
    f.touch()
    res = kbtool("--db", f, "set-name", SID, "foo")
    assert_one_line_error(res, "not a kbtool KB", "empty")
    assert f.stat().st_size == 0 and not sidecars(f)
    # a missing KB is not created by a command that needs an existing one
    missing = tmp_path / "missing.db"
    assert_one_line_error(kbtool("--db", missing, "set-name", SID, "foo"), "no KB at")
    assert not missing.exists() and not sidecars(missing)
    # ingest may start a KB in an empty file (an empty file is an empty database)
    res = kbtool("--db", f, "ingest", MODULE)
    assert res.returncode == 0, res.stderr
    assert open_ro(f).execute("SELECT COUNT(*) FROM versions").fetchone()[0] == 1


def test_open_rw_refuses_before_touching(tmp_path):
    f = tmp_path / "f.db"
    _foreign_sqlite(f)
    before = digest(f)
    with pytest.raises(NotAKBError):
        open_rw(f)
    with pytest.raises(NotAKBError):
        open_rw(f, create=False)
    assert digest(f) == before and not sidecars(f)


# ----------------------------------------------------------------- 8: read-only KB


def test_transaction_on_a_read_only_connection_is_one_kb_error(tmp_path):
    """The same code path as a read-only file, without needing one: a ``mode=ro`` connection."""
    path = tmp_path / "kb.db"
    bare_kb(path, ["a" * 16]).close()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    with pytest.raises(KBReadOnlyError, match="read-only"):
        with transaction(conn):
            conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
    assert not conn.in_transaction


def test_transaction_after_sqlite_rolled_back_reports_the_first_error(tmp_path):
    """SQLITE_FULL rolls the transaction back itself; the helper must not fail again on
    "cannot rollback - no transaction is active"."""
    conn = bare_kb(tmp_path / "kb.db", ["a" * 16])
    with pytest.raises(KBFullError, match="disk is full"):
        with transaction(conn):
            conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
            conn.execute("ROLLBACK")  # what SQLite does on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")
    with pytest.raises(ZeroDivisionError):  # other errors pass through, rolled back
        with transaction(conn):
            conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
            conn.execute("ROLLBACK")
            raise ZeroDivisionError
    assert conn.execute("SELECT COUNT(*) FROM meta WHERE key = 'x'").fetchone()[0] == 0


def _run(cmd: list[str]) -> bool:
    return subprocess.run(cmd, capture_output=True).returncode == 0


@pytest.fixture
def read_only_kb(demo_kb: Path, request) -> Iterator[Path]:
    """The demo KB made unwritable in a way that binds root too: the parametrized mechanism."""
    mechanism = request.param
    if mechanism == "immutable-file":
        if os.geteuid() != 0:
            demo_kb.chmod(0o444)
            yield demo_kb
            demo_kb.chmod(0o644)
            return
        if not shutil.which("chattr") or not _run(["chattr", "+i", str(demo_kb)]):
            pytest.skip("chattr +i not available here")
        try:
            yield demo_kb
        finally:
            _run(["chattr", "-i", str(demo_kb)])
        return
    # a read-only file system: a tmpfs holding a copy, remounted read-only
    mnt = demo_kb.parent / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or not _run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)]):
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copy(demo_kb, mnt / "demo.db")
        if not _run(["mount", "-o", "remount,ro", str(mnt)]):
            pytest.skip("cannot remount read-only")
        yield mnt / "demo.db"
    finally:
        if not _run(["umount", str(mnt)]):
            _run(["umount", "-l", str(mnt)])


@pytest.mark.parametrize("read_only_kb", ["immutable-file", "read-only-fs"], indirect=True)
def test_writes_to_a_read_only_kb_fail_with_one_line(read_only_kb):
    kb = read_only_kb
    before = digest(kb)
    for command in (
        ["set-name", SID, "foo"],
        ["ingest", str(MODULE)],
        ["diff", "1", "2", "--save"],
        ["revert", SID],
    ):
        assert_one_line_error(kbtool("--db", kb, *command), "read-only")
        assert digest(kb) == before
    # reading still works
    res = kbtool("--db", kb, "versions", "--json")
    assert res.returncode == 0, res.stderr
    assert '"zstd-1.5.6"' in res.stdout


# ----------------------------------------------------------------- 8: full disk


@pytest.fixture
def small_fs(tmp_path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or not _run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]):
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        if not _run(["umount", str(mnt)]):
            _run(["umount", "-l", str(mnt)])


def test_ingest_on_a_full_disk_fails_with_one_line_and_keeps_the_kb(small_fs):
    kb = small_fs / "kb.db"
    bare_kb(kb, ["a" * 16, "b" * 16]).close()
    assert MODULE.stat().st_size > 1024 * 1024 // 4  # its facts need more than the 1 MB left
    res = kbtool("--db", kb, "ingest", MODULE)
    assert_one_line_error(res, "disk is full")
    conn = open_ro(kb)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [r[0] for r in conn.execute("SELECT label FROM versions")] == ["v1"]
        assert conn.execute("SELECT COUNT(*) FROM functions").fetchone()[0] == 2
    finally:
        conn.close()  # an open file keeps the tmpfs busy


def test_kb_of_a_newer_kbtool_is_refused_untouched(tmp_path):
    path = tmp_path / "new.db"
    conn = bare_kb(path, ["a" * 16])
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    assert not sidecars(path)
    before = digest(path)
    for command in (["set-name", "a" * 16, "foo"], ["versions"]):
        assert_one_line_error(kbtool("--db", path, *command), "newer than this kbtool")
        assert digest(path) == before and not sidecars(path)
