"""benchmarks/diff_unstored.py --smoke: the per-step figures of an unstored pair's diff and
the kept answer read back by a new process (issue 30, point 3)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.paths import BENCHMARKS

NUMBER = r"\d+\.\d+"


def test_smoke_prints_every_step() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "diff_unstored.py"), "--smoke"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "diff 2 -> 1 (not stored), demo KB" in out
    steps = ("pairing", "classification", "changelog", "kept: compute", "kept: read back")
    for step in (*steps, "prepared: background", "prepared: first ask"):
        assert re.search(rf"^  {step} +{NUMBER} +{NUMBER}$", out, re.M), step
    assert "fresh computation" in out and "goal < 250 ms" in out
