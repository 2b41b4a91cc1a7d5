"""benchmarks/disasm_windows.py --smoke runs end to end: a real ``kbtool serve`` answers
every window of the demo KB's largest function and the figures are printed; a missing KB
is one line."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_disasm_windows_benchmark_smoke():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "disasm_windows.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    for step in ("first window, cold", "first past the first screen", "every warm window"):
        assert step in out.stdout
    assert "load average before" in out.stdout


def test_disasm_windows_benchmark_says_when_the_kb_is_missing(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "disasm_windows.py"),
            "--kb",
            str(tmp_path / "x.db"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode != 0 and "no KB at" in out.stderr and "Traceback" not in out.stderr
