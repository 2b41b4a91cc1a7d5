"""The two-version KB of the diff-cache tests: one module ingested twice (1.0, 1.1) with a
changed field offset and constant, through wat2wasm and the real ingest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction
from kbtool.services.ingest import ingest_bytes

WAT = """
(module
  (import "env" "log" (func $log (param i32)))
  (memory 1)
  (func $get_field (export "get_field") (param i32) (result i32)
    local.get 0
    i32.load offset={off}
    i32.const {k}
    i32.add)
  (func $other (export "other") (param i32) (result i32)
    i32.const 3
    call $log
    local.get 0
    i32.const 7
    i32.mul)
)
"""


def two_versions_kb(tmp_path: Path, name: str = "kb.db", k0: int = 16) -> Path:
    """The KB file ``tmp_path/name``; version 1.1 adds 8 to the constant ``k0`` of 1.0 and
    moves the field from offset 348 to 356 (skips the calling test without wat2wasm)."""
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    db = tmp_path / name
    conn = open_rw(db)
    for label, off, k in (("1.0", 348, k0), ("1.1", 356, k0 + 8)):
        src = tmp_path / f"{label}.wat"
        src.write_text(WAT.format(off=off, k=k))
        subprocess.run(["wat2wasm", str(src), "-o", str(tmp_path / "m.wasm")], check=True)
        ingest_bytes(conn, (tmp_path / "m.wasm").read_bytes(), label=label)
    conn.close()
    return db


@pytest.fixture()
def kb(tmp_path: Path) -> Path:
    """The two-version KB as a fixture (import it into a test module to use it)."""
    return two_versions_kb(tmp_path)


def make_stale_report(db: Path, a: int = 1, b: int = 2) -> None:
    """Rewrite the stored report of (a, b) as an older kbtool saved it: no triage rules
    version, other triage on every modified function."""
    from kbtool.services.diff.report import stored_diff

    conn = open_rw(db)
    try:
        # ingest stores the report untriaged (TRIAGE_PENDING); the reader's triage, then stale
        saved = stored_diff(conn, a, b)
        assert saved is not None and "triage_rules" not in saved
        for c in saved["changes"]:
            if c["classification"] == "modified":
                c["triage"], c["reasons"] = -5.0, ["stale"]
        with transaction(conn):
            store.save_diff_report(conn, a, b, saved)
    finally:
        conn.close()
