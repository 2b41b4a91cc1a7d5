"""An exact-shape oracle match of a trivial body never gets confidence 1.0."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_bytes
from kbtool.services.oracle import TRIVIAL_CONFIDENCE, add_oracle, match_oracle

REF = """
(module
  (global $g (mut i32) (i32.const 0))
  (func $last_insert_rowid (export "last_insert_rowid") (result i32) global.get $g)
  (func $checksum (export "checksum") (param i32 i32) (result i32)
    (local i32)
    loop
      local.get 2 local.get 0 i32.load8_u i32.add i32.const 31 i32.mul local.set 2
      local.get 0 i32.const 1 i32.add local.set 0
      local.get 1 i32.const 1 i32.sub local.tee 1
      br_if 0
    end
    local.get 2 i32.const 65521 i32.rem_u)
  (memory 1))
"""


def test_trivial_getter_gets_less_than_full_confidence(tmp_path):
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    (tmp_path / "ref.wat").write_text(REF)
    subprocess.run(
        ["wat2wasm", "--debug-names", str(tmp_path / "ref.wat"), "-o", str(tmp_path / "ref.wasm")],
        check=True,
    )
    stripped = tmp_path / "target.wasm"
    subprocess.run(["wat2wasm", str(tmp_path / "ref.wat"), "-o", str(stripped)], check=True)
    data = stripped.read_bytes()
    # the target has no names: drop the export section's names by renaming exports
    data = data.replace(b"last_insert_rowid", b"x" * len("last_insert_rowid")).replace(
        b"checksum", b"y" * len("checksum")
    )
    conn = open_rw(tmp_path / "kb.db")
    ingest_bytes(conn, data, label="target")
    add_oracle(conn, tmp_path / "ref.wasm", label="ref")
    res = match_oracle(conn, 1)
    assert res["written"] == 2
    by_name = {}
    for f in queries.list_functions(conn, 1, False):
        sym = queries.get_symbol(conn, f["stable_id"])
        by_name[sym["name"]] = sym
    assert by_name["last_insert_rowid"]["confidence"] == TRIVIAL_CONFIDENCE
    assert by_name["checksum"]["confidence"] == 1.0
