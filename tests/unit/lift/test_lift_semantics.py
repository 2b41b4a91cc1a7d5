"""Semantics of lifted C: compile tests/fixtures/lift/semantics.c to wasm with clang, lift every
exported function, build the lifted C with gcc into a shared library and compare return
values and the final linear memory against wasmtime running the wasm on the same inputs
(the harness: tests/support/lift_sem.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import lift_sem
from tests.support.paths import FIXTURES

FIX = FIXTURES / "lift"
wasmtime = pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)


@pytest.mark.parametrize(
    "opt",
    ["-O2", *(pytest.param(o, marks=pytest.mark.slow) for o in ("-O0", "-O1", "-Os", "-O3"))],
)
def test_lifted_c_agrees_with_wasmtime(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIX / "semantics.c").read_text(), opt, calls=24)
    assert len(r.c) >= 40
    print(f"semantics: {r.agree} calls agree, {len(r.mismatches)} differ over {len(r.c)} functions")
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
