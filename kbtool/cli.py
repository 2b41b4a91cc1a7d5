"""The ``kbtool`` command line: a thin Typer front-end over the services and query layer."""

from __future__ import annotations

import sys
from typing import Annotated

import click
import typer

from kbtool.commands import core, names

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
    ctx: typer.Context,
    db: Annotated[str | None, typer.Option("--db", envvar="KBTOOL_DB",
                                           help="KB file (default ./kbtool.db).")] = None,
) -> None:
    """kbtool: name the functions of a stripped wasm module once, keep the names in every release."""
    ctx.obj = {"db": db}


core.register(app)
names.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn every known failure into one line and exit code 1."""
    from kbtool.kb.errors import KBError
    from kbtool.wasm import WasmFormatError

    try:
        rv = app(args=argv, standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (KBError, WasmFormatError, ValueError, OSError) as exc:
        from kbtool.commands.common import err_console
        from kbtool.views.text import lit

        err_console.print("[bold red]error:[/] ", lit(_one_line(exc)))
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


def _one_line(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return text.splitlines()[0] if text else text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
