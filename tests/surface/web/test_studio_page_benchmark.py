"""``benchmarks/studio_page.py --smoke``: the studio's first screen timed in real Chromium on
a real ``kbtool serve`` (the demo KB, one run) prints every step with its figures, the
dashboard's first paints too."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT
from tests.support.web import BROWSER_MARKS

pytestmark = BROWSER_MARKS

NUMBER = r"\d+(?:\.\d+)?"
STEPS = (
    "open on the largest (first code)",
    "open on the largest (callers)",
    "C view, new version (first screen)",
    "C view, new version (C)",
    "dashboard heatmap (newest)",
    "dashboard function (largest, first code)",
)


def test_smoke(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "studio_page.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    for step in STEPS:
        assert re.search(rf"{re.escape(step)} +{NUMBER} +{NUMBER} +{NUMBER}", out.stdout), (
            out.stdout
        )
    assert "machine: load average" in out.stdout
