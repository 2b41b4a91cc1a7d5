"""A plain ``kbtool ingest`` imports no standard-library module it does not use (issue 30.4):
``tempfile`` (with shutil, random, bz2, lzma: ~2 ms) only for a backup, ``shlex`` only for
the message of an old KB. Run without ``site`` (its own hooks may import them first), the
installed packages on the path."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.support.paths import DEMO_WASM, ROOT

NOT_ON_THE_INGEST_PATH = {"tempfile", "shutil", "shlex", "random", "bz2", "lzma"}


def test_plain_ingest_imports_no_tempfile_nor_shlex(tmp_path: Path) -> None:
    path = os.pathsep.join(
        [str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    )
    r = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-m", "kbtool"]
        + ["--db", str(tmp_path / "kb.db"), "ingest", str(DEMO_WASM)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "KBTOOL_STARTUP_CACHE": "off"},
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version 1" in r.stdout
    loaded = {
        line.split("|")[-1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "kbtool.services.ingest" in loaded
    assert not loaded & NOT_ON_THE_INGEST_PATH, sorted(loaded & NOT_ON_THE_INGEST_PATH)
