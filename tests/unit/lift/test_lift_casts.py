"""Casts the lifted C does without (issue 28, casts per 100 lines): a never negative value
(a zero-extended 8/16-bit load, a bit count, a comparison, a mask) needs no ``(uint32_t)``
in an unsigned comparison, division or shift, nor ``(uint32_t)`` in ``extend_u`` /
``convert_u``; an i64 widened from 32 bits needs no ``(int64_t)`` where C widens it anyway
(assigned to an i64 local, passed to an i64 parameter, next to a 64-bit operand of
``+ - * & | ^`` or a comparison, a shift count); an i64 local read unsigned is ``uint64_t``. The C stays exact: gcc against wasmtime on the same inputs,
with bytes and halves above 0x7f in memory so a wrong signedness would show."""

from __future__ import annotations

import shutil

import pytest

from tests.support import lift_sem

pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)

WAT = r"""(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\ff\80\7f\01\fe\ff\00\80\90\a0\b0\c0\d0\e0\f0\ff")
  (func $wide (param i64) (result i64) (i64.mul (local.get 0) (i64.const 3)))
  (func (export "u8_cmp") (param i32 i32) (result i32)
    (i32.lt_u (i32.load8_u (i32.and (local.get 0) (i32.const 15)))
              (i32.load8_u (i32.and (local.get 1) (i32.const 15)))))
  (func (export "u8_vs_signed") (param i32 i32) (result i32)
    (i32.gt_u (i32.load8_u (i32.and (local.get 0) (i32.const 15))) (local.get 1)))
  (func (export "u16_div") (param i32 i32) (result i32)
    (i32.div_u (i32.load16_u (i32.and (local.get 0) (i32.const 14)))
               (i32.or (i32.and (local.get 1) (i32.const 255)) (i32.const 1))))
  (func (export "u16_shr") (param i32) (result i32)
    (i32.shr_u (i32.load16_u (i32.and (local.get 0) (i32.const 14))) (i32.const 3)))
  (func (export "clz_shr") (param i32) (result i32)
    (i32.shr_u (i32.clz (local.get 0)) (i32.const 1)))
  (func (export "u8_to_f64") (param i32) (result f64)
    (f64.convert_i32_u (i32.load8_u (i32.and (local.get 0) (i32.const 15)))))
  (func (export "u8_to_i64") (param i32) (result i64)
    (i64.extend_i32_u (i32.load8_u (i32.and (local.get 0) (i32.const 15)))))
  (func (export "mask_rem") (param i32 i32) (result i32)
    (i32.rem_u (i32.and (local.get 0) (i32.const 0xffff)) (i32.or (local.get 1) (i32.const 1))))
  (func (export "widen_add") (param i32 i64) (result i64)
    (i64.add (i64.extend_i32_s (local.get 0)) (local.get 1)))
  (func (export "widen_u_add") (param i32 i64) (result i64)
    (i64.add (local.get 1) (i64.extend_i32_u (i32.shr_u (local.get 0) (i32.const 1)))))
  (func (export "widen_both") (param i32 i32) (result i64)
    (i64.mul (i64.extend_i32_s (local.get 0)) (i64.extend_i32_s (local.get 1))))
  (func (export "widen_cmp") (param i32 i64) (result i32)
    (i64.lt_u (i64.extend_i32_s (local.get 0)) (local.get 1)))
  (func (export "widen_scmp") (param i32 i64) (result i32)
    (i64.lt_s (local.get 1) (i64.extend_i32_s (local.get 0))))
  (func (export "widen_local") (param i32) (result i64) (local i64)
    (local.set 1 (i64.extend_i32_s (i32.sub (i32.const 56) (local.get 0))))
    (i64.shl (local.get 1) (i64.const 3)))
  (func (export "widen_arg") (param i32) (result i64)
    (call $wide (i64.extend_i32_s (i32.add (local.get 0) (i32.const 1)))))
  (func (export "widen_load") (param i32 i64) (result i64)
    (i64.sub (i64.load8_s (i32.and (local.get 0) (i32.const 15))) (local.get 1)))
  (func (export "nn_scmp") (param i32 i32) (result i32)
    (i32.lt_s (i32.shr_u (local.get 0) (i32.const 1)) (i32.load8_u (i32.and (local.get 1) (i32.const 15)))))
  (func (export "nn_sshr") (param i32) (result i32)
    (i32.shr_s (i32.shr_u (local.get 0) (i32.const 4)) (i32.const 2)))
  (func (export "widen_u_local") (param i32 i64) (result i64) (local i64)
    (local.set 2 (i64.extend_i32_u (i32.sub (i32.const 56) (local.get 0))))
    (i64.add (local.get 2)
      (i64.shr_u (local.get 1) (i64.extend_i32_u (i32.sub (i32.const 64) (local.get 0))))))
  (func (export "u64_local") (param i64 i64) (result i64) (local i64)
    (local.set 2 (i64.xor (local.get 0) (local.get 1)))
    (if (i64.lt_u (local.get 2) (local.get 1))
      (then (local.set 2 (i64.shr_u (local.get 2) (i64.const 7)))))
    (i64.div_u (local.get 2) (i64.or (local.get 1) (i64.const 1))))
  (func (export "neg_widened_u") (param i32) (result i64)
    (i64.sub (i64.const 0) (i64.extend_i32_u (local.get 0))))
  (func (export "neg_widened_s") (param i32) (result i64)
    (i64.sub (i64.const 0) (i64.extend_i32_s (local.get 0))))
  (func (export "widen_shift_kept") (param i32) (result i64)
    (i64.shl (i64.extend_i32_s (local.get 0)) (i64.const 40))))
"""


def test_fewer_casts_same_results(tmp_path):
    r = lift_sem.check_wasm(tmp_path, lift_sem.wat(tmp_path, WAT), calls=24)
    assert not r.mismatches, r.mismatches[:5]
    assert r.agree >= 24 * 8
    c = r.c
    assert "*(uint8_t *)(M + (p0 & 15)) < *(uint8_t *)(M + (p1 & 15))" in c["u8_cmp"], c["u8_cmp"]
    # the signed operand keeps its cast; the byte needs none
    assert "*(uint8_t *)(M + (p0 & 15)) > (uint32_t)p1" in c["u8_vs_signed"], c["u8_vs_signed"]
    assert "(uint32_t)*(uint16_t" not in c["u16_div"] + c["u16_shr"], c["u16_div"]
    assert "(uint32_t)i32_clz" not in c["clz_shr"], c["clz_shr"]
    assert "(double)*(uint8_t *)" in c["u8_to_f64"], c["u8_to_f64"]
    assert "(int64_t)*(uint8_t *)" in c["u8_to_i64"], c["u8_to_i64"]
    assert "(uint32_t)(p0 & 0xffff)" not in c["mask_rem"], c["mask_rem"]
    assert "return p0 + p1;" in c["widen_add"], c["widen_add"]
    assert "(int64_t)(uint32_t)" not in c["widen_u_add"], c["widen_u_add"]
    assert c["widen_both"].count("(int64_t)") == 1, c["widen_both"]  # one side converts
    assert "(int64_t)" not in c["widen_cmp"] + c["widen_scmp"], c["widen_cmp"]
    assert "l1 = 56 - p0;" in c["widen_local"], c["widen_local"]
    assert "(int64_t)" not in c["widen_arg"].split("{", 1)[1], c["widen_arg"]
    assert "*(int8_t *)(M + (p0 & 15)) - p1" in c["widen_load"], c["widen_load"]
    # both sides never negative: a signed comparison or shift needs no cast back
    assert "(int32_t)" not in c["nn_scmp"].split("{", 1)[1], c["nn_scmp"]
    assert "(int32_t)" not in c["nn_sshr"].split("{", 1)[1], c["nn_sshr"]
    # a zero-extension keeps its (uint32_t) only; a shift count needs no widening at all
    assert "l2 = (uint32_t)(56 - p0);" in c["widen_u_local"], c["widen_u_local"]
    assert "(uint64_t)p1 >> ((64 - p0) & 63)" in c["widen_u_local"], c["widen_u_local"]
    # an i64 local read unsigned is uint64_t: its reads need no cast
    assert "uint64_t l2 = 0;" in c["u64_local"], c["u64_local"]
    assert "(uint64_t)l2" not in c["u64_local"] and "l2 >>= 7" in c["u64_local"], c["u64_local"]
    # next to an unsigned operand the other needs no cast: C converts it
    assert "if (l2 < p1)" in c["u64_local"], c["u64_local"]
    # a shift's result has its left operand's type: the widening stays
    assert "(int64_t)p0 << 40" in c["widen_shift_kept"], c["widen_shift_kept"]
