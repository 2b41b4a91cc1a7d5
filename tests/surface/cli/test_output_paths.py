"""Output files (`export -o`, `export --wasm`, `code --all -o`): never the KB, never a
database without --force, written atomically through an unpredictable temporary that is
never followed and never left behind (error, full disk, SIGTERM)."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbtool.services.outfile import OutputRefused, atomic_output, check_output_path, write_atomic
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]
TIMEOUT = 300


def kbtool(*args: str, cwd: Path, limit: int | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; ``limit``: RLIMIT_FSIZE in bytes (SIGXFSZ ignored: writes fail EFBIG),
    a disk that is full past that size."""

    def fsize() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    # no bytecode writes under the limit: a truncated .pyc would break later imports
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        CLI + list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        preexec_fn=fsize if limit is not None else None,
    )


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def kb_is_intact(db: Path, before: str) -> None:
    assert digest(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from versions").fetchone()[0] == 2
    conn.close()


@pytest.fixture
def kb(demo_kb: Path) -> Path:
    return demo_kb


@pytest.fixture
def outdir(tmp_path: Path) -> Path:
    """An empty directory for outputs (the KB fixture lives in ``tmp_path``)."""
    d = tmp_path / "out"
    d.mkdir()
    return d


WRITERS = [
    ("export", "1", "-o"),
    ("export", "1", "--wasm"),
    ("code", "1", "--all", "-o"),
]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: " ".join(w))
@pytest.mark.parametrize("how", ["same", "relative", "symlink", "hardlink", "-wal", "-shm"])
def test_the_kb_is_never_an_output(kb: Path, writer, how):
    before = digest(kb)
    d = kb.parent
    if how == "same":
        target = str(kb)
    elif how == "relative":
        target = kb.name
    elif how == "symlink":
        (d / "link.db").symlink_to(kb)
        target = "link.db"
    elif how == "hardlink":
        os.link(kb, d / "hard.db")
        target = "hard.db"
    else:
        side = kb.with_name(kb.name + how)
        if not side.exists():
            side.write_bytes(b"")
        target = str(side)
    r = kbtool("--db", str(kb), *writer, target, cwd=d)
    assert "refusing to write" in one_line_error(r)
    kb_is_intact(kb, before)
    r = kbtool("--db", str(kb), *writer, target, "--force", cwd=d)  # --force never allows it
    assert "refusing to write" in one_line_error(r)
    kb_is_intact(kb, before)


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: " ".join(w))
def test_another_database_needs_force(kb: Path, tmp_path: Path, writer):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("create table t(x)")
    conn.commit()
    conn.close()
    before = digest(other)
    r = kbtool("--db", str(kb), *writer, str(other), cwd=tmp_path)
    assert "SQLite database" in one_line_error(r) and "--force" in r.stderr
    assert digest(other) == before
    r = kbtool("--db", str(kb), *writer, str(other), "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert other.read_bytes()[:16] != b"SQLite format 3\x00"


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: " ".join(w))
def test_full_disk_keeps_the_old_file(kb: Path, outdir: Path, writer):
    """A write that fails half-way (the file size limit stands in for a full disk) leaves the
    old file as it was and no temporary."""
    out = outdir / "out.file"
    out.write_text("the old content\n")
    r = kbtool("--db", str(kb), *writer, str(out), cwd=outdir, limit=32 * 1024)
    assert "cannot write" in one_line_error(r)
    assert out.read_text() == "the old content\n"
    assert sorted(p.name for p in outdir.iterdir()) == ["out.file"]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: " ".join(w))
def test_planted_temporary_links_are_not_followed(kb: Path, outdir: Path, writer):
    """Symbolic links planted where a predictable temporary would be are never written
    through; the output is complete."""
    victim = outdir / "victim"
    victim.write_text("precious\n")
    for name in (
        ".out.file.kbtool-tmp",
        ".out.file.tmp",
        "out.file.tmp",
        ".out.file.kbtool-1-a.tmp",
    ):
        (outdir / name).symlink_to(victim)
    r = kbtool("--db", str(kb), *writer, "out.file", cwd=outdir)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n"
    assert (outdir / "out.file").stat().st_size > 1000
    assert not (outdir / "out.file").is_symlink()


def test_writes_replace_and_keep_the_mode(kb: Path, outdir: Path):
    out = outdir / "names.tsv"
    out.write_text("old\n")
    out.chmod(0o640)
    r = kbtool("--db", str(kb), "export", "1", "-o", str(out), cwd=outdir)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("# kbtool KB export")
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in outdir.iterdir()) == ["names.tsv"]


def test_devices_are_written_in_place(kb: Path, tmp_path: Path):
    r = kbtool("--db", str(kb), "export", "1", "-o", os.devnull, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert Path(os.devnull).exists() and not Path(os.devnull).is_file()


# ---------------------------------------------------------------- the module itself


def test_check_output_path(tmp_path: Path):
    db = tmp_path / "kb.db"
    sqlite3.connect(db).execute("create table t(x)").connection.commit()
    with pytest.raises(OutputRefused, match="it is the KB"):
        check_output_path(db, db)
    with pytest.raises(OutputRefused, match="-wal file"):
        check_output_path(tmp_path / "kb.db-wal", db)
    with pytest.raises(OutputRefused, match="directory"):
        check_output_path(tmp_path, None)
    other = tmp_path / "copy.db"
    other.write_bytes(db.read_bytes())
    with pytest.raises(OutputRefused, match="--force"):
        check_output_path(other, db)
    check_output_path(other, db, force=True)
    check_output_path(tmp_path / "new.c", db)
    (tmp_path / "text.c").write_text("int x;")
    check_output_path(tmp_path / "text.c", db)


def test_an_error_inside_leaves_the_old_file(tmp_path: Path):
    out = tmp_path / "o.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(out) as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["o.txt"]
    write_atomic(out, b"new")
    assert out.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["o.txt"]


def test_temporaries_are_random_and_exclusive(tmp_path: Path):
    out = tmp_path / "o.txt"
    names = set()
    for _ in range(2):
        with atomic_output(out) as fh:
            tmp = [p for p in tmp_path.iterdir() if p.name != "o.txt"]
            assert len(tmp) == 1 and tmp[0].name.startswith(".o.txt.kbtool-")
            names.add(tmp[0].name)
            fh.write("x")
    assert len(names) == 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, sig):
    out = tmp_path / "o.txt"
    out.write_text("old")
    code = textwrap.dedent(f"""
        import sys, time
        from kbtool.services.outfile import atomic_output
        with atomic_output({str(out)!r}) as fh:
            fh.write("partial" * 100000)
            fh.flush()
            print("ready", flush=True)
            time.sleep(600)
    """)
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "ready"
    assert len(list(tmp_path.iterdir())) == 2  # the temporary exists while writing
    p.send_signal(sig)
    rc = p.wait(timeout=TIMEOUT)
    p.stdout.close()
    p.stderr.close()
    assert rc == 143 if sig == signal.SIGTERM else rc in (-signal.SIGINT, 1, 130), rc
    assert out.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["o.txt"]


def test_temporaries_of_killed_writers_are_removed_next_time(tmp_path: Path):
    out = tmp_path / "o.txt"
    code = textwrap.dedent(f"""
        import time
        from kbtool.services.outfile import atomic_output
        with atomic_output({str(out)!r}) as fh:
            fh.write("partial")
            fh.flush()
            print("ready", flush=True)
            time.sleep(600)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.kill()
    p.wait(timeout=TIMEOUT)
    p.stdout.close()
    assert len(list(tmp_path.iterdir())) == 1  # the SIGKILLed writer's temporary
    write_atomic(out, "done")
    assert [x.name for x in tmp_path.iterdir()] == ["o.txt"]
    assert out.read_text() == "done"


def test_fuzz_cli_smoke(tmp_path: Path):
    """The harness's CLI cases (output paths, full disk, links, signals, huge inputs) pass."""
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.fuzz_cli", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failures" in r.stdout
