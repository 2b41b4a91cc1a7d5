"""A first ingest's fixed costs (issue 30.4, session 27 S): ``import kbtool.cli`` loads no
front-end stack nor any service, and a first ingest never imports what only a later one
needs (the matcher child's pickle, the matcher itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import DEMO_WASM, ROOT

HEAVY = {"rich", "typer", "click", "pydantic", "textual", "starlette", "uvicorn", "mcp", "numpy"}


def _modules_after(code: str) -> set[str]:
    """The names in ``sys.modules`` of a fresh interpreter once ``code`` has run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0", "KBTOOL_CODE_WARM": "0"}
    r = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return set(r.stdout.splitlines())


def test_importing_the_cli_loads_no_front_end_nor_service() -> None:
    loaded = _modules_after("import kbtool.cli")
    assert "kbtool.cli" in loaded
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith(("kbtool.services", "kbtool.wasm"))}


def test_first_ingest_imports_neither_pickle_nor_the_matcher(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    loaded = _modules_after(
        f"from kbtool.cli import main\nassert main(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}]) == 0"
    )
    assert "kbtool.services.ingest_match" in loaded
    assert "pickle" not in loaded
    # the first version of a program pairs nothing: no matcher, pure or compiled
    assert not {m for m in loaded if m.startswith("kbtool.identity.matcher")}
    assert not {m for m in loaded if "_cmatcher" in m}
