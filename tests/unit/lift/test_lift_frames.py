"""Shadow-stack frames as a struct of named slots (issue 28.3): clang's prologue
``SP = lN = SP - N`` gives the function a ``struct f_frame`` declared before it, and every
access at a constant offset from the frame base reads ``frame->local_0c``; the memory
semantics stay exact (the struct lies in linear memory at the frame base), checked with
gcc against wasmtime at -O0, -O1 and -O2."""

from __future__ import annotations

import re
import shutil

import pytest

from kbtool.lift import lift_function, prepare
from tests.support import lift_sem
from tests.support.paths import FIXTURES

pytest.importorskip("wasmtime")
FIX = FIXTURES / "lift"
needs_clang = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)
needs_wat = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)


@needs_clang
@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_frames_keep_semantics_and_read_as_slots(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIX / "frames.c").read_text(), opt=opt, calls=16)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    for name in ("buf_sum", "counter", "point", "table_pick", "mixed"):
        c = r.c[name]
        if name == "table_pick" and opt == "-O1":
            # the array is only reached through pointers derived from the frame base:
            # no slot, so neither struct nor frame pointer
            assert "_frame" not in c and "frame =" not in c, c
            continue
        assert f"struct __attribute__((packed)) {name}_frame {{" in c, c
        assert f"frame = (struct {name}_frame *)(M + " in c, c
        assert "frame->local_" in c, c
    # no frame where the function has none
    assert "_frame" not in r.c["scalar_only"] or opt == "-O0"


@needs_clang
def test_named_share_and_slot_types(tmp_path):
    src = tmp_path / "f.c"
    src.write_text((FIX / "frames.c").read_text())
    import subprocess

    wasm = tmp_path / "f.wasm"
    subprocess.run(
        [
            "clang",
            "--target=wasm32",
            "-O2",
            "-nostdlib",
            "-Wl,--no-entry",
            "-Wl,--export-all",
            "-o",
            str(wasm),
            str(src),
        ],
        check=True,
    )
    lm = prepare(wasm.read_bytes())
    slots = named = 0
    texts = {}
    for fi in range(lm.module.num_functions):
        res = lift_function(lm, fi)
        slots += res.stats.frame_slots
        named += res.stats.frame_named
        texts[lm.func_c[fi]] = res.text
    assert slots >= 40 and named == slots
    point = texts["point"]
    # the struct's members sit at their offsets: x, y at 8/12, the short, the char, the long long
    for decl in (
        "int32_t local_08;",
        "int32_t local_0c;",
        "int16_t local_10;",
        "int8_t local_12;",
        "int64_t local_18;",
        "uint8_t local_00[8];",
    ):
        assert decl in point, point
    # the escaping address stays the wasm address; the reads after the calls go through the struct
    # (the callee: `f3` unnamed, or its export name, `move` with clang 14)
    assert re.search(r"[A-Za-z_]\w*\(l2 \+ 8 /\* &local_08 \*/, ", point), point
    assert "= frame->local_18;" in point
    assert "*(int64_t *)(M + l2" not in point
    counter = texts["counter"]
    assert re.search(r"[A-Za-z_]\w*\(l2 \+ 12 /\* &local_0c \*/, p1\);", counter), counter


FRAME_WAT = """
(module
  (memory (export "memory") 1)
  (global $sp (mut i32) (i32.const 4096))
  ;; the frame base local is reused for another value after the epilogue: only the
  ;; accesses inside its region are frame slots
  (func (export "reuse") (param $a i32) (result i32) (local $f i32)
    (global.set $sp (local.tee $f (i32.sub (global.get $sp) (i32.const 16))))
    (i32.store offset=4 (local.get $f) (local.get $a))
    (i32.store8 offset=8 (local.get $f) (i32.const 200))
    (local.set $a (i32.add (i32.load offset=4 (local.get $f)) (i32.load8_u offset=8 (local.get $f))))
    (local.set $a (i32.add (local.get $a) (i32.load8_s offset=8 (local.get $f))))
    (global.set $sp (i32.add (local.get $f) (i32.const 16)))
    (local.set $f (i32.and (local.get $a) (i32.const 1020)))
    (i32.store offset=4 (local.get $f) (local.get $a))
    (i32.add (local.get $a) (i32.load offset=4 (local.get $f))))
  ;; a prologue inside a branch (shrink-wrapped): named only under it
  (func (export "wrapped") (param $a i32) (result i32) (local $f i32)
    (if (i32.gt_s (local.get $a) (i32.const 10))
      (then
        (global.set $sp (local.tee $f (i32.sub (global.get $sp) (i32.const 32))))
        (i64.store offset=16 (local.get $f) (i64.extend_i32_s (local.get $a)))
        (local.set $a (i32.wrap_i64 (i64.shl (i64.load offset=16 (local.get $f)) (i64.const 1))))
        (global.set $sp (i32.add (local.get $f) (i32.const 32)))))
    (local.get $a))
  (func $touch (param $p i32)
    (i32.store offset=4 (local.get $p) (i32.add (i32.load (local.get $p)) (i32.const 5))))
  ;; an address taken where no slot starts: a byte array up to the next slot
  (func (export "arr") (param $a i32) (result i32) (local $f i32)
    (global.set $sp (local.tee $f (i32.sub (global.get $sp) (i32.const 32))))
    (i32.store offset=4 (local.get $f) (local.get $a))
    (i32.store offset=20 (local.get $f) (i32.const 9))
    (call $touch (i32.add (local.get $f) (i32.const 8)))
    (local.set $a (i32.add (i32.load offset=4 (local.get $f)) (i32.load offset=20 (local.get $f))))
    (global.set $sp (i32.add (local.get $f) (i32.const 32)))
    (i32.add (local.get $a) (i32.load offset=12 (local.get $f))))
  ;; one slot seen as an i64 and as two i32 halves (a struct copied with one i64 store)
  (func (export "views") (param $a i64) (result i32) (local $f i32)
    (global.set $sp (local.tee $f (i32.sub (global.get $sp) (i32.const 16))))
    (i64.store offset=8 (local.get $f) (local.get $a))
    (i32.store offset=4 (local.get $f) (i32.const 7))
    (i32.add (i32.load offset=8 (local.get $f))
      (i32.add (i32.load offset=12 (local.get $f)) (i32.load offset=4 (local.get $f)))))
)
"""


@needs_wat
def test_frame_regions_from_wat(tmp_path):
    data = lift_sem.wat(tmp_path, FRAME_WAT)
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    reuse, wrapped = r.c["reuse"], r.c["wrapped"]
    assert "frame->local_04 = p0;" in reuse, reuse
    # a slot only stored to takes the type of its first load (no cast there); a read
    # with the other signedness goes through a cast, not raw memory
    assert "frame->local_08 = 200;" in reuse and " uint8_t local_08;" in reuse, reuse
    assert "(int8_t)frame->local_08" in reuse and "(uint8_t)frame" not in reuse, reuse
    # after the epilogue, l1 holds another value: raw memory again
    assert "L1->field_4 = p0;" in reuse and "#define L1 " in reuse, reuse
    assert "frame->local_10 = (int64_t)p0;" in wrapped, wrapped
    assert "uint8_t local_00[16];" in wrapped and "uint8_t local_18[8];" in wrapped, wrapped
    arr = r.c["arr"]
    assert "(l1 + 8 /* &local_08 */);" in arr, arr
    for decl in (
        " int32_t local_04;",
        " uint8_t local_08[4];",
        " int32_t local_0c;",
        " uint8_t local_10[4];",
        " int32_t local_14;",
        " uint8_t local_18[8];",
    ):
        assert decl in arr, arr
    views = r.c["views"]
    assert "frame->local_08 = p0;" in views, views
    assert "frame->local_08_i32 + (frame->local_0c + frame->local_04)" in views, views
    assert (
        "  union __attribute__((packed)) {\n    int64_t local_08;\n    int32_t local_08_i32;\n"
        in views
    )
    assert "struct __attribute__((packed)) { uint8_t pad_local_0c[4]; int32_t local_0c; };" in views
