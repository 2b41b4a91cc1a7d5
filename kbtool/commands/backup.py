"""``kbtool backup OUT.db``: a consistent copy of the KB while others read and write it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtool.commands.common import DbOption, console, db_path
from kbtool.kb.db import backup as kb_backup
from kbtool.render.text import lit


def register(app: typer.Typer) -> None:
    app.command()(backup)


def backup(
    out: Annotated[Path, typer.Argument(help="The file to write (a complete KB, one file).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite OUT when it exists.")] = False,
    db: DbOption = None,
) -> None:
    """Copy the KB to OUT as one consistent file, safe while kbtool is reading or writing it.

    The copy is a snapshot of the last committed state (names still in the `-wal` file
    included), checked with SQLite's integrity check before it replaces OUT.
    """
    info = kb_backup(db_path(db), out, force=force)
    console.print(
        lit(
            f"backed up {db_path(db)} to {info['path']} ({info['bytes']:,} bytes, "
            f"KB schema {info['schema_version']}, integrity ok)"
        )
    )
