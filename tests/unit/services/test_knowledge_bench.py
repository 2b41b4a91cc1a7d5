"""``benchmarks/knowledge.py --smoke`` runs and prints its figures (carried shares, right and
wrong, the compile count)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT


def test_knowledge_benchmark_smoke(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "knowledge.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for kind in ("comment", "prototype", "local", "line"):
        assert re.search(rf"{kind} +\d+ +\d+ +\d+ +[\d.]+% +[\d.]+%", out.stdout), out.stdout
    assert re.search(r"compiles: (\d+)/\1 \(100\.0%\)", out.stdout), out.stdout
