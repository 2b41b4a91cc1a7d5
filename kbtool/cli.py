"""The ``kbtool`` command line: a thin Typer front-end over the services and query layer."""

from __future__ import annotations

import os
import sqlite3
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from typing import Annotated

import typer

# Each command module imports its front-end (textual, uvicorn, the MCP SDK) inside the
# command, so `kbtool versions` never pays for them (~0.4 s measured for textual alone).
from kbtool.commands import agent, analyze, code, core, deep, diff, names, serve, tui
from kbtool.commands import mcp as mcp_cmd
from kbtool.commands.common import err_console, set_global_db
from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.wasm import WasmFormatError

app = typer.Typer(
    name="kbtool",
    help="A knowledge base for reverse engineering WebAssembly applications across releases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        try:
            v = dist_version("kbtool")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        sys.stdout.write(f"kbtool {v}\n")
        raise typer.Exit()


@app.callback()
def _root(
    db: Annotated[str | None, typer.Option("--db", envvar="KBTOOL_DB",
                                           help="KB file (default ./kbtool.db).")] = None,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Show the kbtool version and exit.")] = False,
) -> None:
    """kbtool: name the functions of a stripped wasm module once, keep the names in every release."""
    set_global_db(db)


for _module in (core, names, mcp_cmd, serve, tui, diff, code, deep, agent, analyze):
    _module.register(app)


def short_help(doc: str | None) -> str | None:
    """A command's whole first sentence (its docstring's first paragraph, up to ". "): Click
    would cut it at 45 characters with "..." in ``kbtool --help``."""
    if not doc:
        return None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    end = first.find(". ")
    return first[: end + 1] if end >= 0 else first


def _whole_short_helps(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        if info.short_help is None and info.callback is not None:
            info.short_help = short_help(info.help or info.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _whole_short_helps(group.typer_instance)


_whole_short_helps(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn every known failure into one line and exit code 1.

    A reader that stops early (``kbtool ui diff | head``) is not a failure: a broken pipe on
    stdout ends the command quietly with status 0.
    """
    try:
        app(args=argv, prog_name="kbtool")  # standalone: usage errors and --help exit here
        return 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code and _stdout_broken():
            return _quiet_broken_pipe()
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OverflowError:  # an integer argument beyond SQLite's 64 bits
        _error(f"a number is out of range (at most {2**63 - 1})")
        return 1
    except (KBError, WasmFormatError, ValueError, OSError, sqlite3.Error) as exc:
        _error(_one_line(exc))
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


def _error(message: str) -> None:
    err_console.print("[bold red]error:[/]", lit(message), soft_wrap=True)


def _stdout_broken() -> bool:
    """Whether the command stopped because stdout's reader went away: Click/Typer turn a
    broken pipe into ``exit(1)`` after wrapping stdout in ``PacifyFlushWrapper``, and the CLI
    consoles (:mod:`kbtool.commands.common`) raise ``BrokenPipeError`` into that path.
    (Typer vendors Click, so the wrapper is recognised by its class name.)"""
    return type(sys.stdout).__name__ == "PacifyFlushWrapper"


def _quiet_broken_pipe() -> int:
    """Point stdout at /dev/null (the interpreter's final flush must not fail again) and
    report success: the reader took what it wanted."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):
        pass
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return text.splitlines()[0] if text else text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
