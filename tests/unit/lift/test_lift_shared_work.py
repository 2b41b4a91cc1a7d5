"""Work the lifter shares instead of redoing (issue 28 point 6): a labelled data address is
looked up once per prepared module however many functions use it, the decoder's commonest
immediates are shared tuples equal to what the careful decoder reads, and a plain ``zip``
after a length check fails as ``zip(strict=True)`` did."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.lift import lift_function, lift_module, prepare
from kbtool.lift.context import LiftModule
from kbtool.lift.lifter.base import MAX_INSTRUCTIONS, _Budget, _same_len
from kbtool.lift.lifter.decode import _decode
from kbtool.lift.names import Names
from kbtool.wasm.instr import decode_one, read_local_decls

needs_wat = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="needs wat2wasm")

WAT = r"""
(module
  (memory (export "memory") 1)
  (data (i32.const 1088) "hello\00")
  (func $a (export "a") (result i32) (i32.load8_u (i32.const 1088)))
  (func $b (export "b") (result i32) (i32.add (i32.const 1088) (i32.const 1088)))
  (func $c (export "c") (param i32 i64) (result i32)
    (local i32 f32)
    (block (result i32)
      (local.set 2 (i32.load offset=12 (local.get 0)))
      (i64.store offset=127 align=4 (local.get 0) (i64.const -64))
      (drop (i32.load16_s offset=200 (local.get 0)))
      (drop (loop (result i64) (i64.const 63)))
      (local.set 3 (f32.const 1.5))
      (i32.add (local.get 2) (i32.const -65))))
)
"""


def _wasm(tmp_path) -> bytes:
    src = tmp_path / "m.wat"
    src.write_text(WAT)
    out = tmp_path / "m.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


@needs_wat
def test_a_labelled_address_is_looked_up_once_per_module(tmp_path, monkeypatch):
    data = _wasm(tmp_path)
    items = [(1088, 6, "s_hello", "hello")]
    first = {r.func_index: r.text for r in lift_module(prepare(data, Names(data=list(items))))}
    seen: list[int] = []
    real = LiftModule.data_label

    def counting(self, addr):
        seen.append(addr)
        return real(self, addr)

    monkeypatch.setattr(LiftModule, "data_label", counting)
    lm = prepare(data, Names(data=list(items)))
    once = lift_function(lm, 1).text
    twice = lift_function(lm, 1).text  # the cache is warm
    assert once == twice == first[1]
    assert 'return s_hello /* "hello" */ + s_hello /* "hello" */;' in once
    assert "enum { s_hello = 1088 };" in once  # each function declares the labels it uses
    assert seen == [1088]  # four uses of the constant in two lifts: one lookup
    assert "enum { s_hello = 1088 };" in lift_function(lm, 0).text


@needs_wat
def test_shared_immediates_read_as_the_careful_decoder_reads(tmp_path):
    data = _wasm(tmp_path)
    lm = prepare(data)
    start, end = lm.module.code[2]
    _decls, ops, args, _ctrl, arith = _decode(data, start, end, _Budget(MAX_INSTRUCTIONS, None))
    p = read_local_decls(data, start, end)[1]
    careful = []
    while p < end:
        op, p, imms = decode_one(data, p, end)
        careful.append((op, imms))
    assert len(careful) == len(ops)
    assert arith  # the i32.add: the frame pass runs
    for (op, imms), got_op, got in zip(careful, ops, args, strict=True):
        assert got_op == op
        if op == 0x43:  # f32.const keeps its raw bits beside the value
            assert got[0] == imms[0] and len(got) == 2
        else:
            assert got == imms, (hex(op), got, imms)
    # the two `local.get 0` share one tuple: no allocation per instruction
    gets = [a for o, a in zip(ops, args, strict=True) if o == 0x20 and a == (0,)]
    assert len(gets) == 3 and all(g is gets[0] for g in gets)


def test_same_len_fails_as_a_strict_zip():
    for a, b in (([1, 2], [1]), ([1], [1, 2])):
        with pytest.raises(ValueError) as strict:
            list(zip(a, b, strict=True))
        with pytest.raises(ValueError) as ours:
            _same_len(a, b)
        assert str(ours.value) == str(strict.value)
    _same_len([1], ("x",))  # equal lengths: no error
