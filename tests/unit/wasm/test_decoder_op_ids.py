"""The decoder's op ids and memory accesses as they are now written: op ids straight into
bytes (mypyc's ``librt`` BytesWriter, or a ``bytearray`` where it is absent) and the
one-byte loads/stores at small offsets shared through a flat list; same facts either way."""

from __future__ import annotations

import subprocess
from array import array

import pytest

from kbtool.wasm import decoder, facts, opbuf
from kbtool.wasm.opcodes import PREFIX_BASE, WIDTH
from testkit.wasmbuild import CORPUS, have_wabt
from tests.support.without_librt import decoder_variants, import_without_librt

WAT = """(module
  (memory 1 1 shared)
  (func (param i32) (result i32)
    local.get 0
    i32.load offset=8
    local.get 0
    local.get 0
    i32.const 4
    memory.copy
    local.get 0
    i32.atomic.load offset=4
    i32.add
    local.get 0
    i32.load offset=4095
    i32.add
    local.get 0
    i32.load offset=4096
    i32.add
    local.get 0
    i64.load offset=70000
    i32.wrap_i64
    i32.add)
  (func (param i32)
    local.get 0
    i64.const 1
    i64.store offset=4095
    local.get 0
    i32.load offset=4095
    local.get 0
    i32.load offset=4096
    drop
    drop))
"""


def _ranges(mod, data: bytes) -> list[tuple]:
    ctx = facts._Ctx(data, facts.parse_module(data))
    return mod.analyze_range(ctx, 0, len(ctx.m.code))


@pytest.fixture(scope="module")
def module_bytes(tmp_path_factory) -> bytes:
    if not have_wabt():
        pytest.skip("wabt not installed")
    d = tmp_path_factory.mktemp("opids")
    (d / "m.wat").write_text(WAT)
    subprocess.run(
        ["wat2wasm", "--enable-threads", str(d / "m.wat"), "-o", str(d / "m.wasm")], check=True
    )
    return (d / "m.wasm").read_bytes()


def test_the_pure_decoder_runs_without_librt(monkeypatch):
    mod = import_without_librt(monkeypatch, decoder.__file__, "kbtool.wasm._decoder_without_librt")
    assert mod.BytesWriter is opbuf.BytesWriter
    w = opbuf.BytesWriter()
    for b in (0x28, 0, 10, 1):
        w.append(b)
    assert w.getvalue() == array("H", [0x28, 0x10A]).tobytes()
    assert opbuf.native_order(w.getvalue()) == array("H", [0x28, 0x10A]).tobytes()


def test_op_ids_with_prefixed_ops_read_back_as_the_instructions(module_bytes, monkeypatch):
    want = [
        "local.get", "i32.load", "local.get", "local.get", "i32.const", "memory.copy",
        "local.get", "i32.atomic.load", "i32.add", "local.get", "i32.load", "i32.add",
        "local.get", "i32.load", "i32.add", "local.get", "i64.load", "i32.wrap_i64",
        "i32.add", "end",
    ]  # fmt: skip
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_without_librt"):
        row = facts.FuncFacts(*_ranges(mod, module_bytes)[0])
        assert row.mnemonics() == want, mod.__name__
        assert row.instr_count == len(want) == len(row.ops) // 2
        assert PREFIX_BASE[0xFC] + 10 in array("H", row.ops)  # memory.copy: an id >= 256


def test_memory_accesses_around_the_flat_bound_are_shared_values(module_bytes, monkeypatch):
    atomic = PREFIX_BASE[0xFE] + 0x10
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_without_librt"):
        first, second = (r[17] for r in _ranges(mod, module_bytes))
        assert first == [
            (0x28, 8, 4),
            (atomic, 4, WIDTH[atomic]),
            (0x28, 4095, 4),
            (0x28, 4096, 4),
            (0x29, 70000, 8),
        ], mod.__name__
        assert second == [(0x37, 4095, 8), (0x28, 4095, 4), (0x28, 4096, 4)]
        # one object per (op, offset, width) on both sides of the bound, across functions
        assert second[1] is first[2] and second[2] is first[3], mod.__name__


def test_corpus_module_same_facts_without_librt(monkeypatch):
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    got = [
        _ranges(mod, data)
        for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_without_librt")
    ]
    assert len(got[0]) > 1000
    assert all(g == got[0] for g in got[1:])
