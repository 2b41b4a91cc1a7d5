"""KB files: creation, read-only by construction, non-KB files, missing files, schema versions."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tomllib

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBMissingError, NotAKBError, SchemaVersionError, UnknownVersionError
from kbtool.kb.schema import SCHEMA_VERSION
from testkit.kb import bare_kb
from tests.support.paths import ROOT


def test_fresh_kb_has_schema(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_read_only_connection_cannot_write(tmp_path):
    path = tmp_path / "kb.db"
    bare_kb(path, ["s1"]).close()
    before = path.read_bytes()
    conn = open_ro(path)
    assert conn.execute("PRAGMA query_only").fetchone()[0] == 1
    for sql in (
        "INSERT INTO meta VALUES ('x','y')",
        "DELETE FROM functions",
        "DROP TABLE symbols",
        "UPDATE versions SET label='z'",
        "PRAGMA query_only=OFF; DELETE FROM functions",
    ):
        with pytest.raises(sqlite3.Error):
            conn.executescript(sql) if ";" in sql else conn.execute(sql)
    # even with query_only switched off, the mode=ro URI refuses writes
    conn.execute("PRAGMA query_only = OFF")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM functions")
    conn.close()
    assert path.read_bytes() == before


def test_missing_kb(tmp_path):
    with pytest.raises(KBMissingError, match="kbtool ingest"):
        open_ro(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_not_a_kb(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not sqlite" * 100)
    with pytest.raises(NotAKBError):
        open_ro(text)
    with pytest.raises(NotAKBError):
        open_rw(text)
    assert text.read_text().startswith("hello")
    other = tmp_path / "other.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE people (name TEXT)")
    c.commit()
    c.close()
    with pytest.raises(NotAKBError):
        open_rw(other)
    with pytest.raises(NotAKBError):
        open_ro(other)


def test_newer_schema_refused(tmp_path):
    path = tmp_path / "kb.db"
    open_rw(path).execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    with pytest.raises(SchemaVersionError, match="newer"):
        open_ro(path)
    with pytest.raises(SchemaVersionError):
        open_rw(path)


def test_unknown_version_message_names_known_ids(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", ["s1"])
    with pytest.raises(UnknownVersionError, match="known version ids: 1"):
        queries.coverage(conn, 42)


def test_core_does_not_import_front_ends():
    code = (
        "import sys, kbtool.kb.queries, kbtool.kb.gate, kbtool.services.ingest, kbtool.wasm, kbtool.services.diff.report, kbtool.services.diff.carry, kbtool.services.oracle\n"
        "bad = [m for m in ('textual', 'starlette', 'uvicorn', 'mcp', 'typer') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_linter_contract():
    """The layering contract in pyproject.toml holds (import-linter)."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter not installed")

    root = ROOT
    out = subprocess.run([exe], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

    names = [
        c["name"]
        for c in tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"][
            "contracts"
        ]
    ]
    assert any(c.startswith("layers") for c in names)
    for name in names:  # every contract is checked and kept, whatever their number
        assert f"{name} KEPT" in out.stdout, name
    assert " 0 broken" in out.stdout
