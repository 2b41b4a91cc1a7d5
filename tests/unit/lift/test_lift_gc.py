"""kbtool.lift on the GC proposal and br_on_*: prelude helper calls with the ops' stack
effects, br_on_null / br_on_non_null / br_on_cast[_fail] as conditional breaks, and the
output compiles with the prelude. Fixture: tests/fixtures/lift/gc.wat, assembled into the
committed gc.wasm by build_gc.sh (wat2wasm 1.0.42 has no GC support)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.lift import lift_function, prelude_path, prepare
from kbtool.lift.gctypes import gc_types
from tests.support.paths import FIXTURES

FIX = FIXTURES / "lift"


@pytest.fixture(scope="module")
def gc():
    lm = prepare((FIX / "gc.wasm").read_bytes())
    texts = {lm.names.functions[i]: lift_function(lm, i) for i in range(lm.module.num_functions)}
    return lm, texts


def test_fixture_is_current():
    if not shutil.which("wasm-tools"):
        pytest.skip("needs wasm-tools")
    out = subprocess.run(
        ["wasm-tools", "parse", str(FIX / "gc.wat")], capture_output=True, check=True
    ).stdout
    assert out == (FIX / "gc.wasm").read_bytes()


def test_gc_types_read_fields(gc):
    lm, _ = gc
    assert gc_types(lm.data, lm.module)[:4] == [
        ("struct", ["i32", "i64", "i8"]),
        ("array", "i32"),
        ("array", "i8"),
        ("array", "funcref"),
    ]


def test_every_gc_function_lifts(gc):
    _, texts = gc
    assert {n for n, r in texts.items() if r.truncated} == set()


def test_struct_and_array_ops_are_helper_calls(gc):
    _, t = gc
    assert "return struct_new(0, p0, p1, 255);" in t["mk"].text
    assert "return struct_new_default(0);" in t["mk_default"].text
    f = t["fields"].text
    assert "struct_set_i32(p, 0, 0, 5);" in f and "struct_set_i64(p, 0, 1, 6LL);" in f
    assert "struct_get_i32(p, 0, 0) + (struct_get_s(p, 0, 2) + struct_get_u(p, 0, 2))" in f
    a = t["arrays"].text
    for s in (
        "a = array_new_i32(1, 1, n);",
        "array_set_i32(a, 1, 0, 9);",
        "array_fill_i32(a, 1, 1, 8, 2);",
        "array_copy(1, 1, a, 0, a, 1, 1);",
        "b = array_new_data(2, 0, 0, 4);",
        "array_init_data(2, 0, b, 0, 1, 2);",
        "array_new_fixed(1, 3, 1, 2, 3);",
        "return array_len(a) + (array_get_i32(a, 1, 0) + (array_get_s(b, 2, 0)",
    ):
        assert s in a, s
    x = t["tests"].text
    assert "ref_cast(p0, 0, 1);" in x  # a dropped cast still traps
    assert (
        "ref_test(p0, 0, 0) + (ref_test(p0, HT_I31, 1) + i31_get_s(ref_cast(p0, HT_I31, 0)))" in x
    )


def test_br_on_ops_are_conditional_breaks(gc):
    _, t = gc
    assert "if (p0 == REF_NULL) return 7;" in t["getx"].text
    assert "return struct_get_i32(p0, 0, 0);" in t["getx"].text
    # br_on_null leaves the value below the reference for the fall-through path
    assert "if (p0 == REF_NULL) return 7;\n    r1 = 7 + 1;" in t["nullval"].text
    nn = t["nonnull"].text
    assert "if (p0 != REF_NULL) return t2;" in nn and "r1 = ref_i31(3);" in nn
    c = t["cast"].text
    # the branch carries the reference in the block's result variable
    assert "r1 = t2;\n    if (ref_test(p0, 0, 0)) break;\n    return -1;" in c
    assert "return struct_get_i32(r1, 0, 0);" in c
    cf = t["castfail"].text
    assert "if (!ref_test(p0, 0, 1)) break;" in cf and "return t2 == REF_NULL;" in cf


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_gc_output_compiles(gc, tmp_path):
    _, t = gc
    src = tmp_path / "gc.c"
    src.write_text("".join(r.text for r in t.values()))
    p = subprocess.run(
        ["gcc", "-fsyntax-only", "-fwrapv", "-include", prelude_path(), str(src)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
