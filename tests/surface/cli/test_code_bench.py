"""benchmarks/code.py --smoke runs and reports sane figures (no timing asserts)."""

from __future__ import annotations

import importlib.util
import json

from tests.support.paths import ROOT

BENCH = ROOT / "benchmarks" / "code.py"


def test_code_benchmark_smoke(capsys):
    spec = importlib.util.spec_from_file_location("bench_code", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--smoke", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["functions"] == 535 and r["sampled"] == 19 and r["truncated"] == 0
    assert r["sampled_lines"] > 19 and r["callgraph_nodes"] == 543 and r["callgraph_edges"] > 500
    assert 0 < r["median_s"] <= r["p90_s"] <= r["worst_s"]
