"""The saveSetjmp recognizer reads each caller's op ids and call targets from the decoder's
facts (``ops``, ``calls``) instead of decoding the body again: the same instructions and
targets as :func:`kbtool.analysis.body.decode_body`, body by body (calls and return_calls)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.analysis.body import decode_body
from kbtool.analysis.sjlj import _CALL_OPS, _ops_and_call_targets
from kbtool.wasm import analyze_module
from tests.support.paths import DEMO_WASM, corpus_file

TAIL_CALLS = """
(module
  (import "env" "g" (func $g (result i32)))
  (func $a (param i32) (result i32)
    local.get 0 call $b drop call $g local.tee 0 return_call $b)
  (func $b (param i32) (result i32)
    local.get 0 if (result i32) call $g else i32.const 1 end))
"""


def _same_as_decoding(data: bytes) -> int:
    """Call sites compared (every body must agree)."""
    sites = 0
    for f in analyze_module(data).functions:
        if f.imported:
            continue
        ops, target = _ops_and_call_targets(f)
        body = decode_body(data, f)
        assert list(ops) == [op for op, _ in body], f.index
        calls = {j: imms[0] for j, (op, imms) in enumerate(body) if op in _CALL_OPS}
        assert target == calls, f.index
        sites += len(calls)
    return sites


def test_demo_and_corpus_bodies():
    assert _same_as_decoding(DEMO_WASM.read_bytes()) > 1000
    path = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm")
    assert _same_as_decoding(path.read_bytes()) > 1000


def test_return_calls_take_their_call_entry(tmp_path):
    wat2wasm = shutil.which("wat2wasm")
    if wat2wasm is None:
        pytest.skip("wat2wasm not installed")
    src, out = tmp_path / "m.wat", tmp_path / "m.wasm"
    src.write_text(TAIL_CALLS)
    subprocess.run([wat2wasm, str(src), "-o", str(out)], check=True)
    assert _same_as_decoding(out.read_bytes()) == 4
