"""A fresh ``kbtool ingest`` of a small module imports only what an ingest runs (issue 30.4:
most of such an ingest's CPU is the interpreter's start and the imports): no front-end, no
lifter, no agents, no Rich console, no diff or code-store services, not the knowledge half of
the gate, and not the pure decoder package beside its compiled twin. (The UI frameworks
themselves are checked by ``test_ingest_lean.py``.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbtool.wasm import active
from tests.support.paths import DEMO_WASM, ROOT

#: packages and modules a first version's plain ingest never runs (a prefix covers its
#: submodules)
NOT_ON_A_FIRST_INGEST = (
    "kbtool.tui",
    "kbtool.web",
    "kbtool.mcp",
    "kbtool.terminal",
    "kbtool.render",
    "kbtool.agents",
    "kbtool.lift",
    "kbtool.glue",
    "kbtool.commands.common",
    "kbtool.commands.consoles",
    "kbtool.services.diff",
    "kbtool.services.code_store",
    "kbtool.services.knowledge",
    "kbtool.services.knowledge_carry",
    "kbtool.services.knowledge_code",
    "kbtool.kb.gate_knowledge",
    "kbtool.kb.knowledge",
    "kbtool.kb.types",
    "sqlite_utils",
)


def _imported_by_fresh_ingest(tmp_path: Path) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0"}
    env.pop("KBTOOL_CODE_WARM", None)  # (as a user runs it)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbtool", "--db", str(tmp_path / "kb.db")]
        + ["ingest", str(DEMO_WASM)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version 1" in r.stdout
    return {
        line.split("|")[-1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _under(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_fresh_ingest_imports_nothing_it_does_not_run(tmp_path: Path) -> None:
    loaded = _imported_by_fresh_ingest(tmp_path)
    # the ingest's own path was imported (the list above is checked against a real run)
    assert {"kbtool.services.ingest", "kbtool.kb.gate", "kbtool.services.data"} <= loaded
    extra = sorted(m for m in loaded if _under(m, NOT_ON_A_FIRST_INGEST))
    assert not extra, f"a plain first ingest imported {extra}"
    if active.PATH == "compiled":  # the twin runs: its pure source is not even imported
        assert not {m for m in loaded if _under(m, {"kbtool.wasm.decoder"})}
