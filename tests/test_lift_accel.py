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

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "lift"
COMPILED = active.load_compiled()
needs_compiled = pytest.mark.skipif(
    COMPILED is None, reason="compiled lifter not built (python -m kbtool.lift.accel build)"
)


def _modules(tmp: Path) -> dict[str, bytes]:
    mods = {
        "gc.wasm": (FIX / "gc.wasm").read_bytes(),
        "zstd-1.5.5.wasm": (ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes(),
    }
    if shutil.which("wat2wasm"):
        for wat in ("features.wat", "tees.wat"):
            out = tmp / wat.replace(".wat", ".wasm")
            subprocess.run(
                ["wat2wasm", "--enable-all", "--debug-names", str(FIX / wat), "-o", str(out)],
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
    monkeypatch.setattr(active, "SOURCE", src)
    monkeypatch.setattr(active, "STAMP", tmp_path / "_clifter.sha256")
    assert active.compiled_state() == "absent"
    (tmp_path / "_clifter.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    assert active.compiled_state() == "absent"  # no stamp: not a finished build
    (tmp_path / "_clifter.sha256").write_text("0" * 64 + "\n")
    assert active.compiled_state() == "stale"
    (tmp_path / "_clifter.sha256").write_text(active.source_digest() + "\n")
    assert active.compiled_state() == "ready"
    src.write_text("X = 2\n")  # the source changed after the build
    assert active.compiled_state() == "stale"
