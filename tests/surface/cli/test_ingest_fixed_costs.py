"""A first ingest's fixed costs (issue 30.4, session 27 S): ``import kbtool.cli`` loads no
front-end stack nor any service, and a first ingest never imports what only a later one
needs (the matcher child's pickle)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import DEMO_WASM, ROOT

HEAVY = {"rich", "typer", "click", "pydantic", "textual", "starlette", "uvicorn", "mcp", "numpy"}


def _python(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0", "KBTOOL_CODE_WARM": "0"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def _imported(importtime_stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    } - {"package"}


def test_importing_the_cli_loads_no_front_end_nor_service() -> None:
    r = _python("-X", "importtime", "-c", "import kbtool.cli")
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = _imported(r.stderr)
    assert "kbtool.cli" in loaded
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith(("kbtool.services", "kbtool.wasm"))}


def test_first_ingest_does_not_import_pickle(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    r = _python("-X", "importtime", "-m", "kbtool", "--db", db, "ingest", str(DEMO_WASM))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version 1" in r.stdout
    loaded = _imported(r.stderr)
    assert "kbtool.services.ingest_match" in loaded
    assert "pickle" not in loaded
