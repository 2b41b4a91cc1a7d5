"""Data items at the end of a segment whose trailing zeros were dropped (wasm-opt's memory
packing, issue 26): the last item reads on into the zeros up to the next referenced
address or segment, a string whose NUL was dropped is still a string, and a referenced
address in the zeros between two segments is an item of its own; a short string ("nan")
before literals does not hide them."""

from __future__ import annotations

import subprocess

import pytest

from kbtool.analysis.datamodel import build_data_model
from kbtool.wasm import analyze_module
from testkit.wasmbuild import have_wabt

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")

WAT = r"""
(module
  (memory 1)
  (data (i32.const 1024) "\07")
  (data (i32.const 1040) "tail text")
  (data (i32.const 1072) "\01\02\03\04")
  (data (i32.const 1200) "nan\00teal\00inf\00olive\00")
  (func (export "f") (result i32)
    (i32.add
      (i32.add (i32.load (i32.const 1024)) (i32.load (i32.const 1032)))
      (i32.add (i32.load8_u (i32.const 1040))
               (i32.add (i32.load (i32.const 1072)) (i32.load8_u (i32.const 1200))))))
)
"""


def test_items_read_on_into_dropped_zeros(tmp_path):
    src = tmp_path / "t.wat"
    src.write_text(WAT)
    out = tmp_path / "t.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    data = out.read_bytes()
    dm = build_data_model(analyze_module(data), data)
    by = {it.address: it for it in dm.items}
    # a 1-byte segment read as int32: the item runs to the next referenced address
    assert by[1024].size == 8 and by[1024].kind == "numeric"
    # a referenced address between segments: an item of zeros up to the next segment
    assert by[1032].kind == "zero" and by[1032].size == 8
    # "tail text" lost its NUL with the trailing zeros: still a C string
    assert by[1040].kind == "cstring" and by[1040].text == "tail text"
    assert by[1040].size == 32 and by[1040].label == "s_tail_text"
    assert by[1072].size == 128  # to the next segment
    # short strings between literals do not hide the literals after them
    assert by[1204].text == "teal" and by[1213].text == "olive"
    assert by[1200].kind == "numeric" and by[1209].kind == "numeric"
