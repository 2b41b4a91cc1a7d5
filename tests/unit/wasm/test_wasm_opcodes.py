"""The opcode table: ids, kinds, and every mnemonic checked against wasm-objdump."""

from __future__ import annotations

import re
import subprocess
from array import array

import pytest

from kbtool.wasm import MNEMONICS, analyze_module, iter_instructions
from kbtool.wasm import opcodes as oc
from testkit.wasmbuild import (
    have_wabt,
    module,
    parse_objdump,
    section,
    sleb,
    uleb,
    vec,
)


def test_single_byte_ids_are_the_opcode_byte():
    assert MNEMONICS[0x28] == "i32.load"
    assert MNEMONICS[0x41] == "i32.const"
    assert MNEMONICS[0x0B] == "end"
    assert MNEMONICS[0xC4] == "i64.extend32_s"
    assert MNEMONICS[0x1C] == "select"  # select with types prints as plain select
    assert oc.op_id(None, 0x10) == 0x10


def test_prefixed_ids_are_stable():
    assert oc.PREFIX_BASE == {0xFC: 0x100, 0xFB: 0x120, 0xFD: 0x140, 0xFE: 0x260}
    assert MNEMONICS[oc.op_id(0xFC, 0x00)] == "i32.trunc_sat_f32_s"
    assert MNEMONICS[oc.op_id(0xFC, 0x0A)] == "memory.copy"
    assert MNEMONICS[oc.op_id(0xFD, 0x0C)] == "v128.const"
    assert MNEMONICS[oc.op_id(0xFD, 0x113)] == "i32x4.relaxed_dot_i8x16_i7x16_add_s"
    assert MNEMONICS[oc.op_id(0xFE, 0x48)] == "i32.atomic.rmw.cmpxchg"
    assert MNEMONICS[oc.op_id(0xFE, 0x4E)] == "i64.atomic.rmw32.cmpxchg_u"
    assert oc.op_bytes(oc.op_id(0xFD, 0x100)) == (0xFD, 0x100)
    assert len(MNEMONICS) == oc.NUM_OPS < 0x10000  # fits array('H')


def test_table_consistency():
    names = [m for m in MNEMONICS if m]
    assert len(names) > 520
    for op, m in enumerate(MNEMONICS):
        if m:
            assert oc.KIND[op] != oc.K_BAD, m
            assert re.fullmatch(r"[a-z0-9_.]+", m), m
        else:
            assert oc.KIND[op] in (oc.K_BAD, oc.K_PREFIX)
        if oc.KIND[op] in (oc.K_MEM, oc.K_MEM_LANE):
            assert oc.WIDTH[op] in (1, 2, 4, 8, 16), m
        else:
            assert oc.WIDTH[op] == 0, m
    assert oc.WIDTH[0x28] == 4 and oc.WIDTH[0x31] == 1 and oc.WIDTH[0x39] == 8
    assert oc.WIDTH[oc.op_id(0xFD, 0x00)] == 16
    assert oc.WIDTH[oc.op_id(0xFE, 0x22)] == 1  # i64.atomic.rmw8.add_u
    assert all(oc.is_atomic(oc.op_id(0xFE, c)) for c in (0, 3, 0x4E))


# ----------------------------------------------------------------- every opcode


def _imm(op: int, k: int) -> bytes:
    if k == oc.K_NONE:
        return b""
    if k in (oc.K_U32, oc.K_GLOBAL, oc.K_CALL, oc.K_REF_FUNC, oc.K_TYPE, oc.K_TABLE):
        return b"\x70" if op == 0xD0 else b"\x00"
    return {
        oc.K_MEM: b"\x02\x84\x01",
        oc.K_I32: sleb(-5),
        oc.K_I64: sleb(1 << 40),
        oc.K_F32: b"\x00\x00\x80\x3f",
        oc.K_F64: b"\x00" * 7 + b"\x3f",
        oc.K_BLOCK: b"\x40",
        oc.K_BR_TABLE: b"\x02\x00\x00\x00",
        oc.K_CALL_INDIRECT: b"\x00\x00",
        oc.K_SELECT_T: b"\x01\x7f",
        oc.K_TABLE2: b"\x00\x00",
        oc.K_U32X2: b"\x00\x00",
        oc.K_TRY_TABLE: b"\x40\x01\x02\x00",
        oc.K_LANE: b"\x01",
        oc.K_BYTE: b"\x00",
        oc.K_MEM_LANE: b"\x00\x04\x01",
        oc.K_V128: bytes(range(16)),
        oc.K_BR_ON_CAST: b"\x03\x00\x70\x70",
        oc.K_ORD_U32: b"\x00\x00",
        oc.K_ORD_U32X2: b"\x01\x00\x00",
    }[k]


def _instr(op: int) -> bytes:
    pfx, code = oc.op_bytes(op)
    enc = (bytes([pfx]) + uleb(code)) if pfx is not None else bytes([code])
    ins = enc + _imm(op, oc.KIND[op])
    if op in (0x02, 0x03, 0x04, 0x06, 0x1F):  # block openers: close them
        ins += b"\x0b"
    elif op == 0x05:  # else inside if
        ins = b"\x04\x40" + ins + b"\x0b"
    elif op in (0x07, 0x19):  # catch / catch_all inside try
        ins = b"\x06\x40" + ins + b"\x0b"
    elif op == 0x18:  # delegate closes a try
        ins = b"\x06\x40" + ins
    elif op == 0x0B:
        ins = b"\x02\x40" + ins
    return ins


def all_ops_module(ops: list[int]) -> bytes:
    """One function per opcode (objdump does not validate, so stack types are free)."""
    bodies = []
    for op in ops:
        body = b"\x00" + _instr(op) + b"\x0b"
        bodies.append(uleb(len(body)) + body)
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(2, vec([b"\x01m\x01t\x04\x00\x00"])),  # tag import
        section(3, vec([b"\x00"] * len(bodies))),
        section(4, vec([b"\x70\x00\x01"])),
        section(5, vec([b"\x03\x01\x01"])),  # shared memory
        section(6, vec([b"\x7f\x01\x41\x00\x0b"])),
        section(9, vec([b"\x01\x00\x01\x00"])),
        section(12, uleb(1)),
        section(10, vec(bodies)),
        section(11, vec([b"\x01\x02hi"])),
    )


ALL_OPS = [op for op, m in enumerate(MNEMONICS) if m]


def test_every_opcode_decodes_fast_and_careful():
    data = all_ops_module(ALL_OPS)
    a = analyze_module(data)
    m = a.module
    defined = [f for f in a.functions if not f.imported]
    assert len(defined) == len(ALL_OPS)
    for f, op in zip(defined, ALL_OPS, strict=True):
        ops = array("H")
        ops.frombytes(f.ops)
        assert op in ops, MNEMONICS[op]
        assert ops[-1] == 0x0B
        s, e = m.code[f.index - m.num_func_imports]
        careful = [o for _off, o, _t in iter_instructions(data, s, e)]
        assert careful == list(ops), MNEMONICS[op]
    atom = [f for f, op in zip(defined, ALL_OPS, strict=True) if oc.is_atomic(op)]
    assert all(f.atomic_sites == 1 for f in atom)
    mem = [f for f, op in zip(defined, ALL_OPS, strict=True) if op in oc.MEMORY_OPS]
    assert all(len(f.mem_ops) == 1 for f in mem)


# wabt 1.0.42's wasm-objdump cannot print the GC proposal's opcodes (0xFB) and ref.eq
NOT_IN_OBJDUMP = (
    {0xD3}
    | {op for op in ALL_OPS if oc.op_bytes(op)[0] == 0xFB}
    | {op for op in ALL_OPS if oc.op_bytes(op)[0] == 0xFE and oc.op_bytes(op)[1] >= 0x4F}
)  # GC; shared-everything-threads atomics


@pytest.mark.skipif(not have_wabt(), reason="wabt not installed")
def test_every_mnemonic_matches_wasm_objdump(tmp_path):
    """One function per opcode; every mnemonic must equal wasm-objdump's."""
    ops = [op for op in ALL_OPS if op not in NOT_IN_OBJDUMP]
    assert len(ops) > 500
    data = all_ops_module(ops)
    path = tmp_path / "all.wasm"
    path.write_bytes(data)
    proc = subprocess.run(["wasm-objdump", "-d", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ref = parse_objdump(proc.stdout.splitlines())
    a = analyze_module(data)
    checked = 0
    for f in a.functions:
        if not f.imported:
            assert f.mnemonics() == ref[f.index]
            checked += 1
    assert checked == len(ops)


@pytest.mark.skipif(not have_wabt(), reason="wabt not installed")
def test_objdump_really_lacks_the_excluded_opcodes(tmp_path):
    """Guard for the exclusion list: each excluded opcode makes wasm-objdump fail (so a
    newer wabt that learns them shows up here)."""
    path = tmp_path / "gc.wasm"
    for op in sorted(NOT_IN_OBJDUMP)[:3]:
        path.write_bytes(all_ops_module([op]))
        proc = subprocess.run(["wasm-objdump", "-d", str(path)], capture_output=True)
        assert proc.returncode != 0, MNEMONICS[op]
