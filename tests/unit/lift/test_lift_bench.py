"""benchmarks/lift.py --smoke runs end to end and prints both tools' rows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


@pytest.mark.skipif(not shutil.which("wat2wasm"), reason="needs wat2wasm")
def test_lift_benchmark_smoke():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "lift.py"), "--smoke"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "features.wasm" in out and "kbtool.lift" in out and "wasm-decompile" in out
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("kbtool.lift"))
    assert row.split()[1] == "100.0"  # every fixture function passes gcc -fsyntax-only
    assert "on-demand lift_function" in out
