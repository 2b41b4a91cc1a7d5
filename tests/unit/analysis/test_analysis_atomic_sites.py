"""Atomic sites read off the module decoder's facts equal a scan of the body, fences included."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.analysis.body import _atomic_sites_from_facts, _scan_atomic_sites, atomic_sites
from kbtool.wasm import analyze_module
from kbtool.wasm.opcodes import MNEMONICS

WAT = """
(module
  (memory 1 1 shared)
  (func $spin (param i32) (result i32)
    (loop $again
      local.get 0
      i32.const 0
      i32.const 1
      i32.atomic.rmw.cmpxchg offset=8
      br_if $again)
    atomic.fence
    local.get 0
    i32.const 1
    i32.atomic.rmw.add offset=4096
    drop
    local.get 0
    i32.const 0
    i64.const -1
    memory.atomic.wait32 offset=12
    drop
    local.get 0
    i32.load offset=16
    drop
    local.get 0
    i32.const 1
    memory.atomic.notify offset=12)
  (func $plain (param i32) (result i32)
    local.get 0
    i32.load offset=4))
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> bytes:
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    tmp: Path = tmp_path_factory.mktemp("atomics")
    (tmp / "m.wat").write_text(WAT)
    subprocess.run(
        ["wat2wasm", "--enable-threads", str(tmp / "m.wat"), "-o", str(tmp / "m.wasm")],
        check=True,
    )
    return (tmp / "m.wasm").read_bytes()


def test_sites_from_facts_equal_the_scan(module):
    a = analyze_module(module)
    spin = a.functions[0]
    from_facts = _atomic_sites_from_facts(spin)
    assert from_facts == _scan_atomic_sites(module, spin) == atomic_sites(module, spin)
    assert [(MNEMONICS[op], off) for op, off in from_facts] == [
        ("i32.atomic.rmw.cmpxchg", 8),
        ("atomic.fence", None),
        ("i32.atomic.rmw.add", 4096),
        ("memory.atomic.wait32", 12),
        ("memory.atomic.notify", 12),
    ]
    assert atomic_sites(module, a.functions[1]) == []


def test_facts_that_miss_a_site_fall_back_to_the_scan(module):
    a = analyze_module(module)
    spin = a.functions[0]
    spin.mem_ops = [m for m in spin.mem_ops if m[1] != 4096]  # as if the decoder lost one
    assert _atomic_sites_from_facts(spin) is None
    assert len(atomic_sites(module, spin)) == 5
