"""A scaled index kept in a local and added to a table's address in code (issue 28, point 5):
``local.tee 2 (i32.shl (i + j) 1)`` then ``+ 1040`` reads ``tbl[(l2 = (i + j) << 1) >> 1]``
and l2 keeps the byte offset the wasm stores in it, so a later ``l2 + 1060`` (a second table
read with the same index, as lemon's yy_find_shift_action does: SQLite's parser) reads the
same element. Before, the lifted C read ``tbl[l2 = i + j]`` and then ``act[l2 >> 1]``: the
SQL shell said ``near "1": syntax error`` for ``SELECT 1;``. Checked on a wat module (lifted
C vs wasmtime, through ctypes) and end to end on a C program built for wasm32-wasi
(``kbtool code --runnable`` + make vs wasmtime)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys

import pytest

from benchmarks.runnable import Case, WasmtimeRunner, run_native
from kbtool.lift import lift_module, prelude_path, prepare
from kbtool.lift.names import Names
from tests.support.lift_sem import runtime_c
from tests.support.paths import FIXTURES

wasmtime = pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)

WAT = r"""
(module
  (memory (export "memory") 1)
  (data (i32.const 1040) "\01\00\02\00\03\00\04\00\05\00\06\00\07\00\08\00")
  (data (i32.const 1060) "\10\00\20\00\30\00\40\00\50\00\60\00\70\00\80\00")
  (func $pair (export "pair") (param i32 i32) (result i32) (local i32)
    (if (result i32)
      (i32.eq
        (i32.load16_u
          (i32.add
            (local.tee 2 (i32.shl (i32.add (i32.and (local.get 0) (i32.const 3))
                                           (i32.and (local.get 1) (i32.const 3)))
                                  (i32.const 1)))
            (i32.const 1040)))
        (i32.const 3))
      (then (i32.load16_u (i32.add (local.get 2) (i32.const 1060))))
      (else (local.get 2))))
  (func $row (export "row") (param i32) (result i32) (local i32)
    (i32.add
      (i32.load16_u (i32.add (local.tee 1 (i32.shl (i32.and (local.get 0) (i32.const 7))
                                                   (i32.const 1)))
                             (i32.const 1040)))
      (i32.load16_u (i32.add (local.get 1) (i32.const 1060)))))
)
"""
ITEMS = [(1040, 16, "tbl", None), (1060, 16, "act", None)]


def test_index_assigned_in_a_sum_address_keeps_the_byte_offset(tmp_path):
    src = tmp_path / "t.wat"
    src.write_text(WAT)
    wasm = tmp_path / "t.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(wasm)], check=True)
    data = wasm.read_bytes()
    lm = prepare(data, Names(functions={}, data=list(ITEMS)))
    fi = {e.name: e.index for e in lm.module.exports if e.kind == "func"}
    c = {n: r.text for r in lift_module(lm) for n, i in fi.items() if i == r.func_index}
    assert "tbl[(l2 = ((p0 & 3) + (p1 & 3)) << 1) >> 1]" in c["pair"], c["pair"]
    assert "act[l2 >> 1]" in c["pair"], c["pair"]
    assert "tbl[l2 = " not in c["pair"] and "tbl[l1 = " not in c["row"], c["row"]
    lifted = tmp_path / "lifted.c"
    lifted.write_text("".join(c.values()) + runtime_c(lm))
    lib = tmp_path / "lifted.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-fwrapv", "-fno-strict-aliasing", "-w"]
    subprocess.run([*cmd, "-include", prelude_path(), str(lifted), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    so.kb_init()
    store = wasmtime.Store()
    ex = wasmtime.Instance(store, wasmtime.Module(store.engine, data), []).exports(store)
    for name, nargs in (("pair", 2), ("row", 1)):
        f = getattr(so, lm.func_c[fi[name]])
        f.restype = ctypes.c_int32
        f.argtypes = [ctypes.c_int32] * nargs
        for a in range(8):
            for b in range(8 if nargs == 2 else 1):
                args = [a, b][:nargs]
                assert f(*args) == ex[name](store, *args), (name, args)


def _kb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("make")), reason="needs clang and make"
)
def test_parser_table_program_runs_like_wasmtime(tmp_path):
    wasm = tmp_path / "tables.wasm"
    b = subprocess.run(
        ["clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2"]
        + [str(FIXTURES / "runnable" / "tables.c"), "-o", str(wasm)],
        capture_output=True,
        text=True,
    )
    if b.returncode:
        pytest.skip("clang cannot build wasm32-wasi programs here (wasi-libc, compiler-rt)")
    db, out = str(tmp_path / "kb.db"), tmp_path / "c"
    assert _kb("--db", db, "ingest", str(wasm)).returncode == 0
    r = _kb("--db", db, "code", "1", "--all", "--runnable", "-o", str(out))
    assert r.returncode == 0, r.stderr
    m = subprocess.run(["make", "-s", "-C", str(out), "OPT=-O0"], capture_output=True, text=True)
    assert m.returncode == 0, m.stderr[-2000:]
    ref = WasmtimeRunner(wasm.read_bytes())
    for args in ([], ["hello world"], ["SELECT 1;"], ["\x01\x02\x03\x04\x05\x06\x07"]):
        a, w = run_native(out / "program", Case(args)), ref.run(Case(args))
        assert (a.code, a.stdout) == (w.code, w.stdout), (args, a.stdout, w.stdout)
