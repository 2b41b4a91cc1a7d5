"""The ``kbtool`` command line: a thin Typer front-end over the services and query layer.

Importing this module is cheap: Typer, the command modules and the app are built on first
use (:func:`build_app`, or the ``app`` attribute). ``kbtool mcp`` skips them altogether
(:func:`_serve_mcp`): an MCP client waits for the server's first answer, and the CLI
machinery would cost about half of that.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_APP: Any = None


def __getattr__(name: str) -> Any:  # PEP 562: ``kbtool.cli.app`` is built when first asked for
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_app() -> Any:
    """The Typer app with every command registered (built once)."""
    global _APP
    if _APP is not None:
        return _APP
    import typer

    # Each command module imports its front-end (textual, uvicorn, the MCP SDK) inside the
    # command, so `kbtool versions` never pays for them (~0.4 s measured for textual alone).
    from kbtool.commands import agent, analyze, code, core, deep, diff, names, serve, tui
    from kbtool.commands import backup as backup_cmd
    from kbtool.commands import data as data_cmd
    from kbtool.commands import knowledge as knowledge_cmd
    from kbtool.commands import mcp as mcp_cmd
    from kbtool.commands import migrate as migrate_cmd
    from kbtool.commands import types as types_cmd
    from kbtool.commands.common import set_global_db

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
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as dist_version

            try:
                v = dist_version("kbtool")
            except PackageNotFoundError:
                v = "unknown (not installed)"
            sys.stdout.write(f"kbtool {v}\n")
            raise typer.Exit()

    @app.callback()
    def _root(
        db: str | None = typer.Option(
            None, "--db", envvar="KBTOOL_DB", help="KB file (default ./kbtool.db)."
        ),
        version: bool = typer.Option(
            False,
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Show the kbtool version and exit.",
        ),
    ) -> None:
        """kbtool: name the functions of a stripped wasm module once, keep the names in every release."""
        set_global_db(db)

    for module in (
        core,
        names,
        mcp_cmd,
        serve,
        tui,
        diff,
        code,
        deep,
        agent,
        analyze,
        backup_cmd,
        data_cmd,
        knowledge_cmd,
        types_cmd,
        migrate_cmd,
    ):
        module.register(app)
    _whole_short_helps(app)
    _APP = app
    return app


def short_help(doc: str | None) -> str | None:
    """A command's whole first sentence (its docstring's first paragraph, up to ". "): Click
    would cut it at 45 characters with "..." in ``kbtool --help``."""
    if not doc:
        return None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    end = first.find(". ")
    return first[: end + 1] if end >= 0 else first


def _whole_short_helps(typer_app: Any) -> None:
    for info in typer_app.registered_commands:
        if info.short_help is None and info.callback is not None:
            info.short_help = short_help(info.help or info.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            inst = group.typer_instance.info
            if not isinstance(group.short_help, str) and not isinstance(inst.short_help, str):
                helptext = group.help if isinstance(group.help, str) else inst.help
                inst.short_help = short_help(helptext if isinstance(helptext, str) else None)
            _whole_short_helps(group.typer_instance)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn every known failure into one line and exit code 1.

    A reader that stops early (``kbtool ui diff | head``) is not a failure: a broken pipe on
    stdout ends the command quietly with status 0.
    """
    import sqlite3

    args = sys.argv[1:] if argv is None else list(argv)
    served = _serve_mcp(args)
    if served is not None:
        return served
    from kbtool.kb.errors import KBError
    from kbtool.wasm import WasmFormatError

    try:
        build_app()(args=args, prog_name="kbtool")  # standalone: usage errors and --help exit here
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


MCP_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _serve_mcp(args: list[str]) -> int | None:
    """``kbtool [--db P] mcp [--db P] [--log-level L]`` served without Typer; ``None`` for
    any other command line, or when serving cannot start (a missing KB, a terminal on stdin,
    no SDK...): the Typer command then runs and reports exactly as usual."""
    opts = {"root": None, "db": None, "log_level": "WARNING"}
    try:
        i = args.index("mcp")
    except ValueError:
        return None
    if not (
        _take_options(args[:i], {"--db": "root"}, opts)
        and _take_options(args[i + 1 :], {"--db": "db", "--log-level": "log_level"}, opts)
    ):
        return None
    level = str(opts["log_level"]).upper()
    if level not in MCP_LOG_LEVELS:
        return None
    if sys.stdin is None or sys.stdin.isatty():
        return None
    from kbtool.kb.db import default_db_path

    path = opts["db"] or opts["root"] or default_db_path()
    try:
        from kbtool.kb.errors import KBError
        from kbtool.mcp.server import build_server

        server = build_server(path, log_level=level)
    except (KBError, OSError, RuntimeError, ImportError):
        return None  # Typer's `mcp` command fails the same way and reports it as usual
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    return 0


def _take_options(args: list[str], names: dict[str, str], opts: dict[str, Any]) -> bool:
    """Read ``--name VALUE`` / ``--name=VALUE`` pairs into ``opts``; False on anything else."""
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name not in names:
            return False
        if not eq:
            value = next(it, None)
            if value is None:
                return False
        opts[names[name]] = value
    return True


def _error(message: str) -> None:
    from kbtool.commands.common import err_console
    from kbtool.render.text import lit

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
