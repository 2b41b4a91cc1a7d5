"""Data symbols and cross-references: ``kbtool xrefs``, ``strings``, ``globals``, ``data``,
``memory`` (reads of the data model ``kbtool analyze`` stores; issue 26)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kbtool.commands.common import DbOption, JsonOption, console, print_json, ro
from kbtool.render.text import lit
from kbtool.services import data as data_svc

VersionArg = Annotated[int, typer.Argument(help="Version id (see `kbtool versions`).")]


def register(app: typer.Typer) -> None:
    app.command("xrefs")(xrefs)
    app.command("strings")(strings)
    app.command("globals")(globals_cmd)
    app.command("data")(data_cmd)
    app.command("memory")(memory)


def _table(*columns: str, title: str | None = None):
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def _fn(index: int, name: str | None) -> Any:
    if index < 0:
        return lit("(data)")
    return lit(f"#{index} {name}" if name else f"#{index}")


def _target_line(t: dict[str, Any]) -> Any:
    if t["kind"] == "function":
        return lit(f"function #{t['index']} {t.get('name') or ''}".rstrip())
    if t["kind"] == "global":
        return lit(
            f"global g{t['index']} {t.get('name') or ''} ({t['type']}"
            f"{' mut' if t['mutable'] else ''}, role {t.get('role') or '-'})"
        )
    text = f" {t['text']!r}" if t.get("text") is not None else ""
    return lit(f"{t['kind']} {t['label']} at 0x{t['address']:x} ({t['size']} bytes){text}")


def xrefs(
    version: VersionArg,
    target: Annotated[
        str,
        typer.Argument(
            help="A function (name, #index or stable id), a global (g:NAME or g:INDEX), an address"
            ' (0x1234), a data label (s_create_table) or a string ("text).'
        ),
    ],
    limit: Annotated[int, typer.Option("--limit", min=1, max=100_000, help="Rows at most.")] = 200,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Who uses TARGET: each place (function, offset, kind); for a function also what it uses."""
    with ro(db) as conn:
        res = data_svc.xrefs(conn, version, target, limit=limit)
    if json_out:
        print_json(res)
        return
    console.print(_target_line(res["target"]))
    t = _table("function", "offset", "kind", title=f"{res['total']} reference(s)")
    for r in res["refs"]:
        off = "" if r.get("offset") is None else f"0x{r['offset']:x}"
        t.add_row(_fn(r["func_index"], r.get("name")), off, r["kind"])
    console.print(t)
    if res["total"] > len(res["refs"]):
        console.print(f"... {res['total'] - len(res['refs'])} more (--limit)")
    uses = res.get("uses")
    if uses:
        calls = ", ".join(
            f"#{c['index']} {c.get('name') or c.get('import') or ''}".strip() for c in uses["calls"]
        )
        console.print(lit(f"calls: {calls or '-'}"))
        u = _table("offset", "kind", "target", title="data and globals it uses")
        for r in uses["data"]:
            what = (
                f"g{r['target']}"
                if r["target_kind"] == "global"
                else r.get("label") or f"0x{r['target']:x}"
            )
            if r.get("text") is not None:
                what += f" {r['text'][:60]!r}"
            u.add_row(f"0x{r['offset']:x}", r["kind"], lit(what))
        console.print(u)


def strings(
    version: VersionArg,
    search: Annotated[
        str | None, typer.Option("--search", "-s", help="Substring of the text.")
    ] = None,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100_000)] = 100,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The version's strings (C, UTF-16, Go) with their labels and xref counts."""
    with ro(db) as conn:
        page = data_svc.strings(conn, version, search=search, offset=offset, limit=limit)
    _items(page, json_out, "strings")


def data_cmd(
    version: VersionArg,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="cstring, utf16, gostring, string, pointer_table, funcptr_table, numeric, zero.",
        ),
    ] = None,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100_000)] = 100,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The version's data items (address, size, kind, label, xref count)."""
    with ro(db) as conn:
        page = data_svc.list_data(conn, version, kind=kind, offset=offset, limit=limit)
    _items(page, json_out, "data items")


def _items(page: dict[str, Any], json_out: bool, what: str) -> None:
    if json_out:
        print_json(page)
        return
    t = _table("address", "size", "kind", "xrefs", "label", "text", title=f"{page['total']} {what}")
    for it in page["items"]:
        t.add_row(
            f"0x{it['address']:x}",
            str(it["size"]),
            it["kind"],
            str(it["refs"]),
            lit(it["label"]),
            lit("" if it["text"] is None else repr(it["text"])[1:-1][:120]),
        )
    console.print(t)
    if page["next_offset"] is not None:
        console.print(f"... more: --offset {page['next_offset']}")


def globals_cmd(version: VersionArg, json_out: JsonOption = False, db: DbOption = None) -> None:
    """The version's globals: type, initial value, import/export, role, name, readers/writers."""
    with ro(db) as conn:
        rows = data_svc.globals_of(conn, version)
    if json_out:
        print_json(rows)
        return
    t = _table("global", "type", "initial", "name", "role", "import/export", "reads", "writes")
    for g in rows:
        ie = g["import_name"] or ", ".join(g["exports"])
        t.add_row(
            f"g{g['index']}",
            g["type"] + (" mut" if g["mutable"] else ""),
            "" if g["initial"] is None else str(g["initial"]),
            lit(g["name"] or ""),
            g["role"] or "",
            lit(ie),
            str(g["reads"]),
            str(g["writes"]),
        )
    console.print(t)


def memory(
    version: VersionArg,
    address: Annotated[str, typer.Argument(help="Address (0x1234 or decimal).")],
    length: Annotated[int, typer.Option("--length", "-n", min=1, max=data_svc.MAX_READ)] = 64,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The initial memory at ADDRESS as hex and ASCII (what the data segments put there)."""
    try:
        addr = int(address, 0)
    except ValueError:
        raise data_svc.DataError(f"not an address: {address[:40]!r} (try 0x1234)") from None
    with ro(db) as conn:
        res = data_svc.memory(conn, version, addr, length)
    if json_out:
        print_json(res)
        return
    it = res["item"]
    if it:
        console.print(
            lit(f"{it['label']} ({it['kind']}, {it['size']} bytes at 0x{it['address']:x})")
        )
    for r in res["rows"]:
        console.print(lit(f"{r['address']:08x}  {r['hex']:<47}  {r['ascii']}"))
