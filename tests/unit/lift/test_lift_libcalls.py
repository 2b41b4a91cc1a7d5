"""Library calls by name (issue 28.4): a function ``kbtool analyze`` recognises by its
behaviour (``memory.fill(p0, p1, p2); return p0`` is memset) is called by that name in the
lifted C of its callers, through the real CLI on a real KB (ingest, analyze, code). The
call keeps the wasm function's own signature (wasm addresses, not host pointers), so the C
stays exact."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not shutil.which("wat2wasm"), reason="needs wat2wasm")

WAT = """(module
  (memory (export "memory") 1)
  (func $ms (param i32 i32 i32) (result i32)
    (memory.fill (local.get 0) (local.get 1) (local.get 2))
    (local.get 0))
  (func (export "clear") (param $n i32) (result i32)
    (drop (call $ms (i32.const 1024) (i32.const 7) (i32.and (local.get $n) (i32.const 63))))
    (i32.load8_s (i32.const 1027))))
"""


def _kb(db: Path, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_recognised_memset_is_called_by_name(tmp_path):
    (tmp_path / "m.wat").write_text(WAT)
    wasm = tmp_path / "m.wasm"
    subprocess.run(
        ["wat2wasm", "--enable-all", str(tmp_path / "m.wat"), "-o", str(wasm)], check=True
    )
    db = tmp_path / "kb.db"
    _kb(db, "ingest", str(wasm))
    before = _kb(db, "code", "1", "1")
    assert "f0(1024, 7, p0 & 63);" in before, before  # not recognised yet: its index
    _kb(db, "analyze", "1")
    after = _kb(db, "code", "1", "1")
    assert "int32_t memset(int32_t, int32_t, int32_t);" in after, after
    assert "  memset(1024, 7, p0 & 63);" in after, after
    assert "f0(" not in after.split("lifted C", 1)[1], after
