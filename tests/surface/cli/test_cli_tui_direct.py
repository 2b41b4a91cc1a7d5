"""``kbtool tui`` with plain options runs without Typer (``kbtool.cli._tui_direct``: Typer's
parameter handling imports pydantic, ~0.2 s before the first frame; issue 30) and opens the
app exactly as the Typer command does; anything unusual is left to Typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbtool import cli
from kbtool.commands import tui_launch
from tests.support.cli import imported_modules as _imported
from tests.support.cli import startup_env as _env

PLAIN = [
    ["tui"],
    ["--db", "a.db", "tui"],
    ["--db=a.db", "tui", "--read-only"],
    ["tui", "--db", "b.db", "--version", "3", "--theme", "light"],
    ["--db", "a.db", "tui", "--db=b.db", "-V", "2", "--theme=textual-light"],
    ["tui", "--version=12", "--read-only", "--version", "7"],  # the last one wins (Click's)
    ["--db", "tui", "tui"],  # a KB file named tui
]
UNUSUAL = [
    [],
    ["versions"],
    ["tui", "--help"],
    ["--help", "tui"],
    ["--version", "tui"],
    ["tui", "extra"],
    ["tui", "--version", "x"],
    ["tui", "--version", "-1"],
    ["tui", "--version", "+1"],
    ["tui", "-V=1"],
    ["tui", "-V1"],
    ["tui", "--version"],
    ["tui", "--theme", ""],
    ["tui", "--db="],
    ["tui", "--read-only=yes"],
    ["tui", "--bogus"],
    ["tui", "--", "x"],
    ["--db", "a.db"],
    ["--bogus", "tui"],
]


@pytest.mark.parametrize("args", UNUSUAL)
def test_unusual_command_lines_are_left_to_typer(args):
    assert cli._tui_plan(args) is None


@pytest.mark.parametrize("args", PLAIN)
def test_plain_command_lines_open_the_app_as_typer_does(args, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KBTOOL_DB", raising=False)
    calls: list[tuple] = []
    monkeypatch.setattr(tui_launch, "launch", lambda path, **kw: calls.append((path, kw)))
    assert cli._tui_plan(args) is not None
    assert cli.main(args) == 0  # the direct path
    monkeypatch.setattr(cli, "_tui_direct", lambda _args: False)
    assert cli.main(args) == 0  # Typer's
    assert len(calls) == 2 and calls[0] == calls[1], calls


def test_the_environment_names_the_kb_as_with_typer(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_DB", str(tmp_path / "env.db"))
    calls: list[tuple] = []
    monkeypatch.setattr(tui_launch, "launch", lambda path, **kw: calls.append((path, kw)))
    assert cli.main(["tui"]) == 0
    monkeypatch.setattr(cli, "_tui_direct", lambda _args: False)
    assert cli.main(["tui"]) == 0
    assert calls[0] == calls[1] and calls[0][0] == str(tmp_path / "env.db")


def test_a_missing_kb_fails_without_typer_or_pydantic(tmp_path: Path):
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbtool"]
        + ["--db", str(tmp_path / "missing.db"), "tui"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
    )
    assert r.returncode == 1
    assert "no KB at" in r.stderr and "kbtool demo" in r.stderr
    loaded = _imported(r.stderr)
    assert "kbtool.commands.tui_launch" in loaded
    assert not {"typer", "pydantic", "click", "kbtool.commands.tui"} & loaded
