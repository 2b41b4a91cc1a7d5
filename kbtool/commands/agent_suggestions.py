"""``kbtool suggestions``: agent names kept below the write floor, listed, accepted through the
gate or dismissed (registered with ``kbtool agent``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kbtool.commands.common import DbOption, JsonOption, console, fail, print_json, ro, rw
from kbtool.kb.provenance import COLOURS
from kbtool.render.text import lit


def suggestions(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="VERSION to list; `accept SID...` or `dismiss SID...` to decide.",
            show_default=False,
        ),
    ] = None,
    all_above: Annotated[
        float | None,
        typer.Option(
            "--all-above",
            min=0.0,
            max=1.0,
            help="With `accept VERSION`: accept every open suggestion at this confidence or more.",
        ),
    ] = None,
    version: Annotated[
        int | None, typer.Option("--version-id", help="Only the suggestion of this version.")
    ] = None,
    keep_agent: Annotated[
        bool,
        typer.Option("--agent", help="Accept as provenance agent at the suggested confidence."),
    ] = False,
    as_human: Annotated[
        bool, typer.Option("--human", help="With --all-above: accept as human names (locked).")
    ] = False,
    status: Annotated[
        str, typer.Option("--status", help="List open (default), accepted, dismissed or all.")
    ] = "open",
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="At most this many (cap 500).")
    ] = 100,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Agent names kept below the write floor: list them, accept them through the gate, dismiss them.

    `kbtool suggestions VERSION` lists; `kbtool suggestions accept SID` writes the name as a
    human name (locked; `--agent` keeps provenance agent at its calibrated confidence);
    `kbtool suggestions accept VERSION --all-above 0.4` accepts every open one at 0.4 or more
    as agent names (`--human` for locked human names); `kbtool suggestions dismiss SID`.
    """
    from kbtool.kb import queries
    from kbtool.services.agent_pass import (
        NoSuggestion,
        accept_suggestion,
        accept_suggestions_above,
        dismiss_suggestion,
    )

    if not args:
        fail("give a VERSION to list, or `accept SID` / `dismiss SID`")
    action, rest = (args[0], args[1:]) if args[0] in ("accept", "dismiss") else ("list", args)
    if action == "list":
        if len(rest) != 1 or not rest[0].isdigit():
            fail(
                f"expected one VERSION id, got {' '.join(rest)!r} (or `accept SID` / `dismiss SID`)"
            )
        if status not in ("open", "accepted", "dismissed", "all"):
            fail(f"--status must be open, accepted, dismissed or all, not {status!r}")
        page = queries.suggestions(
            ro(db),
            int(rest[0]),
            status=None if status == "all" else status,
            offset=offset,
            limit=limit,
        )
        if json_out:
            print_json(page)
        else:
            _print_suggestions(page)
        return
    conn = rw(db)
    try:
        if action == "accept" and all_above is not None:
            if len(rest) != 1 or not rest[0].isdigit():
                fail(
                    "--all-above needs one VERSION id: `kbtool suggestions accept VERSION --all-above X`"
                )
            decisions = accept_suggestions_above(conn, int(rest[0]), all_above, as_human=as_human)
        elif not rest:
            fail(f"`{action}` needs one or more stable ids (see `kbtool suggestions VERSION`)")
        elif action == "accept":
            decisions = [
                accept_suggestion(conn, sid, version, as_human=not keep_agent) for sid in rest
            ]
        else:
            decisions = [
                {**dismiss_suggestion(conn, sid, version), "dismissed": True} for sid in rest
            ]
    except NoSuggestion as exc:
        fail(str(exc))
    if json_out:
        print_json(decisions)
        return
    for d in decisions:
        if d.get("dismissed"):
            console.print(Text.assemble(f"{d['stable_id']}: dismissed ", lit(d["name"], "dim")))
        elif d["written"]:
            console.print(Text.assemble(f"{d['stable_id']} -> ", lit(d["name"], "bold")))
        else:
            console.print(
                Text.assemble(
                    f"{d['stable_id']}: not written (",
                    lit(d["reason"]),
                    "), still open: ",
                    lit(d["name"], "dim"),
                )
            )
    if action == "accept" and all_above is not None:
        done = sum(1 for d in decisions if d["written"])
        console.print(f"{done} of {len(decisions)} accepted")


def _print_suggestions(page: dict[str, Any]) -> None:
    items = page["items"]
    shown = f"{page['offset'] + 1}-{page['offset'] + len(items)} of " if items else ""
    console.print(f"suggestions of version {page['version_id']}: {shown}{page['total']}")
    if not items:
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("stable_id", "index", "name", "conf", "backend", "rule", "now", "status"):
        table.add_column(
            col,
            justify="right" if col in ("index", "conf") else "left",
            overflow="fold",
            no_wrap=col == "stable_id",
        )
    for s in items:
        cur = s["current"]
        table.add_row(
            s["stable_id"],
            str(s["index"]),
            lit(s["name"], COLOURS["agent"]),
            f"{s['confidence']:.2f}",
            lit(s["backend"]),
            lit(s["rule"]),
            lit(f"{cur['name']} ({cur['provenance']})" if cur else "-", "dim"),
            s["status"],
        )
    console.print(table)
