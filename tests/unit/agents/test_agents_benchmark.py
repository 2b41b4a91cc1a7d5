"""benchmarks/agents.py --smoke runs end to end on one ground-truth pair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

GT = Path("/work/shared/corpus/gt")


@pytest.mark.skipif(
    not (GT / "zstd-1.5.6.O2.exports.stripped.wasm").exists(), reason="ground-truth corpus absent"
)
def test_agents_benchmark_smoke():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "agents.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "== smoke: zstd-1.5.6.O2.exports" in text
    assert "calibration" in text and "conf>=0.8" in text and "ms/1k" in text
    written = int(text.split(" written ", 1)[1].split()[0])
    assert written > 0
