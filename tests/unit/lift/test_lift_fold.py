"""kbtool.lift folds ``local.tee`` into expressions: run the tees.wat fixture (tees in
conditions, re-read, discarded by a branch, in select arms, chained, overwritten, around
stores, in a loop condition) with wasmtime and as lifted C on the same inputs."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from kbtool.lift import lift_module, prelude_path, prepare
from tests.support.paths import FIXTURES

FIX = FIXTURES / "lift"
wasmtime = pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)
INPUTS = [0, 1, -1, 2, 9, 10, 11, 37, -100, 1000, 0x7FFFFFFF, -0x80000000]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tees")
    wasm = tmp / "tees.wasm"
    subprocess.run(["wat2wasm", "--enable-all", str(FIX / "tees.wat"), "-o", str(wasm)], check=True)
    data = wasm.read_bytes()
    lm = prepare(data)
    results = list(lift_module(lm, workers=1))
    assert not [r.func_index for r in results if r.truncated]
    m = lm.module
    runtime = [
        f"static uint8_t kb_mem[{m.memories[0].min * 65536}];",
        "uint8_t *M = kb_mem;",
        f"int32_t memory_size(void) {{ return {m.memories[0].min}; }}",
        "int32_t memory_grow(int32_t n) { return -1; }",
        *(f"int32_t {lm.global_c[i]} = {g.init};" for i, g in enumerate(m.globals)),
        "void kb_reset(void) { "
        + " ".join(f"{lm.global_c[i]} = {g.init};" for i, g in enumerate(m.globals))
        + " }",
    ]
    src = tmp / "lifted.c"
    src.write_text("".join(r.text for r in results) + "\n".join(runtime) + "\n")
    lib = tmp / "lifted.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-fwrapv", "-Wall", "-Werror=sequence-point"]
    cmd += ["-include", prelude_path(), str(src), "-o", str(lib)]
    subprocess.run(cmd, check=True, capture_output=True)
    return data, lm, ctypes.CDLL(str(lib)), src.read_text()


def test_folded_tees_agree_with_wasmtime(built):
    data, lm, so, _text = built
    m = lm.module
    checked = 0
    for e in m.exports:
        if e.kind != "func":
            continue
        t = m.func_type(e.index)
        cf = getattr(so, lm.func_c[e.index])
        cf.argtypes = [ctypes.c_int32] * len(t.params)
        cf.restype = ctypes.c_int32
        for k, a in enumerate(INPUTS):
            args = [a, INPUTS[(k + 3) % len(INPUTS)]][: len(t.params)]
            if e.name == "tee_loop":
                args = [a % 50]
            store = wasmtime.Store()
            inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
            want = inst.exports(store)[e.name](store, *args)
            so.kb_reset()
            assert cf(*args) == want, (e.name, args)
            checked += 1
    assert checked >= 9 * len(INPUTS)


def test_tees_fold_into_their_consumer(built):
    text = built[3]
    assert "if ((l1 = p0 + 1)) return l1 * 3;" in text  # condition of a br_if
    assert "= l1 = l2 = p0 << 2;" in text  # a chain of tees into a store
    assert "} while ((l1 = l1 + 1) < p0);" in text  # a loop condition
    # not folded where the local is read again before the consumer finishes
    assert "l1 = p0 * 7;\n  return l1 + l1;" in text
