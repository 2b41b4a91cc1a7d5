"""The README's tour, run literally (issue #23, point 2): every command in order, each exits 0.

The tour block is read from README.md (the first ``sh`` block under "## A tour"), so the
test breaks when the README drifts. Its placeholder files are materialised in a fresh
directory: ``app-1.0.wasm``/``app-1.1.wasm`` are the demo's zstd 1.5.5/1.5.6,
``sql-wasm.wasm``/``.js`` sql.js 1.10.3 and ``libc-ref.wasm`` a named zstd 1.5.5 build of the
corpus. Each command runs as a real ``kbtool`` subprocess in that directory (the default
``./kbtool.db``); the interactive ones (``tui``, ``serve``, ``mcp``) are checked to exist
(``--help``), not started.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DEMO_DIR, ROOT, corpus_file

INTERACTIVE = {"tui", "serve", "mcp"}


def tour_commands(readme: str) -> list[list[str]]:
    """The tour's commands in order, each as argv (comments dropped, ``&&`` and ``|`` split)."""
    m = re.search(r"^## A tour\s*\n+```sh\n(.*?)^```", readme, re.M | re.S)
    assert m, "README.md has no '## A tour' sh block"
    out: list[list[str]] = []
    for line in m.group(1).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        for part in re.split(r"\s*(?:&&|\|)\s*", line):
            argv = shlex.split(part)
            assert argv and argv[0] == "kbtool", f"not a kbtool command in the tour: {part!r}"
            out.append(argv)
    return out


def materialise(dest: Path) -> None:
    files = {
        "app-1.0.wasm": DEMO_DIR / "zstd-1.5.5.wasm",
        "app-1.1.wasm": DEMO_DIR / "zstd-1.5.6.wasm",
        "sql-wasm.wasm": corpus_file("release/sql.js-1.10.3.sql-wasm.wasm"),
        "sql-wasm.js": corpus_file("release/sql.js-1.10.3.sql-wasm.js"),
        "libc-ref.wasm": corpus_file("gt/zstd-1.5.5.O2.exports.named.wasm"),
    }
    for name, src in files.items():
        shutil.copyfile(src, dest / name)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KBTOOL_DB"}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="120", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *argv[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_the_tour_is_parsed_from_the_readme():
    cmds = tour_commands((ROOT / "README.md").read_text())
    words = [c[1] for c in cmds]
    # what the tour shows, in its order (a README that drops a step breaks this test)
    assert words[:2] == ["ingest", "ingest"] and "diff" in [c[2] for c in cmds if len(c) > 2]
    assert set(words) >= {"ingest", "oracle", "set-name", "ui", "code", "export"} | INTERACTIVE


def test_readme_tour_runs_literally(tmp_path):
    cmds = tour_commands((ROOT / "README.md").read_text())
    materialise(tmp_path)
    for argv in cmds:
        if argv[1] in INTERACTIVE:  # they take over the terminal / serve
            res = _run([*argv, "--help"], tmp_path)
        else:
            res = _run(argv, tmp_path)
        assert res.returncode == 0, f"{shlex.join(argv)} -> {res.returncode}\n{res.stderr[-2000:]}"
        assert "Traceback" not in res.stderr, shlex.join(argv)
        if argv[1:3] == ["ui", "diff"]:  # a pair of one program: no warning
            assert "different programs" not in res.stdout + res.stderr
    # the tour's pair really is one program, and the last two ids are not
    res = _run(["kbtool", "ui", "diff", "2", "3"], tmp_path)
    assert res.returncode == 2 and "belong to different programs" in res.stderr
    assert (tmp_path / "names.txt").exists() and (tmp_path / "named.wasm").exists()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("kbtool a 1   # comment", [["kbtool", "a", "1"]]),
        ("kbtool a && kbtool b 2", [["kbtool", "a"], ["kbtool", "b", "2"]]),
        ("kbtool tui | kbtool serve   # x", [["kbtool", "tui"], ["kbtool", "serve"]]),
    ],
)
def test_tour_parser(line, expected):
    assert tour_commands(f"## A tour\n\n```sh\n# lead\n{line}\n```\n") == expected
