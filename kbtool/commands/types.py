"""``kbtool types add|list|show|apply|rename|field|export|revert``: struct, union, enum and
typedef declarations kept in the KB (issue 27), written as a person through the gate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbtool.commands.common import DbOption, JsonOption, console, fail, print_json, ro, rw
from kbtool.kb import gate
from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import types as ts

NoLock = Annotated[
    bool,
    typer.Option("--no-lock", help="Leave it open to higher-confidence oracle/export writers."),
]

app = typer.Typer(
    help="Struct, union, enum and typedef declarations: add, list, show, apply, rename, export.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="types")


def _run(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except (KBError, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise  # unreachable: fail exits


def _report(d: gate.Decision, ok: str) -> None:
    if d["written"]:
        console.print(lit(ok))
    elif d["reason"] == "no change":
        console.print(lit("unchanged: nothing written"))
    else:
        fail(f"not written: {d['reason']}")


@app.command("add")
def add(
    file: Annotated[
        str,
        typer.Argument(help="A C header of struct/union/enum/typedef declarations ('-': stdin)."),
    ],
    version: Annotated[
        int | None,
        typer.Option("--version", help="The version the types were read from (recorded)."),
    ] = None,
    no_lock: NoLock = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Parse a header and store each named type it declares (a redeclared type is a new revision)."""
    if file == "-":
        text = sys.stdin.read(ts.MAX_HEADER + 1)
    else:
        p = Path(file)
        if not p.is_file():
            fail(f"no such file: {file}")
        if p.stat().st_size > ts.MAX_HEADER:
            fail(f"{file}: larger than {ts.MAX_HEADER} bytes")
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read {file}: {str(exc).splitlines()[0]}")
    conn = rw(db)
    res = _run(
        ts.add_types,
        conn,
        text,
        version_id=version,
        lock=not no_lock,
        evidence={"file": Path(file).name if file != "-" else "stdin"},
    )
    if json_out:
        print_json(res)
        return
    for t in res["types"]:
        state = (
            "written"
            if t["written"]
            else ("unchanged" if t["reason"] == "no change" else f"refused: {t['reason']}")
        )
        size = f" ({t['size']} bytes)" if t.get("size") is not None else ""
        console.print(lit(f"{t['name']}{size}: {state}"))
    console.print(
        lit(f"{res['written']} written, {res['unchanged']} unchanged, {res['refused']} refused")
    )
    if res["refused"]:
        raise typer.Exit(1)


@app.command("list")
def list_cmd(
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=ts.MAX_LIST)] = 200,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The KB's types with their size, members, provenance and how often they are applied."""
    conn = ro(db)
    res = _run(ts.list_types, conn, offset, limit)
    if json_out:
        print_json(res)
        return
    if not res["types"]:
        console.print(lit("no types yet: kbtool types add FILE.h"))
        return
    t = Table(title=f"{res['total']} types", title_justify="left")
    for c in ("name", "kind", "size", "members", "uses", "provenance", "conf", "lock"):
        t.add_column(c)
    for r in res["types"]:
        t.add_row(
            lit(r["name"]),
            lit(r["kind"]),
            lit("" if r["size"] is None else str(r["size"])),
            str(r["fields"]),
            str(r["uses"]),
            lit(r["provenance"]),
            f"{r['confidence']:.2f}",
            "yes" if r["locked"] else "",
        )
    console.print(t)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="NAME, struct NAME, union NAME or enum NAME.")],
    history: Annotated[
        bool, typer.Option("--history", help="Also every gate decision on it.")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """One type: its declaration, members with offsets and sizes, where it is applied."""
    conn = ro(db)
    r = _run(ts.show_type, conn, name)
    if json_out:
        if not history:
            r.pop("history", None)
        print_json(r)
        return
    console.print(lit(r["text"]))
    console.print(
        lit(
            f"{r['kind']}, {r.get('size')} bytes, align {r.get('align')}; {r['provenance']}"
            f" {r['confidence']:.2f}{', locked' if r['locked'] else ''}"
        )
    )
    if r.get("fields"):
        t = Table(title="members", title_justify="left")
        for c in ("offset", "size", "name", "type"):
            t.add_column(c)
        for f in r["fields"]:
            t.add_row(
                str(f["offset"]), str(f["size"]), lit(f["name"] or "(anonymous)"), lit(f["type"])
            )
        console.print(t)
    for n, v in r.get("enumerators") or []:
        console.print(lit(f"  {n} = {v}"))
    for a in r["applied"]:
        console.print(
            lit(
                f"applied: {a['kind']} {a['target']}{' ' + a['key'] if a['key'] else ''}: {a['type']}"
                f" ({a['provenance']})"
            )
        )
    if history:
        for e in r["history"]:
            console.print(
                lit(
                    f"#{e['id']} {e['kind']}{'' if e['written'] else ' (refused)'} by {e['actor']}:"
                    f" {e['reason']}"
                )
            )


@app.command("apply")
def apply(
    args: Annotated[
        list[str],
        typer.Argument(
            help=(
                "FUNCTION param N TYPE | FUNCTION local N TYPE | VERSION g:GLOBAL TYPE | VERSION data TARGET TYPE"
                " (TYPE: a C type such as 'struct sqlite3 *'; FUNCTION: stable id, VERSION:INDEX, #INDEX or name;"
                ' TARGET: 0xADDRESS, a data label or "text).'
            )
        ),
    ],
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the applied type (leave TYPE out).")
    ] = False,
    version: Annotated[
        int | None, typer.Option("--version", help="Version a FUNCTION's locals refer to.")
    ] = None,
    no_lock: NoLock = False,
    db: DbOption = None,
) -> None:
    """Give a parameter, a local, a global or a data item a type (checked against its wasm type)."""
    want = 3 if clear else 4
    if len(args) >= 2 and args[1].startswith("g:"):
        want -= 1
    if len(args) != want:
        fail(
            "usage: kbtool types apply FUNCTION param|local N TYPE, VERSION g:GLOBAL TYPE or"
            " VERSION data TARGET TYPE (with --clear: no TYPE)"
        )
    type_text = None if clear else args[-1]
    conn = rw(db)
    if args[1].startswith("g:") or args[1] == "data":
        if not args[0].isdigit():
            fail(f"bad version {args[0][:30]!r}: a version id (kbtool versions)")
        target = args[1] if args[1].startswith("g:") else args[2]
        d = _run(ts.apply_data, conn, int(args[0]), target, type_text, lock=not no_lock)
        _report(d, f"{target}: {'type cleared' if clear else type_text}")
        return
    if args[1] not in ("param", "local"):
        fail(f"unknown target {args[1][:30]!r}: param, local, data or g:GLOBAL")
    d = _run(
        ts.apply_local,
        conn,
        args[0],
        args[2],
        type_text,
        param=args[1] == "param",
        version_id=version,
        lock=not no_lock,
    )
    _report(d, f"{args[1]} {args[2]}: {'type cleared' if clear else type_text}")


@app.command("rename")
def rename(
    old: Annotated[
        str, typer.Argument(help="A KB type (NAME, struct NAME) or a recovered struct (f41_p0).")
    ],
    new: Annotated[str, typer.Argument(help="The new tag (a C identifier).")],
    version: Annotated[
        int | None,
        typer.Option("--version", help="Version of a recovered struct (default: the latest)."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Rename a type; naming a struct the analysis recovered makes it a KB type applied where it was found."""
    conn = rw(db)
    res = _run(ts.rename_type, conn, old, new, version_id=version)
    console.print(
        lit(f"{res['from']} -> {res['name']}: {res['written']} written, {res['applied']} applied")
    )


@app.command("field")
def field(
    type_name: Annotated[str, typer.Argument(help="The struct or union (NAME or struct NAME).")],
    member: Annotated[
        str, typer.Argument(help="The member: its byte offset (332, 0x14c) or its name.")
    ],
    new: Annotated[str, typer.Argument(help="The new member name (a C identifier).")],
    db: DbOption = None,
) -> None:
    """Rename one member of a struct or union (a new revision of the type)."""
    conn = rw(db)
    d = _run(ts.rename_field, conn, type_name, member, new)
    _report(d, f"{type_name}: {member} -> {new}")


@app.command("export")
def export(
    out: Annotated[
        str | None, typer.Option("--out", "-o", help="Write the header here (default: stdout).")
    ] = None,
    db: DbOption = None,
) -> None:
    """A C header of the KB's types (compiles on its own: kbtool types export > kb.h)."""
    conn = ro(db)
    text = _run(ts.export_header, conn)
    if out is None:
        sys.stdout.write(text)
        return
    from kbtool.commands.common import check_output

    check_output(out, db)
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {str(exc).splitlines()[0]}")
    console.print(lit(f"wrote {out}"))


@app.command("revert")
def revert(
    name: Annotated[str, typer.Argument(help="The type (NAME, struct NAME ...).")],
    steps: Annotated[
        int, typer.Option("--steps", min=1, help="How many written changes to go back.")
    ] = 1,
    db: DbOption = None,
) -> None:
    """Restore a type as it was before its latest change(s)."""
    conn = rw(db)
    target = name.strip()
    try:
        target = ts.resolve_name(conn, name)["target"]
    except KBError:
        pass  # a cleared type: revert by its exact name
    d = gate.revert_knowledge(conn, "type", target, "", steps=steps, actor="human:cli")
    if not d["written"]:
        fail(f"not reverted: {d['reason']}")
    console.print(lit(f"{target}: {d['reason']}"))
