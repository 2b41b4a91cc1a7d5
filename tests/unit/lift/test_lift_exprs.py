"""Expression clean-up in lifted C: constants folded into the operator (x + 64, not
x - -64; -x, not 0 - x), negated comparisons (a != b, not (a == b) == 0), compound
assignments (x += k, x++), one shift mask; each form checked against wasmtime."""

from __future__ import annotations

import shutil

import pytest

from tests.support import lift_sem

pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)

EXPRS_WAT = """
(module
  (memory (export "memory") 1)
  (func (export "ne") (param i32 i32) (result i32)
    (i32.eqz (i32.eq (local.get 0) (local.get 1))))
  (func (export "ge_u") (param i32 i32) (result i32)
    (i32.eq (i32.lt_u (local.get 0) (local.get 1)) (i32.const 0)))
  (func (export "lt_keep") (param i32 i32) (result i32)
    (i32.ne (i32.lt_s (local.get 0) (local.get 1)) (i32.const 0)))
  (func (export "sub_neg") (param i32) (result i32)
    (i32.sub (local.get 0) (i32.const -64)))
  (func (export "add_neg") (param i64) (result i64)
    (i64.add (local.get 0) (i64.const -5)))
  (func (export "negate") (param i32) (result i32)
    (i32.sub (i32.const 0) (local.get 0)))
  (func (export "steps") (param i32) (result i32)
    (local.set 0 (i32.add (local.get 0) (i32.const 1)))
    (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
    (local.set 0 (i32.add (local.get 0) (i32.const 9)))
    (local.set 0 (i32.xor (local.get 0) (i32.const 0x55)))
    (local.get 0))
  (func (export "masked_shift") (param i32 i32) (result i32)
    (i32.shl (local.get 0) (i32.and (local.get 1) (i32.const 31))))
  (func (export "branch_not") (param i32 i32) (result i32)
    (if (result i32) (i32.eqz (i32.gt_s (local.get 0) (local.get 1)))
      (then (i32.const 7)) (else (i32.const 9))))
)
"""


def test_expressions_read_clean_and_agree(tmp_path):
    data = lift_sem.wat(tmp_path, EXPRS_WAT)
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    assert r.agree == 9 * 24
    c = r.c
    assert "return p0 != p1;" in c["ne"], c["ne"]
    # one cast makes the comparison unsigned (C converts p1), as Hex-Rays prints it
    assert "return (uint32_t)p0 >= p1;" in c["ge_u"], c["ge_u"]
    assert "return p0 < p1;" in c["lt_keep"], c["lt_keep"]
    assert "return p0 + 64;" in c["sub_neg"], c["sub_neg"]
    assert "return p0 - 5LL;" in c["add_neg"], c["add_neg"]
    assert "return -p0;" in c["negate"], c["negate"]
    steps = c["steps"]
    assert "p0++;" in steps and "p0--;" in steps and "p0 += 9;" in steps, steps
    assert "p0 ^= 85;" in steps, steps
    assert "& 31 & 31" not in c["masked_shift"] and "(p1 & 31)" in c["masked_shift"]
    assert "<= p1" in c["branch_not"] and "== 0" not in c["branch_not"], c["branch_not"]
    for text in c.values():
        assert "- -" not in text and "== 0) == 0" not in text
