"""The optional mypyc-compiled lifter (``python -m kbtool.lift.accel build``).

When the compiled module is built (and matches today's ``lifter.py``) its output equals the
pure lifter's, function by function, on fixture modules and the demo zstd build. Without a
build those comparisons skip; the choice of path (absent / stale / ready, ``KBTOOL_LIFT``)
is tested either way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.lift import active, prepare
from tests.support.paths import ROOT

FIX = ROOT / "tests" / "fixtures" / "lift"
COMPILED = active.load_compiled()
needs_compiled = pytest.mark.skipif(
    COMPILED is None, reason="compiled lifter not built (python -m kbtool.lift.accel build)"
)


# shapes the fixtures above miss (a v128.const once crashed only the compiled path)
EXTRA_WAT = """(module
  (type $bin (func (param i32 i32) (result i32)))
  (memory 1) (table 2 funcref) (elem (i32.const 0) $add $pick)
  (global $g (mut i64) (i64.const -5))
  (func $add (type $bin) (i32.add (local.get 0) (local.get 1)))
  (func $pick (type $bin) (select (local.get 0) (local.get 1) (i32.lt_s (local.get 0) (i32.const 3))))
  (func $vec (param i32) (result i32)
    (v128.store (local.get 0) (i32x4.add (v128.load (local.get 0))
      (v128.const i32x4 1 -2 0x7fffffff 0x80000000)))
    (i32x4.extract_lane 3 (v128.const i8x16 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)))
  (func $consts (result f64)
    (f64.add (f64.const nan) (f64.promote_f32 (f32.add (f32.const -inf) (f32.const 0x1p-149)))))
  (func $two (param i64) (result i64 i32)
    (i64.mul (local.get 0) (i64.const -9223372036854775808)) (i32.wrap_i64 (global.get $g)))
  (func $sw (param i32) (result i32) (local i32)
    (block $d (block $c (block $b (block $a
      (br_table $a $b $c $d (local.get 0)))
      (local.set 1 (i32.const 10)) (br $d))
      (local.set 1 (call_indirect (type $bin) (local.get 0) (i32.const 2) (i32.const 1))) (br $d))
      (loop $l (local.set 1 (local.tee 0 (i32.sub (local.get 0) (i32.const 1))))
        (br_if $l (i32.gt_s (local.get 0) (i32.const 0)))))
    (if (result i32) (local.get 1) (then (call $add (local.get 1) (i32.const 1)))
      (else (call $two (i64.const 7)) (drop) (drop) (i32.const -1))))
)
"""


def _modules(tmp: Path) -> dict[str, bytes]:
    mods = {
        "gc.wasm": (FIX / "gc.wasm").read_bytes(),
        "zstd-1.5.5.wasm": (ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes(),
    }
    if shutil.which("wat2wasm"):
        (tmp / "extra.wat").write_text(EXTRA_WAT)
        for wat in (FIX / "features.wat", FIX / "tees.wat", tmp / "extra.wat"):
            out = tmp / wat.name.replace(".wat", ".wasm")
            subprocess.run(
                ["wat2wasm", "--enable-all", "--debug-names", str(wat), "-o", str(out)],
                check=True,
            )
            mods[out.name] = out.read_bytes()
    return mods


def _same(a, b) -> bool:
    fields = ("instructions", "lines", "body_lines", "gotos", "labels", "max_depth", "temps")
    return (
        a.func_index == b.func_index
        and a.text == b.text
        and a.truncated == b.truncated
        and a.reason == b.reason
        and all(getattr(a.stats, f) == getattr(b.stats, f) for f in fields)
    )


@needs_compiled
def test_compiled_output_equals_pure(tmp_path):
    pure = active.load_pure()
    assert active.is_compiled(COMPILED) and not active.is_compiled(pure)
    for name, data in _modules(tmp_path).items():
        lm = prepare(data)
        n = 0
        for fi in range(lm.module.num_functions):
            a = pure.lift_function(lm, fi)
            b = COMPILED.lift_function(lm, fi)
            assert _same(a, b), f"{name} function {fi} differs"
            n += not a.truncated
        assert n > 0, name


@needs_compiled
def test_compiled_budget_placeholder_equals_pure():
    """The budget path (a placeholder instead of a body) is the same in both."""
    lm = prepare((ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes())
    m = lm.module
    big = max(
        range(m.num_func_imports, m.num_functions),
        key=lambda i: m.code[i - m.num_func_imports][1] - m.code[i - m.num_func_imports][0],
    )
    a = active.load_pure().lift_function(lm, big, max_chars=200)
    b = COMPILED.lift_function(lm, big, max_chars=200)
    assert a.truncated and _same(a, b)


def _path_in_child(env_value: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(active.ENV, None)
    if env_value is not None:
        env[active.ENV] = env_value
    return subprocess.run(
        [sys.executable, "-c", "import kbtool.lift as k; print(k.LIFTER_PATH)"],
        capture_output=True,
        text=True,
        env=env,
    )


def test_env_pure_forces_pure_path():
    p = _path_in_child("pure")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "pure"


def test_default_path_follows_build_state():
    p = _path_in_child(None)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ("compiled" if COMPILED is not None else "pure")


def test_env_compiled_without_build_is_a_clear_error():
    if COMPILED is not None:
        pytest.skip("compiled lifter is built")
    p = _path_in_child("compiled")
    assert p.returncode != 0
    assert "python -m kbtool.lift.accel build" in p.stderr


def test_build_state_absent_stale_ready(tmp_path, monkeypatch):
    src = tmp_path / "lifter.py"
    src.write_text("X = 1\n")
    monkeypatch.setattr(active, "HERE", tmp_path)
    monkeypatch.setattr(active, "STAMP", tmp_path / "_clifter.sha256")
    assert active.compiled_state() == "absent"
    import importlib.machinery

    (tmp_path / f"_clifter{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert active.compiled_state() == "absent"  # no stamp: not a finished build
    (tmp_path / "_clifter.sha256").write_text("0" * 64 + "\n")
    assert active.compiled_state() == "stale"
    (tmp_path / "_clifter.sha256").write_text(active.source_digest() + "\n")
    assert active.compiled_state() == "ready"
    src.write_text("X = 2\n")  # the source changed after the build
    assert active.compiled_state() == "stale"


def test_a_type_error_in_the_compiled_lifter_falls_back_to_pure(tmp_path):
    """mypyc checks types at run time: a shape no test met may fail only compiled; that
    function is then lifted by the pure lifter instead of failing the caller."""
    import types

    lm = prepare((ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes())
    pure = active.load_pure()

    def broken(_lm, _index, **_kw):
        raise TypeError("str object expected; got tuple")

    wrapped = active._with_pure_fallback(types.SimpleNamespace(lift_function=broken))
    index = lm.module.num_func_imports
    got = wrapped(lm, index)
    want = pure.lift_function(lm, index)
    assert (got.text, got.truncated) == (want.text, want.truncated) and not got.truncated
