"""benchmarks/data_refs_layouts.py --smoke runs end to end: the demo module's data_refs rows
are written in every candidate layout, each timed, sized and checked to answer the query
layer's two lookups exactly as the schema-9 table does (the KB's packed tables too)."""

from __future__ import annotations

import json

from tests.support.bench import run_benchmark


def test_data_refs_layouts_smoke_answers_the_same_in_every_layout():
    out = run_benchmark("data_refs_layouts", "--smoke", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["module"] == "zstd-1.5.5.wasm" and res["rows"] > 100
    layouts = res["layouts"]
    assert set(layouts) == {"schema", "codes", "no_func_index", "clustered", "blobs", "packed"}
    for r in layouts.values():
        assert r["same_answers"] is True
        assert r["bytes"] > 0 and r["total_s"] >= r["write_s"] >= 0


def test_data_refs_layouts_says_when_the_module_is_missing(tmp_path):
    out = run_benchmark("data_refs_layouts", "--file", str(tmp_path / "none.wasm"), timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"error: no such module: {tmp_path / 'none.wasm'}"]
