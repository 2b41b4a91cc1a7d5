"""Diff and oracle commands: ``kbtool diff``, ``kbtool ui diff`` (read-only), ``kbtool oracle``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kbtool.commands.code import print_function_diff
from kbtool.commands.common import (
    DbOption,
    JsonOption,
    console,
    err_console,
    fail,
    print_json,
    ro,
    rw,
)
from kbtool.kb import queries
from kbtool.render.terminal import TOP_DEFAULT, parse_only, render_view, triage_lines
from kbtool.render.text import lit
from kbtool.services.diff.carry import carry_names
from kbtool.services.diff.changelog import ORDERS, changelog, reorder
from kbtool.services.diff.programs import program_fields
from kbtool.services.diff.report import compute_diff_with_pairing, save_diff
from kbtool.services.diff.view import kept_view, toolchain_changed
from kbtool.services.oracle import add_oracle, list_oracles, match_oracle

OnlyOption = Annotated[
    str | None,
    typer.Option(
        "--only",
        help="Show only these classifications, comma-separated: unchanged, "
        "moved, modified, new, deleted, changed (= modified,new,deleted), review, runtime, all.",
    ),
]

ui_app = typer.Typer(
    name="ui", help="Read-only terminal views (Rich).", no_args_is_help=True, rich_markup_mode=None
)
oracle_app = typer.Typer(
    name="oracle",
    help="Reference modules that carry names, and naming from them.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_cmd)
    ui_app.command("diff")(ui_diff)
    app.add_typer(ui_app, name="ui")
    oracle_app.command("add")(oracle_add)
    oracle_app.command("match")(oracle_match)
    oracle_app.command("list")(oracle_list)
    app.add_typer(oracle_app, name="oracle")


CrossProgramOption = Annotated[
    bool,
    typer.Option(
        "--cross-program",
        help="Compare versions of two different programs anyway "
        "(unrelated code: names are never carried between programs).",
    ),
]


def _check_programs(conn, a: int, b: int, cross: bool, *, to_stderr: bool = False) -> None:
    """Refuse a cross-program pair (exit 2) unless ``--cross-program``; with it, print the
    warning line first."""
    warning = program_fields(conn, a, b).get("warning")
    if warning is None:
        return
    if not cross:
        fail(f"{warning}; add --cross-program to compare them anyway", 2)
    (err_console if to_stderr else console).print(
        f"[bold yellow]warning:[/] {lit(warning)}", soft_wrap=True
    )


def _only(only: str | None):
    try:
        return parse_only(only)
    except ValueError as exc:
        fail(str(exc))


OrderOption = Annotated[
    str,
    typer.Option(
        "--order",
        help="Order of the modified functions: triage (patch-like first: "
        "new bounds checks, error paths, widened arithmetic), index, or weight "
        "(most changed first).",
    ),
]


def _check_order(order: str) -> None:
    if order not in ORDERS:
        fail(f"unknown --order {order!r}: use one of {', '.join(ORDERS)}")


def _print_report(
    conn,
    report: dict,
    keep,
    *,
    pager: bool = False,
    pairing=None,
    order: str = "triage",
    short: bool = False,
    top: int = TOP_DEFAULT,
    cl: dict | None = None,
) -> None:
    view = {
        "report": report,
        "changelog": (
            reorder(cl, order)
            if cl is not None
            else changelog(conn, report, pairing=pairing, order=order)
        ),
        "toolchain_changed": toolchain_changed(conn, report),
    }

    def show() -> None:
        if short:
            console.print(
                triage_lines(
                    view, top=top, from_id=report["from_version_id"], to_id=report["to_version_id"]
                )
            )
        else:
            render_view(view, console, only=keep)

    if pager:
        with console.pager(styles=True):
            show()
    else:
        show()


def diff_cmd(
    from_version: Annotated[int, typer.Argument(help="Older (baseline) version id.")],
    to_version: Annotated[int, typer.Argument(help="Newer version id.")],
    save: Annotated[
        bool, typer.Option("--save", help="Store the report (read back by every surface).")
    ] = False,
    carry: Annotated[
        bool,
        typer.Option(
            "--carry",
            help="Carry names to matched functions of TO that got a new identity (diff-carry, through the gate).",
        ),
    ] = False,
    only: OnlyOption = None,
    cross_program: CrossProgramOption = False,
    order: OrderOption = "triage",
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """What changed between two versions: classification per function, then the changelog.

    Without --save/--carry this is a pure read (the stored report if one was saved). Two
    versions of different programs are refused unless --cross-program; --carry never
    carries names between programs."""
    keep = _only(only)
    _check_order(order)

    if not (save or carry):
        conn = ro(db)
        _check_programs(conn, from_version, to_version, cross_program, to_stderr=json_out)
        kept = kept_view(conn, from_version, to_version, with_changelog=not json_out)
        report, pairing, cl = kept["report"], None, kept["changelog"]
    else:
        cl = None
        conn = rw(db)
        queries.get_version(conn, from_version)
        queries.get_version(conn, to_version)
        crossing = program_fields(conn, from_version, to_version).get("warning")
        if carry and crossing:
            fail(f"--carry never carries names between programs: {crossing}", 2)
        _check_programs(conn, from_version, to_version, cross_program, to_stderr=json_out)
        if carry:
            res = carry_names(conn, from_version, to_version)
            (err_console if json_out else console).print(
                f"names carried from version {from_version} to {to_version}: {res['written']} written, "
                f"{res['refused']} refused by the gate, {res['already']} already there, "
                f"{res['duplicate']} skipped (name bound elsewhere), {res['review']} written under review"
            )
        report, pairing = compute_diff_with_pairing(conn, from_version, to_version)
        if save:
            save_diff(conn, report)
            report["stored"] = True
            (err_console if json_out else console).print(
                f"saved the diff of version {from_version} -> {to_version}"
            )
        elif carry:
            report["carried"] = True  # the header says names were carried before this report
    if json_out:
        print_json(report)
        return
    _print_report(conn, report, keep, pairing=pairing, order=order, cl=cl)


def ui_diff(
    from_version: Annotated[int, typer.Argument(help="Older (baseline) version id.")],
    to_version: Annotated[int, typer.Argument(help="Newer version id.")],
    only: OnlyOption = None,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="The full listing: every function's row (unchanged and moved too) and the whole changelog.",
        ),
    ] = False,
    top: Annotated[
        int,
        typer.Option(
            "--top", min=1, help="How many modified functions the short view lists by triage."
        ),
    ] = TOP_DEFAULT,
    order: OrderOption = "triage",
    pager: Annotated[
        bool, typer.Option("--pager", help="Page the output (less -R or $PAGER).")
    ] = False,
    function: Annotated[
        str | None,
        typer.Option(
            "--function",
            help="One function (stable_id): its code in both releases, changes marked.",
        ),
    ] = None,
    unified: Annotated[
        bool, typer.Option("--unified", help="With --function: one column instead of side by side.")
    ] = False,
    cross_program: CrossProgramOption = False,
    db: DbOption = None,
) -> None:
    """The diff for patch triage; read-only, never carries names.

    By default a short view: the summary, the top modified functions by triage (new bounds
    checks, error paths, widened arithmetic first) with the reason for each, and one line
    per group for the rest (layout changes, relocations, churn, new, deleted). --all (or
    --only) gives the full table and changelog; --function STABLE_ID shows that function's
    code in both releases. Two versions of different programs are refused unless
    --cross-program."""
    _check_order(order)
    conn = ro(db)
    try:
        _check_programs(conn, from_version, to_version, cross_program)
    finally:
        conn.close()
    if function is not None:
        return print_function_diff(
            db, function, from_version, to_version, unified=unified, pager=pager or None
        )
    keep = _only(only if only is not None else (None if show_all else "changed"))
    short = only is None and not show_all

    conn = ro(db)
    try:
        kept = kept_view(conn, from_version, to_version)
        _print_report(
            conn,
            kept["report"],
            keep,
            pager=pager,
            order=order,
            short=short,
            top=top,
            cl=kept["changelog"],
        )
    finally:
        conn.close()


# ---------------------------------------------------------------- oracle


def oracle_add(
    file: Annotated[
        Path, typer.Argument(help="Reference .wasm that carries names (name section or exports).")
    ],
    label: Annotated[
        str | None, typer.Option("--label", "-l", help="Label (default: file name).")
    ] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Store a reference module whose names the oracle can give to matching functions."""

    conn = rw(db, create=True)
    res = add_oracle(conn, file, label=label)
    if json_out:
        print_json(res)
        return
    console.print(
        f"added oracle [bold]{res['id']}[/] ",
        lit(res["label"], "bold cyan"),
        f": {res['named']} named of {res['defined']} defined functions"
        + (" (a runtime library)" if res["runtime"] else ""),
    )


def oracle_list(json_out: JsonOption = False, db: DbOption = None) -> None:
    """List the stored reference modules."""

    rows = list_oracles(ro(db))
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No oracle modules yet. Try: kbtool oracle add libc-ref.wasm")
        return
    t = Table(title="oracle modules")
    for col in ("id", "label", "size", "sha256"):
        t.add_column(col, justify="right" if col in ("id", "size") else "left")
    for r in rows:
        t.add_row(str(r["id"]), lit(r["label"]), f"{r['size']:,}", r["sha256"][:16])
    console.print(t)


def oracle_match(
    version: Annotated[int, typer.Argument(help="Version id to name (see `kbtool versions`).")],
    oracle: Annotated[
        list[int] | None, typer.Option("--oracle", help="Only this oracle id (repeatable).")
    ] = None,
    exact_only: Annotated[
        bool, typer.Option("--exact-only", help="Only exact shape matches (confidence 1.0).")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Name functions of a version by exact shape (1.0) or structural match (the score), as oracle."""

    conn = rw(db)
    res = match_oracle(conn, version, oracle_ids=oracle or None, structural=not exact_only)
    if json_out:
        print_json(res)
        return
    for o in res["oracles"]:
        console.print(
            "oracle ",
            lit(o["label"], "bold cyan"),
            f": {o['exact']} exact, {o['structural']} structural, {o['skipped_review']} skipped (review)"
            f" -> {o['written']} written, {o['refused']} refused, {o['unchanged']} unchanged",
        )
    console.print(f"version {version}: {res['written']} written, {res['refused']} refused")
