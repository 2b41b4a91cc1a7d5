"""Shared CLI plumbing: the ``--db`` option, connections, output helpers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from kbtool.commands.consoles import _Console, console, err_console, print_json  # noqa: F401
from kbtool.kb.db import default_db_path, open_ro, open_rw
from kbtool.textutil import printable

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="KB file (default ./kbtool.db, or $KBTOOL_DB).", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the contract's JSON shape.")]


# the consoles and print_json live in .consoles (no Typer: `kbtool ingest` runs without it)


def count_progress(label: str, *, show: bool, to: Console | None = None, auto_refresh: bool = True):
    """A transient ``label [bar] done/total elapsed`` bar (disabled when not ``show``).
    ``auto_refresh=False`` starts no refresh thread (update with ``refresh=True``): a
    command that forks a worker pool must stay single-threaded."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=to or err_console,
        disable=not show,
        transient=True,
        auto_refresh=auto_refresh,
    )


def db_path(db: str | None) -> str:
    """The KB path: the command's ``--db``, else the global ``--db``, else $KBTOOL_DB/./kbtool.db."""
    return db or _GLOBAL_DB or default_db_path()


_GLOBAL_DB: str | None = None


def set_global_db(db: str | None) -> None:
    """Remember the ``kbtool --db PATH`` given before the command name."""
    global _GLOBAL_DB
    _GLOBAL_DB = db


def rw(db: str | None, *, create: bool = False) -> sqlite3.Connection:
    """A writable connection; only commands that add content (``create=True``: ingest,
    oracle add) may create a KB, the others refuse a missing or empty file untouched."""
    return open_rw(db_path(db), create=create)


def ro(db: str | None) -> sqlite3.Connection:
    return open_ro(db_path(db))


ForceOption = Annotated[
    bool,
    typer.Option(
        "--force", help="Replace an existing output file even if it is a SQLite database."
    ),
]


def check_output(out: str | Path | None, db: str | None, force: bool = False) -> None:
    """Fail with one line when ``out`` is the KB (or its -wal/-shm, by any path or link) or,
    without ``force``, an existing SQLite database; ``None`` (stdout) is always fine."""
    from kbtool.services.outfile import OutputRefused, check_output_path

    if out is None:
        return
    try:
        check_output_path(out, db_path(db), force)
    except OutputRefused as exc:
        fail(str(exc))


def fail(message: str, code: int = 1) -> None:
    """Print a one-line error and exit."""
    err_console.print(f"[bold red]error:[/] {_escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def _escape(text: str) -> str:

    return escape(printable(text))
