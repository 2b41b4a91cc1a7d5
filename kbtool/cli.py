"""The ``kbtool`` command line: a thin Typer front-end over the services and query layer."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kbtool.commands import core, names
from kbtool.commands import mcp as mcp_cmd
from kbtool.commands.common import set_global_db

app = typer.Typer(
    name="kbtool",
    help="A knowledge base for reverse engineering WebAssembly applications across releases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    db: Annotated[str | None, typer.Option("--db", envvar="KBTOOL_DB",
                                           help="KB file (default ./kbtool.db).")] = None,
) -> None:
    """kbtool: name the functions of a stripped wasm module once, keep the names in every release."""
    set_global_db(db)


core.register(app)
names.register(app)
mcp_cmd.register(app)
__import__("kbtool.commands.serve", fromlist=["register"]).register(app)
__import__("kbtool.commands.tui", fromlist=["register"]).register(app)
__import__("kbtool.commands.diff", fromlist=["register"]).register(app)
__import__("kbtool.commands.code", fromlist=["register"]).register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn every known failure into one line and exit code 1."""
    from kbtool.kb.errors import KBError
    from kbtool.wasm import WasmFormatError

    try:
        app(args=argv, prog_name="kbtool")  # standalone: usage errors and --help exit here
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except (KBError, WasmFormatError, ValueError, OSError) as exc:
        from kbtool.commands.common import err_console
        from kbtool.render.text import lit

        err_console.print("[bold red]error:[/]", lit(_one_line(exc)), soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


def _one_line(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return text.splitlines()[0] if text else text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
