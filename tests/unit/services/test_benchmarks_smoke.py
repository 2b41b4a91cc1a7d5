"""Every benchmark's ``--smoke`` mode runs (tiny input, no targets) and prints its figures.

A benchmark nobody runs rots; these keep each one working against today's code. Timing
targets are never checked here: they are what the full benchmark runs report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

NUMBER = r"\d[\d,]*(?:\.\d+)?"

# benchmark -> patterns its smoke output must contain (each a figure or a row of figures)
EXPECTED = {
    "decode": [
        rf"kbtool analyze_module \(workers=1, best of 1\): {NUMBER} s",
        rf"wasm-objdump -d > /dev/null: {NUMBER} s",
        r"cross-check: \d+/\d+ functions identical",
    ],
    "ingest": [rf"zstd-1\.5\.5\.wasm +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}"],
    "identity": [
        rf"tiny-1\.0\.0\.O2 -> tiny-1\.1\.0\.O2 +\d+ +\d+ +{NUMBER}%",
        rf"tiny-1\.1\.0\.Os -> tiny-1\.1\.0\.O2 +\d+ +\d+ +{NUMBER}%",
    ],
    "diff_accuracy": [
        rf"nearby +1\.0\.0\.O2 -> 1\.1\.0\.O2 +{NUMBER}%",
        rf"opt-level +1\.1\.0\.O2 -> 1\.1\.0\.Os +{NUMBER}%",
        r"all pairs: \d+ names reached",
    ],
    "matcher_accuracy": [
        rf"nearby +1\.0\.0\.O2 -> 1\.1\.0\.O2 +fuzzy +{NUMBER}%",
        rf"swapped +1\.1\.0\.O2 -> 1\.0\.0\.O2 +exact +{NUMBER}%",
    ],
    "glue": [r"cases: 21, malformed: 0", rf"keys +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}"],
    "mcp": [
        rf"get_symbol +\d+ +{NUMBER} +{NUMBER} +{NUMBER}",
        rf"propose_symbol +\d+ +{NUMBER}",
        rf"server start to initialized {NUMBER} ms",
    ],
    "tui": [
        rf"start -> first heatmap paint : {NUMBER} s",
        rf"move +per step: median +{NUMBER} ms",
        rf"peak RSS {NUMBER} MiB",
    ],
}


EXPECTED["ui_diff_lines"] = [
    rf"nearby +tiny-1\.0\.0\.O2 -> tiny-1\.1\.0\.O2 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}",
    r"modified functions explained \d+/\d+",
]
EXPECTED["diff_api"] = [
    rf"/api/diff +1->2 +stored +{NUMBER} +{NUMBER}",
    rf"/api/diff +2->1 +computed +{NUMBER} +{NUMBER}",
    rf"/api/diff +2->1 +after write +{NUMBER}",
]
EXPECTED["analyze_service"] = [r"ingest\s", r"\ball\s+\d+\s+\d+"]
EXPECTED["data_symbols"] = [
    rf"zstd-1\.5\.6\.Os\.stripped\.wasm +{NUMBER}% +{NUMBER}%",
    r"global names: \d+/\d+ written names right",
    rf"services\.data\.xrefs: \d+ calls, p50 {NUMBER} ms, p95 {NUMBER} ms",
]
EXPECTED["optlevels"] = [
    rf"tiny clang O2 -> Os +{NUMBER}% +{NUMBER}% +{NUMBER}%",
    r"TUNE all: \d+ names reached",
]
EXPECTED["interactive"] = [
    rf"TUI start +{NUMBER} +{NUMBER} +{NUMBER}",
    rf"open code \(largest\) +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}",
    rf"code page down +{NUMBER}",
    r"TUI full \(generation 2\) collections per step",
    rf"diff \(not stored\) +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}",
    rf"get_lifted_c \(largest\) +{NUMBER}",
    rf"wasm-objdump -d +{NUMBER}",
    rf"zstd-1\.5\.6\.wasm +{NUMBER} +{NUMBER} +\d+ +{NUMBER} +{NUMBER}",
    r"machine: load average",
]
EXPECTED["ingest_release"] = [
    rf"demo zstd 1\.5\.5 -> 1\.5\.6 +after +wall +{NUMBER} s +cpu +{NUMBER} s",
]
EXPECTED["mcp_startup"] = [
    rf"kbtool mcp, spawn to the tools/list answer: {NUMBER} s",
    rf'python -c "import mcp.server": +{NUMBER} s',
]
EXPECTED["lookalike"] = [rf"wat v1 -> v2 +{NUMBER}% +{NUMBER}%", rf"wat v2 -> v1 +{NUMBER}%"]
EXPECTED["runnable"] = [
    rf"prog clang O2 +\d+ +{NUMBER} +{NUMBER} +ok +(\d+)/\1 ",
    r"programs built: 1/1; runs identical \(stdout \+ exit status\): (\d+)/\1 \(100\.0%\)",
]


def test_every_owned_benchmark_is_listed():
    """A new benchmark script gets a smoke run here (or is listed as run elsewhere)."""
    elsewhere = {  # smoke-tested by their owners' test modules
        "agents",
        "agent_pass",  # tests/unit/agents/test_agent_pass.py
        "code",  # tests/surface/cli/test_code_bench.py
        "analysis",
        "gosyms",
        "lift",
        "fuzz",  # tests/unit/wasm/test_wasm_hardening.py
        "fuzz_cli",  # tests/surface/cli/test_output_paths.py
        "fuzz_provider",  # tests/unit/agents/test_fuzz_provider.py
        "crafted",  # tests/unit/wasm/test_wasm_hardening.py
        "lineage",  # tests/unit/services/test_lineage.py
        "http",
        "web_api",
        "functions_table",  # tests/surface/tui/test_nav_functions.py
        "deep",  # tests/unit/agents/test_deep_provider.py
        "mcp_bounds",  # tests/surface/mcp/test_mcp_bounds.py
        "refusal_growth",  # tests/unit/kb/test_refusal_bounds.py
        "knowledge",  # tests/unit/services/test_knowledge_bench.py
        "diff_unstored",  # tests/unit/services/test_diff_unstored_bench.py
        "studio_page",  # tests/surface/web/test_studio_page_benchmark.py
        "prepare_cold",  # tests/unit/services/test_prepare_cold_benchmark.py
        "data_refs_layouts",  # tests/unit/kb/test_data_refs_layouts_bench.py
        "disasm_windows",  # tests/unit/services/test_disasm_windows_benchmark.py
    }
    # helpers, and the corpus builder programs.py (it downloads sources: not a smoke run)
    # diff_triage builds its release pairs from downloaded sources too (run by hand)
    helpers = {
        "__init__",
        "corpus_pairs",
        "smoke_corpus",
        "programs",
        "diff_triage",
        "name_scoring",
        "interactive_common",  # interactive.py's modules (run by its smoke test)
        "interactive_servers",
        "interactive_ingest",
        "interactive_tui",  # the TUI child process
        "mcp_ts_client",  # node + npm's TypeScript MCP SDK (run by hand, like diff_triage)
    }
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    assert scripts - elsewhere - helpers == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_smoke(name: str, tmp_path: Path) -> None:
    if name == "mcp":
        pytest.importorskip("mcp")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for pattern in EXPECTED[name]:
        assert re.search(pattern, out.stdout), (pattern, out.stdout)
