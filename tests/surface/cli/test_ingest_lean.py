"""A plain ``kbtool ingest`` into a pipe (issue 30.4): no UI stack imported, the same words
as Rich prints on a terminal, and a process that ends at once with its KB whole."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.support.paths import DEMO_DIR, DEMO_WASM, ROOT

UI_STACKS = {"rich", "typer", "click", "pydantic", "textual", "starlette", "uvicorn", "mcp"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _kbtool(
    *args: str, env: dict[str, str] | None = None, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """``python [FLAGS] -m kbtool ARGS`` as a user runs it (the console script's ``main``),
    stdout a pipe; this checkout first on the path, no terminal variables unless ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, *flags, "-m", "kbtool", *args],
        capture_output=True,
        text=True,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
    )


def _imported(importtime_stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    } - {"package"}


def test_first_ingest_imports_no_ui_stack_nor_the_diff_warmer(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    r = _kbtool("--db", db, "ingest", str(DEMO_WASM), flags=("-X", "importtime"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version 1" in r.stdout
    loaded = _imported(r.stderr)
    assert "kbtool.services.ingest" in loaded
    assert not {m for m in loaded if m.split(".")[0] in UI_STACKS}
    # a first version of a program has no pair to prepare: the warmer is not even imported
    assert "kbtool.services.diff.warm" not in loaded


def test_pipe_prints_rich_words_without_rich(tmp_path: Path) -> None:
    # a label with markup-like brackets and a bidi control: literal and escaped on both
    label = "we[bold]ird\u202e[/]"
    plain, styled = [], []
    for name, out, env in (
        ("a", plain, None),
        ("b", styled, {"TTY_COMPATIBLE": "1", "COLUMNS": "10000"}),  # Rich's terminal path
    ):
        db = str(tmp_path / f"{name}.db")
        for args in (
            ("ingest", str(DEMO_WASM), "--label", label),
            ("ingest", str(DEMO_DIR / "zstd-1.5.6.wasm")),  # a parent, carried identities
            ("ingest", str(DEMO_WASM)),  # the same bytes: nothing ingested
        ):
            r = _kbtool("--db", db, *args, env=env)
            assert r.returncode == 0, r.stderr[-2000:]
            out.append(re.sub(r" in [0-9.]+s:", " in Xs:", r.stdout))
    assert "\x1b" not in "".join(plain) and "\u202e" not in "".join(plain)  # escaped
    assert "\x1b" in "".join(styled)  # (Rich did style it)
    assert [ANSI.sub("", s) for s in styled] == plain
    first = plain[0].splitlines()[0]
    assert first.startswith("ingested version 1  we[bold]ird\\u202e[/]  in Xs: ")
    assert "identities carried from version 1:" in plain[1]
    assert "nothing ingested" in plain[2]


def test_the_process_ends_with_its_kb_whole(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    r = _kbtool("--db", str(db), "ingest", str(DEMO_WASM), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.rstrip().endswith("}")  # the whole JSON flushed before the exit
    # closed and checkpointed: every page in the KB file itself, no WAL left to replay
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM data_models").fetchone()[0] == 1
    finally:
        conn.close()


def test_closed_stdout_ends_quietly_with_the_kb_written(tmp_path: Path) -> None:
    # ``kbtool ingest F >&-``: no stdout at all (Python's sys.stdout is None); as Rich did,
    # nothing is printed and the ingest stands
    db = tmp_path / "kb.db"
    cmd = f'"{sys.executable}" -m kbtool --db "{db}" ingest "{DEMO_WASM}" >&-'
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 1
    finally:
        conn.close()
