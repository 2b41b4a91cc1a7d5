"""The ``kbtool`` command line: a thin Typer front-end over the services and query layer.

Importing this module is cheap, and so is a command: ``kbtool CMD`` builds an app holding
only the module that registers CMD (:data:`kbtool.commands.COMMANDS`), ``kbtool --help``
one of stand-ins carrying each command's name and one-line help (no command module at all),
and only an unknown command or option builds the whole app (:func:`app_for`). ``kbtool mcp``
skips Typer altogether (:func:`_serve_mcp`): an MCP client waits for the server's first
answer, and the CLI machinery would cost about half of that.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_APPS: dict[str, Any] = {}
LISTING = "listing"  # the key of the app that only lists the commands (``kbtool --help``)


def __getattr__(name: str) -> Any:  # PEP 562: ``kbtool.cli.app`` is built when first asked for
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_app(only: str | None = None) -> Any:
    """The Typer app (built once per ``only``): every command registered when ``only`` is
    None; else the commands of the one module ``only`` (a name in
    :data:`kbtool.commands.MODULES`), or, for :data:`LISTING`, stand-ins that carry each
    command's name and one-line help (``kbtool --help`` imports no command module)."""
    key = only or ""
    if key in _APPS:
        return _APPS[key]
    from kbtool.commands import COMMANDS, GROUPS, MODULES

    app = _root_app()
    if only == LISTING:
        _register_listing(app, COMMANDS, GROUPS)
    else:
        # Each command module imports its front-end (textual, uvicorn, the MCP SDK) inside the
        # command, so `kbtool versions` never pays for them (~0.4 s measured for textual alone).
        for name in MODULES if only is None else (only,):
            # __import__, not importlib.import_module: `-X importtime` then lists the module
            __import__(f"kbtool.commands.{name}", fromlist=["register"]).register(app)
        _whole_short_helps(app)
    _APPS[key] = app
    return app


def _root_app() -> Any:
    """The ``kbtool`` group itself: its help, ``--db`` and ``--version``; no command yet."""
    import typer

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
        from kbtool.commands.common import set_global_db

        set_global_db(db)

    return app


def _register_listing(app: Any, commands: Any, groups: Any) -> None:
    """Stand-ins for ``kbtool --help``: each command and group by name and one-line help
    (never run: any command line that names a command builds that command's module)."""
    import typer

    def _stand_in() -> None:  # pragma: no cover - never invoked
        raise RuntimeError("a listing stand-in ran")

    for name, _module, helptext in commands:
        app.command(name, help=helptext, short_help=helptext)(_stand_in)
    for name, _module, helptext in groups:
        app.add_typer(typer.Typer(short_help=helptext, help=helptext), name=name)


def app_for(args: list[str]) -> Any:
    """The smallest app that runs ``kbtool ARGS`` exactly as the whole one does: the listing
    for ``kbtool`` / ``kbtool --help`` / ``kbtool --version``, the invoked command's module for
    ``kbtool [--db P] CMD ...``, the whole app for anything else (an unknown command or
    option: Click's error and suggestions need every command)."""
    from kbtool.commands import module_of

    if not args:
        return build_app(LISTING)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--db":
            i += 2
        elif arg.startswith("--db="):
            i += 1
        elif arg in ("--help", "--version"):
            return build_app(LISTING)
        elif arg.startswith("-"):
            break
        else:
            return build_app(module_of(arg))
    return build_app()


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
    args = sys.argv[1:] if argv is None else list(argv)
    served = _serve_mcp(args)
    if served is not None:
        return served
    plain_ingest = argv is None and _ingest_plan(args) is not None
    if plain_ingest:
        # the process's own plain ingest: no cyclic collection (the ingest pauses it anyway;
        # the imports' passes over every new module object found nothing to free, ~2 ms)
        import gc

        gc.disable()
    try:
        return _main(args, end_process=argv is None)
    finally:
        if plain_ingest:
            import gc

            gc.enable()


def _main(args: list[str], *, end_process: bool) -> int:
    """:func:`main` once the MCP server is ruled out (``end_process``: the process's own
    command line, so nothing runs after a direct ingest)."""
    import sqlite3

    from kbtool.kb.errors import KBError

    try:
        ingested = _ingest_direct(args, keep=end_process)
        if ingested is not None:
            if end_process:  # the process's own command line: nothing runs after it
                _end_process(ingested)
            return ingested
        if _tui_direct(args):
            return 0
        app_for(args)(
            args=args, prog_name="kbtool"
        )  # standalone: usage errors and --help exit here
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
    # (kbtool.wasm's WasmFormatError is a ValueError: caught here without importing the
    # wasm layer, which a command that reads the KB never needs: ~15-20 ms)
    except (KBError, ValueError, OSError, sqlite3.Error) as exc:
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


# ``kbtool ingest`` options read without Typer: option -> (key, takes a value)
_INGEST_OPTIONS: dict[str, tuple[str, bool]] = {
    "--label": ("label", True),
    "-l": ("label", True),
    "--js": ("js", True),
    "--program": ("program", True),
    "--base": ("base", True),
    "--db": ("db", True),
    "--no-carry": ("no_carry", False),
    "--force": ("force", False),
    "--json": ("json_out", False),
}


def _plain_int(text: str) -> bool:
    """Whether ``text`` is ``-?[0-9]+`` (no regex compiled at start for one option)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit()


def _ingest_direct(args: list[str], keep: bool = False) -> int | None:
    """``kbtool [--db P] ingest FILE [options]`` run without Typer (whose parameter
    coercion imports pydantic: ~0.1 s CPU, most of a small module's ingest), through the
    same :func:`kbtool.commands.ingest_cmd.run` as the Typer command; ``None`` for any
    other command line or anything unusual (``--help``, an unknown or repeated-looking
    option, ``--``, an empty value, a missing or second FILE, a ``--base`` that is not a
    plain integer):
    Typer then parses and reports it exactly as usual. ``keep``: the process ends
    (``os._exit``) right after, so the ingest keeps its working data instead of freeing it
    (:func:`kbtool.wasm.kept.keep_until_exit`; W's measure: fresh onnxruntime -3.1 %
    instructions); a TUI, MCP or test process never keeps."""
    plan = _ingest_plan(args)
    if plan is None:
        return None
    opts, file = plan
    from pathlib import Path

    from kbtool.commands import ingest_cmd
    from kbtool.kb.db import default_db_path

    if keep:
        from kbtool.wasm.kept import keep_until_exit

        keep_until_exit()
    ingest_cmd.run(
        opts.get("db") or default_db_path(),
        Path(file),
        label=opts.get("label"),
        js=Path(opts["js"]) if "js" in opts else None,
        no_carry=bool(opts.get("no_carry")),
        program=opts.get("program"),
        base=int(opts["base"]) if "base" in opts else None,
        force=bool(opts.get("force")),
        json_out=bool(opts.get("json_out")),
    )
    return 0


def _ingest_plan(args: list[str]) -> tuple[dict[str, Any], str] | None:
    """``(options, FILE)`` of a command line :func:`_ingest_direct` runs (``db`` the
    ingest's own ``--db`` or else the root one); ``None`` when Typer must parse it."""
    files: list[str] = []
    opts = _command_options(args, "ingest", _INGEST_OPTIONS, "-l", files)
    if opts is None or len(files) != 1 or not files[0]:
        return None
    if "base" in opts and not _plain_int(opts["base"]):
        return None
    return opts, files[0]


def _command_options(
    args: list[str],
    command: str,
    table: dict[str, tuple[str, bool]],
    short: str,
    files: list[str] | None = None,
) -> dict[str, Any] | None:
    """The options of ``kbtool [--db P] COMMAND [options]`` read by ``table`` (option ->
    (key, takes a value)), ``db`` the command's own ``--db`` or else the root one; positional
    arguments go to ``files`` (None: refused); ``short`` is the one-letter option never
    written with ``=``. ``None`` when Typer must parse the line."""
    root: dict[str, Any] = {}
    i = 0
    while i < len(args) and args[i] != command:
        if not (args[i] == "--db" or args[i].startswith("--db=")):
            return None
        if not _take_options(args[i : i + (1 if "=" in args[i] else 2)], {"--db": "db"}, root):
            return None
        i += 1 if "=" in args[i] else 2
    if i >= len(args):
        return None
    opts: dict[str, Any] = {}
    rest = iter(args[i + 1 :])
    for arg in rest:
        if files is not None and not arg.startswith("-"):
            files.append(arg)
            continue
        name, eq, value = arg.partition("=")
        spec = table.get(name)
        if spec is None or (eq and (not spec[1] or name == short)):
            return None
        key, takes = spec
        if takes and not eq:
            nxt = next(rest, None)
            if nxt is None or nxt.startswith("-"):
                return None
            value = nxt
        if takes and not value:
            return None
        opts[key] = value if takes else True
    opts["db"] = opts.get("db") or root.get("db")
    return opts


# ``kbtool tui`` options read without Typer: option -> (key, takes a value)
_TUI_OPTIONS: dict[str, tuple[str, bool]] = {
    "--db": ("db", True),
    "--read-only": ("read_only", False),
    "--version": ("version", True),
    "-V": ("version", True),
    "--theme": ("theme", True),
}


def _tui_direct(args: list[str]) -> bool:
    """``kbtool [--db P] tui [options]`` run without Typer, whose parameter handling imports
    pydantic (~0.2 s before the TUI's first frame, issue 30), through the same
    :func:`kbtool.commands.tui_launch.launch` as the Typer command. False (nothing run) for
    any other command line or anything unusual (``--help``, an argument, an unknown option,
    an empty value or one starting with ``-``, a ``--version`` that is not a plain
    integer): Typer then parses and reports it exactly as usual."""
    plan = _tui_plan(args)
    if plan is None:
        return False
    from kbtool.commands.tui_launch import launch
    from kbtool.kb.db import default_db_path

    version = plan.get("version")
    launch(
        plan.get("db") or default_db_path(),
        read_only=bool(plan.get("read_only")),
        version=None if version is None else int(version),
        theme=plan.get("theme", "dark"),
    )
    return True


def _tui_plan(args: list[str]) -> dict[str, Any] | None:
    """The options of a command line :func:`_tui_direct` runs (``db`` the command's own
    ``--db`` or else the root one), or ``None`` when Typer must parse it."""
    opts = _command_options(args, "tui", _TUI_OPTIONS, "-V")
    if opts is None:
        return None
    if "version" in opts and not (_plain_int(opts["version"]) and opts["version"][0] != "-"):
        return None
    return opts


def _end_process(code: int) -> None:
    """End the process now: output flushed, exit handlers run (the KB checkpointed and
    closed), then ``os._exit`` without the interpreter's teardown, which would free every
    module and run a last collection (~13 ms of a small module's whole ingest). A broken
    pipe on the flush propagates (:func:`main` ends quietly)."""
    import atexit

    streams = [s for s in (sys.stdout, sys.stderr) if s is not None]  # (``>&-``: None)
    for s in streams:
        s.flush()
    atexit._run_exitfuncs()
    for s in streams:
        s.flush()
    os._exit(code)


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
    from kbtool.commands.consoles import err_console  # not .common: no Typer for a direct path
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
