"""``kbtool comment``, ``set-type``, ``rename-local``, ``name-data``, ``knowledge``,
``revert-knowledge``: knowledge beyond names (issue 27), written as a person through the gate."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kbtool.commands.common import DbOption, JsonOption, console, fail, print_json, ro, rw
from kbtool.kb import gate
from kbtool.kb import knowledge as kn
from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import knowledge as ks

FunctionArg = Annotated[
    str,
    typer.Argument(
        help="A function: stable id, VERSION:INDEX (2:1031), #INDEX (latest version) or its name."
    ),
]
VersionOpt = Annotated[
    int | None,
    typer.Option(
        "--version",
        help="Version the offsets/locals refer to (default: the latest holding the function).",
    ),
]
NoLock = Annotated[
    bool,
    typer.Option("--no-lock", help="Leave it open to higher-confidence oracle/export writers."),
]


def register(app: typer.Typer) -> None:
    app.command("comment")(comment)
    app.command("set-type")(set_type)
    app.command("rename-local")(rename_local)
    app.command("name-data")(name_data)
    app.command("knowledge")(show_knowledge)
    app.command("revert-knowledge")(revert_knowledge)


def _text_arg(text: str) -> str:
    """``-`` reads the text from stdin (bounded: one character over the limit is enough to refuse)."""
    if text != "-":
        return text
    return sys.stdin.read(kn.MAX_COMMENT + 1)


def _report(d: gate.Decision, ok: str) -> None:
    if d["written"]:
        console.print(lit(ok))
    elif d["reason"] == "no change":
        console.print(lit("unchanged: nothing written"))
    else:
        fail(f"not written: {d['reason']}")


def _run(fn: Any, *args: Any, **kw: Any) -> gate.Decision:
    try:
        return fn(*args, **kw)
    except (KBError, ValueError) as exc:
        fail(str(exc))
        raise  # unreachable: fail exits


def comment(
    target: FunctionArg,
    text: Annotated[
        str, typer.Argument(help="The comment ('-': read it from stdin; '' with --clear).")
    ] = "",
    line: Annotated[
        str | None,
        typer.Option(
            "--line",
            help="Offset of an instruction (as the disassembly shows it, hex 0x... or decimal): a line comment.",
        ),
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the comment.")] = False,
    version: VersionOpt = None,
    no_lock: NoLock = False,
    db: DbOption = None,
) -> None:
    """Comment a function (or, with --line, one instruction of it), as a human (locked)."""
    off = None
    if line is not None:
        try:
            off = (
                int(line, 16)
                if not line.lower().startswith("0x") and any(c in "abcdef" for c in line.lower())
                else int(line, 0)
            )
        except ValueError:
            fail(f"bad --line {line[:40]!r}: an instruction offset like 0x19fd")
    body = None if clear else _text_arg(text)
    if body == "" and not clear:
        fail("empty comment: give the text (or --clear to remove the comment)")
    conn = rw(db)
    d = _run(ks.set_comment, conn, target, body, line=off, version_id=version, lock=not no_lock)
    what = "line comment" if off is not None else "comment"
    _report(d, f"{what} {'cleared' if clear else 'written'} ({d['reason']})")


def set_type(
    target: FunctionArg,
    prototype: Annotated[
        str, typer.Argument(help="C prototype, e.g. 'int f(sqlite3 *db, const char *zSql)'.")
    ] = "",
    clear: Annotated[bool, typer.Option("--clear", help="Remove the prototype.")] = False,
    version: VersionOpt = None,
    no_lock: NoLock = False,
    db: DbOption = None,
) -> None:
    """Set a function's prototype (checked against its wasm signature); its parameter names
    become the C parameter names."""
    if not clear and not prototype.strip():
        fail("empty prototype: give e.g. 'int f(char *s)' (or --clear)")
    conn = rw(db)
    d = _run(
        ks.set_prototype,
        conn,
        target,
        None if clear else prototype,
        version_id=version,
        lock=not no_lock,
    )
    rec = (
        None
        if clear
        else kn.get(conn, "prototype", ks.resolve_function(conn, target, version)["stable_id"])
    )
    _report(
        d,
        "prototype cleared"
        if clear
        else f"prototype: {rec['value']['text'] if rec else prototype}",
    )


def rename_local(
    target: FunctionArg,
    local: Annotated[
        str, typer.Argument(help="Wasm local index (3, l3, p0) or the local's current name.")
    ],
    name: Annotated[str, typer.Argument(help="New name (a C identifier; '' with --clear).")] = "",
    clear: Annotated[bool, typer.Option("--clear", help="Remove the name.")] = False,
    version: VersionOpt = None,
    no_lock: NoLock = False,
    db: DbOption = None,
) -> None:
    """Name a parameter or local variable of a function."""
    if not clear and not name:
        fail("empty name: give the new name (or --clear)")
    conn = rw(db)
    d = _run(
        ks.rename_local,
        conn,
        target,
        local,
        None if clear else name,
        version_id=version,
        lock=not no_lock,
    )
    _report(d, f"local {local} {'name cleared' if clear else '-> ' + name}")


def name_data(
    version: Annotated[
        int, typer.Argument(help="Version id (its data model: `kbtool analyze VERSION`).")
    ],
    target: Annotated[
        str, typer.Argument(help='0xADDRESS, a data label, "text or g:GLOBAL (as `kbtool xrefs`).')
    ],
    name: Annotated[str, typer.Argument(help="New name (a C identifier; '' with --clear).")] = "",
    clear: Annotated[bool, typer.Option("--clear", help="Remove the name.")] = False,
    no_lock: NoLock = False,
    db: DbOption = None,
) -> None:
    """Name a data item (by its content: every release with the same bytes shows it) or a global."""
    if not clear and not name:
        fail("empty name: give the new name (or --clear)")
    conn = rw(db)
    d = _run(ks.name_data, conn, version, target, None if clear else name, lock=not no_lock)
    _report(d, f"{target} {'name cleared' if clear else '-> ' + name}")


def _key_of(kind: str, line: str | None, local: str | None, conn: Any, f: dict) -> str:
    if kind == "line_comment":
        if line is None:
            fail("give --line OFFSET for a line comment")
        recs = [r for r in kn.for_target(conn, f["stable_id"]) if r["kind"] == "line_comment"]
        off = int(line, 0)
        for r in recs:
            if int(r["key"]) == off:
                return r["key"]
        code = ks._Code(conn, f["version_id"])
        try:
            return ks._line_key(code, f["index"], off)[0]
        except KBError as exc:
            fail(str(exc))
    if kind == "local":
        if local is None:
            fail("give --local INDEX for a local name")
        try:
            return str(ks.local_index(conn, f, local))
        except KBError as exc:
            fail(str(exc))
    return ""


def revert_knowledge(
    target: FunctionArg,
    kind: Annotated[
        str,
        typer.Argument(
            help="comment, line_comment, prototype or local (data names: data_name with a data_id/g:KEY target)."
        ),
    ],
    line: Annotated[
        str | None, typer.Option("--line", help="The line's offset (line_comment).")
    ] = None,
    local: Annotated[str | None, typer.Option("--local", help="The local's index (local).")] = None,
    steps: Annotated[int, typer.Option("--steps", help="How many written changes to go back.")] = 1,
    version: VersionOpt = None,
    db: DbOption = None,
) -> None:
    """Restore a comment, prototype or local name as it was before its latest change(s)."""
    if kind not in kn.KINDS:
        fail(f"unknown kind {kind[:30]!r}: one of {', '.join(kn.KINDS)}")
    conn = rw(db)
    if kind == "data_name":
        key_target, key = target, ""
    else:
        f = _run(ks.resolve_function, conn, target, version)
        key_target, key = f["stable_id"], _key_of(kind, line, local, conn, f)
    d = gate.revert_knowledge(conn, kind, key_target, key, steps=steps, actor="human:cli")
    if not d["written"]:
        fail(f"not reverted: {d['reason']}")
    console.print(lit(f"{kind}: {d['reason']}"))


def show_knowledge(
    target: FunctionArg,
    history: Annotated[
        bool, typer.Option("--history", help="Also every gate decision on them.")
    ] = False,
    version: VersionOpt = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """A function's comments, prototype, line comments and local names (with provenance)."""
    conn = ro(db)
    f = _run(ks.resolve_function, conn, target, version)
    k = ks.function_knowledge(conn, f["stable_id"], f["version_id"])
    if json_out:
        out = {"stable_id": f["stable_id"], "version_id": f["version_id"], "index": f["index"], **k}
        if history:
            out["history"] = ks.history(conn, f["stable_id"])
        print_json(out)
        return
    print_knowledge(k, f)
    if history:
        print_history(ks.history(conn, f["stable_id"]))


def print_knowledge(k: dict[str, Any], f: dict[str, Any]) -> None:
    """The knowledge table ``kbtool knowledge`` and ``kbtool show`` print."""
    t = Table(
        title=f"knowledge of {f['stable_id']} (v{f['version_id']}#{f['index']})",
        title_justify="left",
    )
    for c in ("what", "value", "provenance", "conf", "lock"):
        t.add_column(c)

    def row(what: str, value: str, r: dict[str, Any]) -> None:
        carried = r.get("carried")
        prov = r["provenance"] + (
            f" (from v{carried['from_version_id']}: {carried['how']})" if carried else ""
        )
        t.add_row(
            lit(what), lit(value), lit(prov), f"{r['confidence']:.2f}", "yes" if r["locked"] else ""
        )

    if k["comment"]:
        row("comment", k["comment"]["text"], k["comment"])
    if k["prototype"]:
        row("prototype", k["prototype"]["text"], k["prototype"])
    for r in k["locals"]:
        row(f"local {r['index']}", r["name"], r)
    for r in k["line_comments"]:
        where = f"0x{r['address']:x}" if r.get("address") is not None else f"+{r['offset']}"
        row(f"line {where}", r["text"], r)
    if not t.row_count:
        console.print(Text("no comments, prototype or local names yet", style="dim"))
        return
    console.print(t)


def print_history(events: list[dict[str, Any]]) -> None:
    t = Table(title="decisions", title_justify="left")
    for c in ("id", "what", "event", "from", "to", "provenance", "actor", "reason"):
        t.add_column(c)
    for e in events:
        what = e["subject"] + (f" {e['key']}" if e["key"] else "")
        t.add_row(
            str(e["id"]),
            lit(what),
            lit(e["kind"] + ("" if e["written"] else " (refused)")),
            lit(e["old_text"]),
            lit(e["new_text"]),
            lit(e["provenance"]),
            lit(e["actor"]),
            lit(e["reason"]),
        )
    console.print(t)


def knowledge_of(conn: Any, stable_id: str, version_id: int | None) -> dict[str, Any]:
    """``kbtool show --json``'s ``knowledge`` field."""
    return ks.function_knowledge(conn, stable_id, version_id)


def print_knowledge_for(conn: Any, stable_id: str, shown: dict[str, Any]) -> None:
    """``kbtool show``: the knowledge table when the function has any."""
    k = ks.function_knowledge(conn, stable_id, shown["version_id"])
    if k["comment"] or k["prototype"] or k["locals"] or k["line_comments"]:
        console.print()
        print_knowledge(
            k, {"stable_id": stable_id, "version_id": shown["version_id"], "index": shown["index"]}
        )
