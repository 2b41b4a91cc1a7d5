"""``kbtool`` run as a user runs it: a real subprocess of this interpreter, this checkout first
on ``PYTHONPATH`` (whatever the installed copy points at), wide columns so tables do not wrap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``kbtool ARGS`` in a fresh process (``env``: variables added to the environment)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )
