"""benchmarks/disasm_windows.py --smoke runs end to end: a real ``kbtool serve`` answers
every window of the demo KB's largest function and the figures are printed; a missing KB
is one line."""

from __future__ import annotations

from tests.support.bench import run_benchmark


def test_disasm_windows_benchmark_smoke():
    out = run_benchmark("disasm_windows", "--smoke")
    assert out.returncode == 0, out.stderr
    for step in ("first window, cold", "first past the first screen", "every warm window"):
        assert step in out.stdout
    assert "load average before" in out.stdout


def test_disasm_windows_benchmark_says_when_the_kb_is_missing(tmp_path):
    out = run_benchmark("disasm_windows", "--kb", str(tmp_path / "x.db"), timeout=60)
    assert out.returncode != 0 and "no KB at" in out.stderr and "Traceback" not in out.stderr
