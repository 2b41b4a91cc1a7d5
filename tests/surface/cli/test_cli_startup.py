"""``kbtool CMD`` imports only CMD's command module (and ``kbtool --help`` none): the static
registry in :mod:`kbtool.commands` matches the real app, the fast ``--help`` is the whole
app's ``--help`` byte for byte, and a simple command's process never imports the heavy
front-ends (textual, starlette, numpy) nor the other command modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer
from typer.main import get_command_name

from kbtool import commands
from kbtool.cli import build_app
from tests.support.cli import imported_modules, startup_env
from tests.support.paths import DEMO_WASM

HEAVY = ("textual", "starlette", "numpy", "sqlite_utils", "uvicorn", "mcp")


_env = startup_env


def _kbtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A fresh ``python -X importtime -m kbtool ARGS`` (the import log is on stderr)."""
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbtool", *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
    )


_imported = imported_modules


def _owner_of_each_command() -> dict[str, str]:
    owner: dict[str, str] = {}
    for module in commands.MODULES:
        app = typer.Typer()
        __import__(f"kbtool.commands.{module}", fromlist=["register"]).register(app)
        for info in app.registered_commands:
            owner[info.name or get_command_name(info.callback.__name__)] = module
        for group in app.registered_groups:
            owner[group.name] = module
    return owner


def test_registry_matches_the_real_app() -> None:
    app = build_app()
    owner = _owner_of_each_command()
    real_commands = [
        (
            name := info.name or get_command_name(info.callback.__name__),
            owner[name],
            info.short_help,
        )
        for info in app.registered_commands
    ]
    real_groups = [
        (g.name, owner[g.name], g.typer_instance.info.short_help) for g in app.registered_groups
    ]
    assert list(commands.COMMANDS) == real_commands
    assert list(commands.GROUPS) == real_groups


def test_fast_help_is_the_whole_apps_help(tmp_path: Path) -> None:
    whole = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from kbtool.cli import build_app\n"
            "try:\n    build_app()(args=sys.argv[1:], prog_name='kbtool')\n"
            "except SystemExit as e:\n    sys.exit(e.code)",
            "--help",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
    )
    fast = _kbtool("--help", cwd=tmp_path)
    assert whole.returncode == fast.returncode == 0
    assert fast.stdout == whole.stdout
    assert "revert-knowledge" in fast.stdout and "types" in fast.stdout
    loaded = _imported(fast.stderr)
    assert not {m for m in loaded if m.startswith("kbtool.commands.")} - {"kbtool.commands.common"}
    # no arguments: the same help, on stderr, status 2 (Click's no_args_is_help)
    bare = _kbtool(cwd=tmp_path)
    assert bare.returncode == 2
    assert fast.stdout in bare.stderr


def test_simple_commands_import_only_their_module(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    for args in (("--db", db, "ingest", str(DEMO_WASM)), ("--db", db, "versions")):
        r = _kbtool(*args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        loaded = _imported(r.stderr)
        # a plain ingest runs without Typer (kbtool.cli._ingest_direct): no pydantic either
        own = "kbtool.commands.ingest_cmd" if args[2] == "ingest" else "kbtool.commands.core"
        assert own in loaded
        if args[2] == "ingest":
            assert not {"typer", "pydantic", "kbtool.commands.core"} & loaded
        heavy = {m for m in loaded if m.split(".")[0] in HEAVY}
        assert not heavy, f"{args[2]} imported {sorted(heavy)}"
        others = {m for m in loaded if m.startswith("kbtool.commands.") and m.count(".") == 2} - {
            own,
            "kbtool.commands.common",
            "kbtool.commands.consoles",
        }
        assert not others, f"{args[2]} imported {sorted(others)}"
    listing = _kbtool("--db", db, "versions", cwd=tmp_path)
    assert "zstd" in listing.stdout
    # listing versions needs neither the ingest pipeline (decoder, facts) nor rich.progress
    assert not {"kbtool.services.ingest", "kbtool.services.demo", "rich.progress"} & _imported(
        listing.stderr
    )


def test_unknown_command_still_suggests_from_every_command(tmp_path: Path) -> None:
    r = _kbtool("verions", cwd=tmp_path)
    assert r.returncode == 2
    assert "No such command" in r.stderr
