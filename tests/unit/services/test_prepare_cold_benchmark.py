"""benchmarks/prepare_cold.py --smoke runs end to end: a fresh process prepares the demo KB's
first version for the code views and reports its wall and CPU time and stages."""

from __future__ import annotations

import json

from tests.support.bench import run_benchmark


def test_prepare_cold_benchmark_smoke():
    out = run_benchmark("prepare_cold", "--smoke", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["runs"] == 1 and res["version"] == 1
    assert res["wall"]["p50"] > 0 and res["cpu"]["max"] >= res["cpu"]["p50"] > 0
    assert {"_parsed", "_data_names", "identity_rows", "prepare"} <= set(res["stages"])


def test_prepare_cold_benchmark_says_when_the_kb_is_missing(tmp_path):
    out = run_benchmark("prepare_cold", "--kb", str(tmp_path / "x.db"), timeout=60)
    assert out.returncode != 0
    assert "no KB at" in out.stderr and "Traceback" not in out.stderr
