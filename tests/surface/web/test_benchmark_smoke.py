"""``benchmarks/web_api.py --smoke`` runs end to end (as a script: nothing shadows the stdlib)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.web import ROOT, env


def test_web_api_benchmark_smoke():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "web_api.py"), "--smoke", "--json"],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    assert r["smoke"] is True and r["kb_unchanged"] is True
    assert r["functions"]["rows"] == r["kb"]["defined"] == 300
    assert 0 < r["kb"]["named"] < 300
    assert "datasette_median_ms" in r["functions"] or r["functions"]["datasette"] == "not installed"
    for key in ("uvicorn_median_ms", "before_median_ms", "kbtool_median_ms"):
        assert r["keepalive"][key] > 0
    for key in ("load_search", "load_coverage"):
        assert r[key]["errors"] == 0 and r[key]["requests"] > 0
    assert r["browser"] == {"skipped": "--smoke"}
