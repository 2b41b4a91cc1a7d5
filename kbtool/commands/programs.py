"""``kbtool set-program``: move an ingested version into another program (lineage)."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtool.commands.common import DbOption, JsonOption, console, print_json, rw
from kbtool.render.text import lit


def register(app: typer.Typer) -> None:
    app.command("set-program")(set_program)


def set_program(
    version: Annotated[int, typer.Argument(help="Version id (see `kbtool versions`).")],
    program: Annotated[str, typer.Argument(help="The program to move it into.")],
    create: Annotated[
        bool, typer.Option("--create", help="Start a new program of that name if there is none.")
    ] = False,
    no_carry: Annotated[
        bool, typer.Option("--no-carry", help="Do not carry names from the new parent version.")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Move a version into another program and carry names from its most related version there.

    What `ingest --program` does for a new file, for a version already in the KB: the target
    program's most related version becomes its parent (recorded in its lineage, method
    `program`) and names follow matched functions as `diff-carry`, through the gate (human,
    locked, oracle, export and agent names are never overwritten). A program left empty is
    removed.
    """
    from kbtool.services.lineage import RELATED_THRESHOLD
    from kbtool.services.program_move import set_program as move

    conn = rw(db)
    res = move(conn, version, program, create=create, carry=not no_carry)
    if json_out:
        print_json(
            {
                "version_id": res.version_id,
                "label": res.label,
                "from_program": res.from_program,
                "program": res.program,
                "new_program": res.new_program,
                "parent_version_id": res.parent_version_id,
                "overlap": res.overlap,
                "lineage": res.lineage,
                "carry": res.carry,
                "dropped_program": res.dropped_program,
            }
        )
        return
    console.print(
        lit(
            f"version {res.version_id} ({res.label}) moved from program {res.from_program}"
            f" to {res.program}" + (" (new program)" if res.new_program else "")
        )
    )
    if res.parent_version_id is None:
        console.print(lit(f"no version of {res.program} to carry names from"))
    else:
        pct = "?" if res.overlap is None else f"{res.overlap:.1%}"
        low = res.overlap is not None and res.overlap < RELATED_THRESHOLD
        console.print(
            lit(
                f"parent version {res.parent_version_id} (most related, overlap {pct}"
                + (f"; under the {RELATED_THRESHOLD:.0%} ingest joins by itself" if low else "")
                + ")"
            )
        )
    c = res.carry
    if c is not None:
        console.print(
            lit(
                f"names carried from version {res.parent_version_id}: {c['written']} written"
                f" ({c['review']} flagged for review), {c['already']} already the same,"
                f" {c['refused']} refused (a name of higher authority or locked kept),"
                f" {c['duplicate']} duplicate, {c['suggested']} suggested (weak match);"
                f" knowledge carried {c.get('knowledge_carried', 0)}"
            )
        )
    if res.dropped_program:
        console.print(lit(f"program {res.from_program} has no version left: removed"))
