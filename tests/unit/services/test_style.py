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


#: hot loops that decode instructions one by one (docs/DECISIONS.md, "ruff format ... size rules")
LONG_FUNCTIONS_ALLOWED = {
    ("kbtool/wasm/decoder/__init__.py", "analyze_range"),
    ("kbtool/analysis/datawalk/__init__.py", "body_refs"),
    ("kbtool/analysis/datascan.py", "data_refs"),
    # the lifter's pass before the walk simulates two value stacks (local signs, frames) op
    # by op in one loop; its commonest pushes are inlined because a call cost more than its
    # body (session 19 L round 2, session 20 L)
    ("kbtool/lift/lifter/prepass.py", "_prepass"),
}
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 150


def _python_files() -> list:
    out = []
    for tree in TREES:
        p = ROOT / tree
        out += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return [f for f in out if f.suffix == ".py" and "__snapshots__" not in f.parts]


def test_no_file_over_700_lines() -> None:
    long = {
        str(f.relative_to(ROOT)): n
        for f in _python_files()
        if (n := len(f.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert not long, f"split these files (over {MAX_FILE_LINES} lines): {long}"


def test_no_function_over_150_lines_but_the_hot_loops() -> None:
    import ast

    long = {}
    for f in _python_files():
        rel = str(f.relative_to(ROOT))
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES and (rel, node.name) not in LONG_FUNCTIONS_ALLOWED:
                    long[f"{rel}:{node.name}"] = n
    assert not long, f"split these functions (over {MAX_FUNCTION_LINES} lines): {long}"
