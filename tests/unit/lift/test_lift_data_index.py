"""Data tables indexed in the lifted C (issue 26): an index masked to a multiple of the
element size (``(x >> 6) & 12`` reads ``words[(x >> 8) & 3]``), a scaled index kept in a
local (``l1 = p0 << 2; ... words[l1 >> 2]``, also through sums, ``select`` and a reassigned
parameter, the table's address added in code), rows and columns (``r * 12 + (c << 2)``
reads ``tbl[r * 3 + c]``), an index assigned in the address (``words[(l1 = ..) >> 2]``),
an item read wider than it is (``counter``); a local that is
not a multiple of the element size where the access is (a loop steps it by 1) stays raw
memory. The C compiles with the prelude and computes what the wasm computes (gcc vs
wasmtime)."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import pytest

from kbtool.lift import lift_module, prelude_path, prepare
from kbtool.lift.names import Names
from tests.support.lift_sem import runtime_c

pytestmark = pytest.mark.skipif(
    shutil.which("wat2wasm") is None or shutil.which("gcc") is None, reason="needs wat2wasm and gcc"
)

WAT = r"""
(module
  (memory (export "memory") 1)
  (data (i32.const 1040) "\10\00\00\00\20\00\00\00\30\00\00\00\40\00\00\80\50\00\00\00")
  (data (i32.const 1060) "\07\01")
  (func $masked (export "masked") (param i32) (result i32)
    (i32.load offset=1040 (i32.and (i32.shr_u (local.get 0) (i32.const 6)) (i32.const 12))))
  (func $masked_plain (export "masked_plain") (param i32) (result i32)
    (i32.load offset=1040 (i32.and (local.get 0) (i32.const 12))))
  (func $kept (export "kept") (param i32) (result i32) (local i32)
    (local.set 1 (i32.shl (i32.and (local.get 0) (i32.const 3)) (i32.const 2)))
    (i32.add (i32.load offset=1040 (local.get 1)) (local.get 1)))
  (func $summed (export "summed") (param i32) (result i32) (local i32)
    (local.set 1
      (i32.add
        (i32.mul (i32.lt_u (local.get 0) (i32.const 2)) (i32.const 8))
        (select (i32.const 4) (i32.const 0) (i32.and (local.get 0) (i32.const 1)))))
    (i32.load offset=1040 (local.get 1)))
  (func $param (export "param") (param i32) (result i32)
    (local.set 0 (i32.mul (i32.and (local.get 0) (i32.const 1)) (i32.const 12)))
    (i32.load offset=1040 (local.get 0)))
  (func $added (export "added") (param i32) (result i32) (local i32)
    (local.set 1 (i32.shl (i32.and (local.get 0) (i32.const 1)) (i32.const 3)))
    (i32.load (i32.add (local.get 1) (i32.const 1040))))
  (func $grid (export "grid") (param i32) (result i32)
    (i32.load offset=1040
      (i32.add (i32.mul (i32.and (local.get 0) (i32.const 1)) (i32.const 12))
               (i32.shl (i32.and (i32.shr_u (local.get 0) (i32.const 1)) (i32.const 1))
                        (i32.const 2)))))
  (func $grid_added (export "grid_added") (param i32) (result i32)
    (i32.load
      (i32.add
        (i32.add (i32.mul (i32.and (local.get 0) (i32.const 1)) (i32.const 12))
                 (i32.shl (i32.and (i32.shr_u (local.get 0) (i32.const 2)) (i32.const 1))
                          (i32.const 2)))
        (i32.const 1040))))
  (func $teed (export "teed") (param i32) (result i32) (local i32)
    (if (result i32)
      (i32.load offset=1040 (local.tee 1 (i32.shl (i32.and (local.get 0) (i32.const 3))
                                                  (i32.const 2))))
      (then (local.get 1))
      (else (i32.const 7))))
  (func $teed_sum (export "teed_sum") (param i32) (result i32) (local i32)
    (if (result i32)
      (i32.load offset=1040
        (local.tee 1 (i32.add (i32.mul (i32.and (local.get 0) (i32.const 1)) (i32.const 8))
                              (i32.shl (i32.and (i32.shr_u (local.get 0) (i32.const 1))
                                                (i32.const 1))
                                       (i32.const 2)))))
      (then (local.get 1))
      (else (i32.const 7))))
  (func $pairs (export "pairs") (param i32) (result i32)
    (i32.load offset=1040
      (i32.add (i32.mul (i32.and (local.get 0) (i32.const 1)) (i32.const 4))
               (i32.shl (i32.and (i32.shr_u (local.get 0) (i32.const 1)) (i32.const 1))
                        (i32.const 3)))))
  (func $stepped (export "stepped") (param i32) (result i32) (local i32 i32)
    (local.set 1 (i32.shl (i32.and (local.get 0) (i32.const 1)) (i32.const 2)))
    (loop $l
      (local.set 2 (i32.add (local.get 2) (i32.load offset=1040 (local.get 1))))
      (local.set 1 (i32.add (local.get 1) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get 1) (i32.const 8))))
    (local.get 2))
  (func $wide (export "wide") (result i32)
    (i32.store (i32.const 1060) (i32.add (i32.load (i32.const 1060)) (i32.const 1)))
    (i32.load (i32.const 1060)))
)
"""
ITEMS = [(1040, 20, "words", None), (1060, 2, "counter", None)]


def _build(tmp_path):
    src = tmp_path / "i.wat"
    src.write_text(WAT)
    out = tmp_path / "i.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    data = out.read_bytes()
    lm = prepare(data, Names(functions={}, data=list(ITEMS)))
    fi = {e.name: e.index for e in lm.module.exports if e.kind == "func"}
    c = {name: r.text for r in lift_module(lm) for name, i in fi.items() if i == r.func_index}
    return data, lm, fi, c


def test_masked_and_kept_indexes_read_as_table_elements(tmp_path):
    _data, _lm, _fi, c = _build(tmp_path)
    assert "words[((uint32_t)p0 >> 8) & 3]" in c["masked"], c["masked"]
    assert "words[(p0 >> 2) & 3]" in c["masked_plain"], c["masked_plain"]
    assert "words[l1 >> 2]" in c["kept"], c["kept"]
    assert "words[l1 >> 2]" in c["summed"], c["summed"]
    assert "words[p0 >> 2]" in c["param"], c["param"]
    assert "words[l1 >> 2]" in c["added"], c["added"]  # the table's address added in code
    assert "words[(l1 = (p0 & 3) << 2) >> 2]" in c["teed"], c["teed"]  # assigned in place
    # a sum assigned in place keeps its value: the index divides the assignment's value
    assert re.search(r"words\[\(l1 = \(p0 & 1\) \* 8 \+ .*\) >> 2\] \? l1 : 7", c["teed_sum"])
    assert "words[p0 & 1 + " not in c["pairs"]
    assert "words[(p0 & 1) + ((((uint32_t)p0 >> 1) & 1) << 1)]" in c["pairs"], c["pairs"]
    # a row and a column: each term scaled by a multiple of the element size
    assert "words[(p0 & 1) * 3 + (((uint32_t)p0 >> 1) & 1)]" in c["grid"], c["grid"]
    assert "words[(p0 & 1) * 3 + (((uint32_t)p0 >> 2) & 1)]" in c["grid_added"], c["grid_added"]
    # stepped by 1 in the loop: not a multiple of 4 where the load reads it
    assert "words[" not in c["stepped"] and "ADDR(words)" in c["stepped"], c["stepped"]
    # a 2-byte item read as int32_t: still the object
    assert "counter = counter + 1;" in c["wide"] and "return counter;" in c["wide"], c["wide"]
    for name in (
        "masked",
        "kept",
        "summed",
        "param",
        "added",
        "grid",
        "grid_added",
        "teed",
        "wide",
    ):
        assert "*(int32_t *)(M + " not in c[name].split("{", 1)[1], (name, c[name])


def test_indexed_tables_compute_like_wasm(tmp_path):
    wasmtime = pytest.importorskip("wasmtime")
    data, lm, fi, c = _build(tmp_path)
    src = tmp_path / "lifted.c"
    src.write_text("".join(c.values()) + runtime_c(lm))
    lib = tmp_path / "lifted.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-fwrapv", "-fno-strict-aliasing", "-w"]
    subprocess.run([*cmd, "-include", prelude_path(), str(src), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    so.kb_init()
    store = wasmtime.Store()
    ex = wasmtime.Instance(store, wasmtime.Module(store.engine, data), []).exports(store)
    values = [0, 1, 2, 3, 5, 63, 64, 200, 777, 1000, -1, -64, 0x7FFFFFFF]
    calls = [
        (n, v)
        for n in (
            "masked",
            "masked_plain",
            "kept",
            "summed",
            "param",
            "added",
            "grid",
            "grid_added",
        )
        for v in values
    ]
    calls += [("stepped", v) for v in (0, 1, 2)] + [("wide", None)] * 3
    for name, arg in calls:
        f = getattr(so, lm.func_c[fi[name]])
        f.restype = ctypes.c_int32
        args = [] if arg is None else [arg]
        f.argtypes = [ctypes.c_int32] * len(args)
        assert f(*args) == ex[name](store, *args), (name, arg)
    mem = ex["memory"]
    size = mem.data_len(store)
    assert bytes(mem.read(store, 0, size)) == ctypes.string_at(
        ctypes.c_void_p.in_dll(so, "M").value, size
    )
