"""Running a benchmark script as a user does (a subprocess from the checkout's root)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def run_benchmark(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python benchmarks/<name>.py ARGS`` from the repository root, output captured."""
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
