"""``kbtool migrate``: an older KB file migrates in one go, a current one is left alone, a
foreign or newer file is refused untouched; reads name the command that migrates."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from kbtool.cli import main
from kbtool.kb import schema
from kbtool.kb.db import open_rw
from tests.support.paths import ROOT

SID = "00000000000000aa"


def old_kb(path, version: int = 3) -> None:
    """A KB as an older kbtool wrote it: only migrations 1..version ran, with content."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("BEGIN")
    for n in range(1, version + 1):
        schema.MIGRATIONS[n](raw)
    raw.execute(
        "INSERT INTO meta(key, value) VALUES ('kind', ?), ('schema_version', ?)",
        (schema.KB_KIND, str(version)),
    )
    raw.execute(
        "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
        " exported_functions, ingested_at) VALUES ('rel-1.0', 'x', 0, 0, 1, 0, 't')"
    )
    raw.execute(
        "INSERT INTO functions (version_id, idx, stable_id, imported, type_sig)"
        " VALUES (1, 0, ?, 0, '() -> ()')",
        (SID,),
    )
    raw.execute("COMMIT")
    raw.close()


def kbtool(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_an_old_kb_is_refused_by_reads_then_migrated_by_the_named_command(tmp_path):
    db = tmp_path / "old kb.db"
    old_kb(db)
    read = kbtool("versions", "--db", str(db))
    assert read.returncode == 1
    err = read.stderr.strip()
    assert "schema 3" in err and f"kbtool migrate --db '{db}'" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1

    done = kbtool("migrate", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert f"from KB schema 3 to {schema.SCHEMA_VERSION}" in done.stdout
    conn = sqlite3.connect(db)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION
    assert set(schema.TABLES) <= {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    conn.close()
    listed = kbtool("versions", "--db", str(db))
    assert listed.returncode == 0 and "rel-1.0" in listed.stdout  # the content came along


def test_a_current_kb_is_a_no_op_byte_for_byte(tmp_path, capsys):
    db = tmp_path / "kb.db"
    old_kb(db, version=5)
    assert main(["migrate", "--db", str(db)]) == 0
    assert "from KB schema 5 to" in capsys.readouterr().out
    open_rw(db).close()  # checkpointed: the file alone holds the KB
    before = db.read_bytes()
    assert main(["migrate", "--db", str(db)]) == 0
    assert "nothing to migrate" in capsys.readouterr().out
    assert db.read_bytes() == before


def test_foreign_newer_and_missing_files_are_refused_untouched(tmp_path, capsys):
    foreign = tmp_path / "other.db"
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE t (x)")
    c.commit()
    c.close()
    newer = tmp_path / "newer.db"
    open_rw(newer).close()
    c = sqlite3.connect(newer)
    c.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    c.commit()
    c.close()
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    for path, words in (
        (foreign, "not a kbtool KB"),
        (newer, "newer than this kbtool"),
        (text, "not a kbtool KB"),
    ):
        before = path.read_bytes()
        assert main(["migrate", "--db", str(path)]) == 1
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
        assert path.read_bytes() == before
        assert not os.path.exists(f"{path}-wal")
    missing = tmp_path / "nope.db"
    assert main(["migrate", "--db", str(missing)]) == 1
    assert "no KB at" in capsys.readouterr().err
    assert not missing.exists()


def test_a_failing_step_leaves_the_old_kb_as_it_was(tmp_path, monkeypatch, capsys):
    db = tmp_path / "old.db"
    old_kb(db, version=6)

    def broken(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(schema.MIGRATIONS, 8, broken)
    assert main(["migrate", "--db", str(db)]) == 1
    assert "Traceback" not in capsys.readouterr().err
    conn = sqlite3.connect(db)
    assert schema.read_schema_version(conn) == 6
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in names and "agent_answers" not in names  # step 7 rolled back too
    conn.close()


def test_demo_on_an_older_demo_kb_migrates_it_and_opens_it(tmp_path):
    """`kbtool demo` run again after an upgrade (the README's first command, twice): the demo
    KB an older kbtool built is migrated and opened, not refused as "not the demo KB"; an
    older KB that is not the demo is refused untouched."""
    from kbtool.services.demo import RELEASES

    db = tmp_path / "kbtool.db"
    old_kb(db, version=schema.SCHEMA_VERSION - 1)
    raw = sqlite3.connect(db, isolation_level=None)
    for i, (_, label) in enumerate(RELEASES):
        raw.execute(
            "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
            " exported_functions, ingested_at) VALUES (?, ?, 0, 0, 0, 0, 't')",
            (label, f"demo{i}"),
        )
    raw.close()
    out = kbtool("demo", "--db", str(db))
    assert out.returncode == 0, out.stderr
    flat = out.stdout.replace("\n", " ")
    assert f"from KB schema {schema.SCHEMA_VERSION - 1} to {schema.SCHEMA_VERSION}" in flat
    assert "already holds the demo KB" in flat
    assert schema.read_schema_version(sqlite3.connect(db)) == schema.SCHEMA_VERSION

    other = tmp_path / "other.db"
    old_kb(other, version=schema.SCHEMA_VERSION - 1)
    before = other.read_bytes()
    refused = kbtool("demo", "--db", str(other))
    assert refused.returncode == 1 and "not the demo KB" in refused.stderr.replace("\n", " ")
    assert other.read_bytes() == before
    assert schema.read_schema_version(sqlite3.connect(other)) == schema.SCHEMA_VERSION - 1
