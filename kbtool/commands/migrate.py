"""``kbtool migrate``: bring a KB written by an older kbtool to this kbtool's schema."""

from __future__ import annotations

from pathlib import Path

import typer

from kbtool.commands.common import DbOption, console, db_path
from kbtool.kb import schema
from kbtool.kb.db import inspect_kb, open_rw
from kbtool.kb.errors import KBMissingError
from kbtool.render.text import lit


def register(app: typer.Typer) -> None:
    app.command()(migrate)


def migrate(db: DbOption = None) -> None:
    """Migrate the KB to this kbtool's schema, in one transaction (a no-op on a current KB).

    Prints the schema it went from and to. A file that is not a KB, or a KB written by a
    newer kbtool, is refused untouched. Reads (`versions`, `tui`, `serve`, `mcp`) never
    migrate: they refuse an older KB and name this command.
    """
    p = Path(db_path(db))
    if not p.exists():
        raise KBMissingError(
            f"no KB at {p} (create one with `kbtool ingest FILE` or `kbtool demo`)"
        )
    before = inspect_kb(
        p, allow_empty=False
    )  # read-only: refuses a foreign or newer file untouched
    if before == schema.SCHEMA_VERSION:
        console.print(lit(f"{p} is at KB schema {before}, the current one: nothing to migrate"))
        return
    conn = open_rw(p, create=False)  # migrates every step in one transaction, or nothing
    try:
        after = schema.read_schema_version(conn)
    finally:
        conn.close()
    console.print(lit(f"migrated {p} from KB schema {before} to {after}"))
