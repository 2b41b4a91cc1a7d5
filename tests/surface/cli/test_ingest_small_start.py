"""A small module's ``kbtool ingest`` imports only what it uses (issue 30.4): the code store
(whose background preparation starts only for modules of 1 MiB and more) and the struct and
thread passes (``kbtool analyze``'s) stay unimported; a big module still starts the code
preparation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbtool.commands import ingest_cmd
from kbtool.services import code_store
from tests.support.paths import DEMO_WASM, ROOT


def _imported_by_ingest(tmp_path: Path, wasm: Path) -> tuple[subprocess.CompletedProcess, set]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0"}
    env.pop("KBTOOL_CODE_WARM", None)  # (as a user runs it: the preparation on)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbtool", "--db", str(tmp_path / "kb.db")]
        + ["ingest", str(wasm)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    loaded = {
        line.split("|")[-1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return r, loaded


def test_small_module_ingest_skips_the_code_store_and_analyze_passes(tmp_path: Path) -> None:
    assert DEMO_WASM.stat().st_size < code_store.WARM_MIN_BYTES
    r, loaded = _imported_by_ingest(tmp_path, DEMO_WASM)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version 1" in r.stdout
    assert "kbtool.services.ingest" in loaded
    assert "kbtool.analysis.recognize" in loaded  # (the lineage's recognizers: they run)
    for name in (
        "kbtool.services.code_store",
        "kbtool.analysis.structs",
        "kbtool.analysis.threads",
    ):
        assert name not in loaded, name


def test_the_size_rule_is_the_code_stores() -> None:
    assert ingest_cmd._CODE_WARM_MIN_BYTES == code_store.WARM_MIN_BYTES


def test_code_preparation_asked_from_the_size_on(tmp_path: Path, monkeypatch) -> None:
    # a module of WARM_MIN_BYTES and more: ingest asks the code store (which decides, as
    # before); one byte below: not asked, not imported
    asked: list[int] = []
    monkeypatch.setattr(ingest_cmd, "_warm_code", lambda conn, vid: asked.append(vid))
    size = DEMO_WASM.stat().st_size
    monkeypatch.setattr(ingest_cmd, "_CODE_WARM_MIN_BYTES", size)
    ingest_cmd.run(str(tmp_path / "a.db"), DEMO_WASM)
    assert asked == [1]
    monkeypatch.setattr(ingest_cmd, "_CODE_WARM_MIN_BYTES", size + 1)
    ingest_cmd.run(str(tmp_path / "b.db"), DEMO_WASM)
    assert asked == [1]
