"""Lifter fixes found by running whole programs natively (benchmarks/runnable.py).

C leaves the order of a call's arguments (and of an operator's operands) unspecified, wasm
evaluates left to right: a memory or global read that comes after a call in wasm must not
share one C expression with that call (gcc evaluates ``use(set(1), *(M + 8))`` right to
left and read the memory before ``set`` wrote it; Lua 5.4's ``print`` printed truncated
strings). The read now follows the call, spilled to a temporary.

A frame struct whose union holds a byte array at a later offset padded it with
``uint8_t pad_local_18[4][4]`` (16 bytes, not 4): every later slot moved, and SQLite said
"database disk image is malformed". The padding is now ``pad_local_18[4]``.

An ``if``/``else`` whose then-branch falls through and whose else-branch branches away
(``br`` back to a loop) left the code after it for dead: the loop never ended and its
result was never assigned (SQLite 3.45 from emcc looped in sqlite3_exec).

A loop ending in ``if (c) continue; break;`` became ``do { ... } while (c);`` even when
that ``continue`` sat inside a still-open ``if (...) {`` (its condition and closing brace
were lost: LZ4 from emcc did not compile). The rewrite now needs the ``continue`` to be a
statement of the loop body itself."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from kbtool.lift import lift_module, prelude_path, prepare

wasmtime = pytest.importorskip("wasmtime")

WAT = """
(module
  (memory (export "memory") 1)
  (global $g (mut i32) (i32.const 5))
  (func $set (param i32) (result i32)
    (i32.store (i32.const 8) (i32.const 42))
    (global.set $g (i32.const 7))
    (local.get 0))
  (func $use (param i32 i32) (result i32)
    (i32.add (i32.mul (local.get 0) (i32.const 1000)) (local.get 1)))
  (func (export "arg_after_call") (result i32)
    (call $use (call $set (i32.const 1)) (i32.load (i32.const 8))))
  (func (export "global_after_call") (result i32)
    (call $use (call $set (i32.const 2)) (global.get $g)))
  (func (export "operand_after_call") (result i32)
    (i32.sub (call $set (i32.const 3)) (i32.load (i32.const 8)))))
"""


def _lifted():
    data = wasmtime.wat2wasm(WAT)
    lm = prepare(bytes(data))
    return bytes(data), lm, "".join(r.text + "\n" for r in lift_module(lm, workers=1))


def test_reads_after_a_call_are_not_folded_into_its_expression():
    _data, _lm, text = _lifted()
    # each call to set is its own statement (into a temporary) before the read
    spilled = re.findall(r"^\s*t\d+ = \w+\(([123])\);$", text, re.M)
    assert sorted(spilled) == ["1", "2", "3"], text


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_lifted_order_agrees_with_wasmtime(tmp_path, opt):
    data, lm, text = _lifted()
    names = {e.name: lm.func_c[e.index] for e in lm.module.exports if e.kind == "func"}
    g = lm.global_c[0]
    harness = [
        "#include <stdio.h>",
        "static uint8_t mem[65536]; uint8_t *M = mem;",
        "int32_t memory_size(void) { return 1; }",
        "int32_t memory_grow(int32_t n) { return -1; }",
        f"int32_t {g} = 5;",
        text,
        "int main(void) {",
    ]
    for name in ("arg_after_call", "global_after_call", "operand_after_call"):
        harness.append(f'  printf("%d\\n", {names[name]}());')
    harness.append("  return 0;\n}")
    src = tmp_path / "t.c"
    src.write_text("\n".join(harness))
    exe = tmp_path / "t"
    subprocess.run(
        ["gcc", opt, "-fwrapv", "-w", "-include", prelude_path(), str(src), "-o", str(exe)],
        check=True,
    )
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
    ex = inst.exports(store)
    want = []
    for name in ("arg_after_call", "global_after_call", "operand_after_call"):
        want.append(str(ex[name](store)))
    assert got == want == ["1042", "2007", "-39"]


FRAME_WAT = """
(module
  (memory (export "memory") 1)
  (global $sp (mut i32) (i32.const 4096))
  (func $fill (param i32) (i32.store8 (local.get 0) (i32.const 7)))
  (func $get (param i32) (result i32) (i32.load (local.get 0)))
  (func (export "frame") (result i32)
    (local $fp i32) (local $r i32)
    (global.set $sp (local.tee $fp (i32.sub (global.get $sp) (i32.const 48))))
    (i64.store offset=20 (local.get $fp) (i64.const 0x0102030405060708))
    (drop (i32.load offset=20 (local.get $fp)))
    (call $fill (i32.add (local.get $fp) (i32.const 24)))
    (i32.store offset=32 (local.get $fp) (i32.const 1000))
    (local.set $r (i32.add (call $get (i32.add (local.get $fp) (i32.const 32)))
                           (i32.and (call $get (i32.add (local.get $fp) (i32.const 24)))
                                    (i32.const 255))))
    (global.set $sp (i32.add (local.get $fp) (i32.const 48)))
    (local.get $r)))
"""


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_frame_union_with_an_array_keeps_later_slots_in_place(tmp_path):
    data = bytes(wasmtime.wat2wasm(FRAME_WAT))
    lm = prepare(data)
    text = "".join(r.text + "\n" for r in lift_module(lm, workers=1))
    assert "->local_20 = 1000;" in text  # the slot is named through the frame struct
    fn = next(lm.func_c[e.index] for e in lm.module.exports if e.name == "frame")
    src = tmp_path / "f.c"
    src.write_text(
        "\n".join(
            [
                "#include <stdio.h>",
                "static uint8_t mem[65536]; uint8_t *M = mem;",
                "int32_t memory_size(void) { return 1; }",
                "int32_t memory_grow(int32_t n) { return -1; }",
                f"int32_t {lm.global_c[0]} = 4096;",
                text,
                f'int main(void) {{ printf("%d\\n", {fn}()); return 0; }}',
            ]
        )
    )
    exe = tmp_path / "f"
    subprocess.run(
        ["gcc", "-O1", "-fwrapv", "-w", "-include", prelude_path(), str(src), "-o", str(exe)],
        check=True,
    )
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()
    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
    assert got == str(inst.exports(store)["frame"](store)) == "1007"


LOOP_WAT = """
(module
  (global $g (export "g") (mut i32) (i32.const 0))
  (func (export "loop_value") (param $n i32) (result i32)
    (local $i i32)
    (if (result i32) (i32.gt_s (local.get $n) (i32.const 0))
      (then
        (loop $l (result i32)
          (global.set $g (i32.add (global.get $g) (i32.const 1)))
          (if (result i32) (i32.eq (local.get $n) (local.tee $i (i32.add (local.get $i) (i32.const 1))))
            (then (local.get $n))
            (else (global.set $g (i32.add (global.get $g) (i32.const 100))) (br $l)))))
      (else (i32.const -1))))
  (func (export "loop_void") (param $n i32) (result i32)
    (local $i i32)
    (loop $l
      (if (i32.eq (local.get $n) (local.tee $i (i32.add (local.get $i) (i32.const 1))))
        (then (nop))
        (else (br $l))))
    (i32.mul (local.get $i) (i32.const 3))))
"""


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_if_else_whose_else_branches_away_falls_through(tmp_path):
    data = bytes(wasmtime.wat2wasm(LOOP_WAT))
    lm = prepare(data)
    text = "".join(r.text + "\n" for r in lift_module(lm, workers=1))
    fns = {e.name: lm.func_c[e.index] for e in lm.module.exports if e.kind == "func"}
    g = lm.global_c[0]
    calls = [("loop_value", n) for n in (-2, 1, 4)] + [("loop_void", n) for n in (1, 5)]
    src = tmp_path / "l.c"
    src.write_text(
        "\n".join(
            [
                "#include <stdio.h>",
                "uint8_t *M;",
                f"int32_t {g} = 0;",
                text,
                "int main(void) {",
                *(f'  {{ int r = {fns[f]}({n}); printf("%d %d\\n", r, {g}); }}' for f, n in calls),
                "  return 0;\n}",
            ]
        )
    )
    exe = tmp_path / "l"
    subprocess.run(
        ["gcc", "-O1", "-fwrapv", "-w", "-include", prelude_path(), str(src), "-o", str(exe)],
        check=True,
    )
    got = subprocess.run(
        [str(exe)], capture_output=True, text=True, check=True, timeout=20
    ).stdout.splitlines()
    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
    ex = inst.exports(store)
    want = []
    for f, n in calls:
        r = ex[f](store, n)
        want.append(f"{r} {ex['g'].value(store)}")
    assert got == want


DOWHILE_WAT = """
(module
  (memory 1)
  (data (i32.const 1003) "\\01")
  (global $g (export "g") (mut i32) (i32.const 0))
  (func (export "scan") (param $n i32) (param $lim i32) (result i32)
    (local $k i32) (local $j i32)
    (loop $l
      (block $b
        (local.set $j (local.get $k))
        (br_if $b (i32.le_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $lim)))
        (br_if $b (i32.ge_u (local.get $n) (local.get $j)))
        (br_if $l (i32.eq (i32.load8_u offset=1000 (i32.add (local.get $j) (local.get $lim)))
                          (i32.load8_u offset=2000 (i32.sub (local.get $k) (local.get $n)))))))
    (global.set $g (i32.mul (local.get $k) (i32.const 3)))
    (i32.add (global.get $g) (local.get $j))))
"""


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_continue_nested_in_an_if_keeps_its_braces(tmp_path):
    data = bytes(wasmtime.wat2wasm(DOWHILE_WAT))
    lm = prepare(data)
    text = "".join(r.text + "\n" for r in lift_module(lm, workers=1))
    fn = next(lm.func_c[e.index] for e in lm.module.exports if e.name == "scan")
    g = lm.global_c[0]
    calls = [(5, 0), (3, 2), (0, 0), (0, 3), (1, 0)]
    src = tmp_path / "d.c"
    src.write_text(
        "\n".join(
            [
                "#include <stdio.h>",
                "static uint8_t mem[65536]; uint8_t *M = mem;",
                f"int32_t {g} = 0;",
                text,
                "int main(void) {",
                "  mem[1003] = 1;",
                *(
                    f'  {{ int r = {fn}({n}, {lim}); printf("%d %d\\n", r, {g}); }}'
                    for n, lim in calls
                ),
                "  return 0;\n}",
            ]
        )
    )
    exe = tmp_path / "d"
    r = subprocess.run(
        ["gcc", "-O1", "-fwrapv", "-w", "-include", prelude_path(), str(src), "-o", str(exe)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr + text
    got = subprocess.run(
        [str(exe)], capture_output=True, text=True, check=True, timeout=20
    ).stdout.splitlines()
    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
    ex = inst.exports(store)
    want = [f"{ex['scan'](store, n, lim)} {ex['g'].value(store)}" for n, lim in calls]
    assert got == want
