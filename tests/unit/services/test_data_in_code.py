"""Data labels and global names in the lifted C and the disassembly once `kbtool analyze` has
built the data model; the C still compiles with the prelude (issue 26, point 5)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.lift import prelude_path
from kbtool.services import code
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import build_wat, have_wabt
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _kb(tmp_path: Path, wasm: Path, analyze: bool) -> Path:
    db = tmp_path / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        if analyze:
            analyze_version(conn, 1)
    finally:
        conn.close()
    return db


def test_labels_and_global_names_in_the_code(tmp_path):
    db = _kb(tmp_path, build_wat("datamodel", tmp_path), analyze=False)
    from kbtool.kb.datamodel import drop_data_model

    conn = open_rw(str(db))
    with conn:  # a version ingested before ingest built the model
        drop_data_model(conn, 1)
    conn.close()
    conn = open_ro(str(db))
    try:
        before = code.disassembly(conn, 1, 1)
    finally:
        conn.close()
    assert "s_create_table_s" not in before["lifted_c"]
    conn = open_rw(str(db))
    analyze_version(conn, 1)
    conn.close()
    conn = open_ro(str(db))
    try:
        after = code.disassembly(conn, 1, 1)
    finally:
        conn.close()
    c = after["lifted_c"]
    assert "enum { s_create_table_s = 1024 };" in c  # (behind an include guard)
    assert 's_create_table_s /* "create table %s" */' in c
    assert "p0 = data_420 + 1;" in c  # i32.const 0; i32.load offset=1056: the item's object
    assert "#define data_420 (*(int32_t *)(M + 1056))" in c
    assert "__stack_pointer" in c and "g0" not in c
    assert ';; s_create_table_s "create table %s"' in after["mnemonics"]
    assert "global.get $__stack_pointer" in after["mnemonics"]
    conn = open_ro(str(db))
    try:
        indexed = code.disassembly(conn, 1, 3)["lifted_c"]
    finally:
        conn.close()
    assert "data_420[p0]" in indexed  # table[p0], not M + p0 + 1056


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_whole_module_c_with_labels_compiles(tmp_path):
    db = _kb(tmp_path, DEMO, analyze=True)
    conn = open_ro(str(db))
    try:
        text = code.module_c(conn, 1)
        text = text if isinstance(text, str) else "".join(text)
    finally:
        conn.close()
    assert "#define bss_" in text and "s_success" in text  # static variables and strings named
    src = tmp_path / "all.c"
    src.write_text(text)
    r = subprocess.run(
        ["gcc", "-fsyntax-only", "-w", "-include", str(prelude_path()), str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[:2000]
