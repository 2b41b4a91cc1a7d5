"""What changed in a modified function, spelled out: offsets, constants, calls, signature."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb.db import open_rw
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.explain import const_changes, offset_changes
from kbtool.services.diff.report import get_diff
from kbtool.services.ingest import ingest_bytes
from kbtool.wasm.opcodes import MNEMONICS

WAT = """
(module
  (import "env" "log" (func $log (param i32)))
  (import "env" "free" (func $free (param i32)))
  (memory 1)
  (data (i32.const 1024) "{msg}\\00")
  (func $get_field (export "get_field") (param i32) (result i32)
    local.get 0
    i32.load offset={off}
    i32.const {k}
    i32.add)
  (func $helper (param i32)
    local.get 0
    call ${callee})
  (func $other (export "other") (param i32) (result i32)
    i32.const 1024
    call $log
    local.get 0
    call $helper
    local.get 0
    i32.const 7
    i32.mul)
)
"""


def _wasm(tmp: Path, name: str, **kw) -> bytes:
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    src = tmp / f"{name}.wat"
    src.write_text(WAT.format(**kw))
    out = tmp / f"{name}.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def test_offset_constant_and_callee_changes_are_spelled_out(tmp_path):
    a = _wasm(tmp_path, "a", off=348, k=16, callee="log", msg="hello")
    b = _wasm(tmp_path, "b", off=356, k=24, callee="free", msg="hello")
    conn = open_rw(tmp_path / "kb.db")
    ingest_bytes(conn, a, label="1.0")
    ingest_bytes(conn, b, label="1.1")
    report = get_diff(conn, 1, 2)
    mods = {c["to_index"]: c for c in report["changes"] if c["classification"] == "modified"}
    assert set(mods) >= {2, 3}, report["summary"]
    field = " | ".join(mods[2]["explain"])
    assert "i32.load offset 348 -> 356" in field and "0x10 -> 0x18" in field
    helper = " | ".join(mods[3]["explain"])
    assert "calls added: env.free" in helper and "calls removed: env.log" in helper
    cl = changelog(conn, report)
    unnamed = next(m for m in cl["modified"] if m["to_index"] == 3)
    assert unnamed["name"] is None and "env.free" in unnamed["hint"]


def test_offsets_and_constants_helpers():
    load = MNEMONICS.index("i32.load")
    assert offset_changes([[load, 8, 4], [load, 348, 4]], [[load, 8, 4], [load, 356, 4]]) == [
        ("i32.load", 348, 356)
    ]
    # static addresses folded into memargs are relocation, not a struct change
    assert offset_changes([[load, 70000, 4]], [[load, 70016, 4]]) == []
    assert const_changes([1, 16, 5000], [1, 24, 6000])["changed"] == [(16, 24)]
    c = const_changes([1, 2, 3], [4, 5])
    assert c["added"] == [4, 5] and c["removed"] == [1, 2, 3]


def test_ui_diff_focuses_on_changes_by_default(tmp_path):
    import os
    import sys

    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _s: None)
    env = {**os.environ, "COLUMNS": "100"}

    def classes(*args: str) -> tuple[set[str], int]:
        out = subprocess.run(
            [sys.executable, "-m", "kbtool.cli", "ui", "diff", "1", "2", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        table = out.stdout.split("changelog")[0].splitlines()
        words = {
            ln.split()[0]
            for ln in table
            if ln.split() and ln.split()[0] in ("unchanged", "moved", "modified", "new", "deleted")
        }
        return words, len(out.stdout.splitlines())

    focused, n_focused = classes()
    everything, n_all = classes("--all")
    assert focused == {"modified", "new"}
    assert {"unchanged", "moved"} <= everything
    assert n_focused < n_all
