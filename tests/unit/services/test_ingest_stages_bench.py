"""benchmarks/ingest.py --stages: where one real `kbtool ingest` spends its CPU, stage by
stage, in a fresh process through the command line's own path (the demo release)."""

from __future__ import annotations

import json

from tests.support.bench import run_benchmark


def test_stages_of_a_first_ingest_add_up():
    out = run_benchmark("ingest", "--smoke", "--stages", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.strip().splitlines()
    m = json.loads(line)
    assert m["module"] == "zstd-1.5.5.wasm" and m["rc"] == 0 and m["missing"] == []
    spent = m["spent"]
    for stage in ("decode", "data model", "model SQL", "model (analysis)", "facts writes"):
        assert spent[stage] > 0, stage
    # nested stages inside their parent; a first version builds no matcher records
    assert spent["model SQL"] + spent["model (analysis)"] <= spent["data model"]
    assert "matcher records" not in spent
    top = sum(v for k, v in spent.items() if k not in ("model SQL", "model (analysis)", "data ids"))
    assert top <= m["ingest"] and m["startup"] + m["ingest"] + m["close"] <= m["total"] + 1e-6


def test_stages_table_names_every_stage():
    out = run_benchmark("ingest", "--smoke", "--stages", timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for label in ("start-up (interpreter, imports)", "decode", "model SQL", "checkpoint at exit"):
        assert label in text
    assert "CPU in the process" in text
