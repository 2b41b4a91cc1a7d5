"""A later release's ingest for the match-child tests: run a spied ingest script in a fresh
single-threaded process (a test runner's threads rule out a fork) and read the KB's rows, or
ingest the same releases in this process (no child) for the rows to compare with."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.support.kb_rows import table_rows


def spied_later(
    script: str, db: Path, *args: str, env: dict[str, str], by_rowid: bool = True
) -> tuple[dict, dict]:
    """Run ``script`` (``python -c``, argv ``db *args``) with ``env`` added to this process's
    environment; its last stdout line is the JSON of what its spies saw. Returns the KB's
    rows and that JSON."""
    run = subprocess.run(
        [sys.executable, "-c", script, str(db), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    conn = sqlite3.connect(db)
    rows = table_rows(conn, by_rowid=by_rowid)
    conn.close()
    return rows, seen


def ingested_here(db: Path, *releases: tuple[Path, str], by_rowid: bool = True) -> dict:
    """The KB's rows after ingesting ``releases`` ((file, label), in order) in this
    process (threaded under xdist: no child). A repeated file is ingested with ``force``."""
    from kbtool.kb.db import open_rw
    from kbtool.services.ingest import ingest_file

    conn = open_rw(db)
    seen: set[Path] = set()
    for path, label in releases:
        ingest_file(conn, path, label=label, force=path in seen)
        seen.add(path)
    rows = table_rows(conn, by_rowid=by_rowid)
    conn.close()
    return rows
