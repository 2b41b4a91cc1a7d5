"""The repository's own rules, run by the README's test command (and so by CI): ``ruff check``,
``ruff format --check`` and import-linter's contracts over the real tree."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

TREES = ["kbtool", "tests", "benchmarks", "scripts", "testkit", "screenshots", "setup.py"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean() -> None:
    r = _run(sys.executable, "-m", "ruff", "check", *TREES)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_format_is_applied() -> None:
    r = _run(sys.executable, "-m", "ruff", "format", "--check", *TREES)
    assert r.returncode == 0, (
        "run `ruff format kbtool tests benchmarks scripts testkit screenshots setup.py`:\n"
        + r.stdout[-4000:]
    )


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    r = _run(exe)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
