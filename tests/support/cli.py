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


def startup_env() -> dict[str, str]:
    """The environment of a start-up measure: this checkout first, 80 columns."""
    return dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")


def imported_modules(stderr: str) -> set[str]:
    """Module names from an ``-X importtime`` log."""
    out = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            out.add(line.rsplit("|", 1)[1].strip())
    return out
