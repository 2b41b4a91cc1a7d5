"""Annotation commands, all through the gate: set-name, unlock, revert, import-names;
and their read side: renames, history, search, export."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kbtool.commands.common import (
    DbOption,
    ForceOption,
    JsonOption,
    check_output,
    console,
    fail,
    print_json,
    ro,
    rw,
)
from kbtool.kb import gate, queries
from kbtool.render.text import lit
from kbtool.services import names_io, nav
from kbtool.services.inputs import read_text_input
from kbtool.services.outfile import terminate_raises, write_atomic
from kbtool.textutil import clip


def register(app: typer.Typer) -> None:
    app.command("set-name")(set_name)
    app.command()(unlock)
    app.command()(revert)
    app.command()(renames)
    app.command()(history)
    app.command()(search)
    app.command("export")(export_cmd)
    app.command("import-names")(import_names)


def _decision(d: gate.Decision, ok_text: str) -> None:
    if d["written"]:
        console.print(lit(ok_text))
    else:
        fail(f"not written: {d['reason']}")


def set_name(
    stable_id: Annotated[str, typer.Argument(help="The function's stable_id.")],
    name: Annotated[str, typer.Argument(help="New name (a C-like identifier; `::` allowed).")],
    summary: Annotated[
        str | None, typer.Option("--summary", help="Purpose, parameters, behaviour.")
    ] = None,
    type_: Annotated[
        str | None, typer.Option("--type", help="Type signature, e.g. 'int f(char *)'.")
    ] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="0.0..1.0")] = 1.0,
    no_lock: Annotated[
        bool,
        typer.Option(
            "--no-lock", help="Leave the name open to higher-confidence oracle/export names."
        ),
    ] = False,
    confirm: Annotated[
        bool,
        typer.Option(
            "--confirm",
            help="Make the unchanged current name your own human name (locked unless --no-lock).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Name a function as a human (locked by default: no tool may overwrite it).

    The function's current name, with no new --summary or --type, writes nothing (an oracle
    or agent name stays what it is); --confirm records it as your decision.
    """
    conn = rw(db)
    d = gate.human_rename(
        conn,
        stable_id,
        name,
        actor="human:cli",
        summary=summary,
        type_signature=type_,
        confidence=confidence,
        lock=not no_lock,
        confirm=confirm,
    )
    if not d["written"] and d["reason"] in ("no change", "unchanged"):
        sym = queries.get_symbol(conn, stable_id) or {}
        how = f"{sym.get('provenance')} {float(sym.get('confidence') or 0):.2f}" + (
            ", locked" if sym.get("locked") else ""
        )
        hint = "" if sym.get("provenance") == "human" else "; --confirm makes it your human name"
        console.print(lit(f"{stable_id} is already named {name} ({how}): nothing written{hint}"))
        return
    _decision(d, f"{stable_id} -> {name}" + ("" if no_lock else " (locked)"))


def unlock(
    stable_id: Annotated[str, typer.Argument(help="The function's stable_id.")], db: DbOption = None
) -> None:
    """Unlock a human name so oracle/export names of higher confidence may replace it."""
    conn = rw(db)
    _decision(gate.set_lock(conn, stable_id, False, actor="human:cli"), f"{stable_id} unlocked")


def revert(
    stable_id: Annotated[str, typer.Argument(help="The function's stable_id.")],
    steps: Annotated[int, typer.Option("--steps", help="How many written changes to go back.")] = 1,
    db: DbOption = None,
) -> None:
    """Restore the annotation as it was before a change: name, provenance, confidence, lock
    (see `kbtool renames`; reverting twice redoes)."""
    conn = rw(db)
    _decision(
        gate.revert(conn, stable_id, steps=steps, actor="human:cli"), f"{stable_id}: reverted"
    )
    sym = queries.get_symbol(conn, stable_id)
    if sym and sym.get("name"):
        console.print(
            "now: ",
            lit(sym["name"], "bold"),
            lit(
                f"  {sym['provenance']} {float(sym['confidence']):.2f}"
                + ("  locked" if sym.get("locked") else "")
            ),
        )
    else:
        console.print("now: unnamed")


def renames(
    stable_id: Annotated[str, typer.Argument(help="The function's stable_id.")],
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The reversible rename trail of a function, newest first."""
    conn = ro(db)
    trail = queries.renames(conn, stable_id)
    if json_out:
        print_json(trail)
        return
    if not trail:
        console.print(lit(f"{stable_id} has never been named"))
        return
    t = Table(title=f"renames of {stable_id}")
    t.add_column("steps", justify="right")
    t.add_column("when", no_wrap=True)
    t.add_column("from → to", ratio=3, overflow="fold")
    t.add_column("by", ratio=1, overflow="fold")
    t.add_column("conf", justify="right")
    for r in trail:
        t.add_row(
            str(r["revert_steps"]),
            _when(r["at"]),
            lit(f"{r['from'] or '∅'} → {r['to']}"),
            lit(f"{r['provenance']} ({r['actor']})"),
            "" if r["confidence"] is None else f"{r['confidence']:.2f}",
        )
    console.print(t)
    console.print("revert with: kbtool revert STABLE_ID --steps N")


def _when(ts: str | None) -> str:
    """``2026-11-21T06:41:15.35Z`` -> ``2026-11-21 06:41`` (full value in --json)."""
    return (ts or "")[:16].replace("T", " ")


def history(
    stable_id: Annotated[str, typer.Argument(help="The function's stable_id.")],
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """When a function was first seen, every version it is in, and every decision on its name
    and knowledge (comment, line comments, prototype, local names and types)."""
    from kbtool.services.history import function_history

    conn = ro(db)
    h = function_history(conn, stable_id)
    if json_out:
        h.pop("timeline")  # the same events as events + knowledge_events
        print_json(h)
        return
    fs = h["first_seen"]
    console.print(
        "first seen in version ",
        str(fs["version_id"]),
        " ",
        lit(fs["label"], "cyan"),
        f" at index {fs['index']}",
    )
    t = Table(title="versions")
    for col in ("version", "label", "index", "body changed", "identity by", "name then"):
        t.add_column(col)
    names_then = {n["version_id"]: n["name"] for n in h["names_by_version"]}
    for v in h["versions"]:
        t.add_row(
            str(v["version_id"]),
            lit(v["label"]),
            str(v["index"]),
            "yes" if v["body_changed"] else "no",
            lit(v["match_method"]),
            lit(names_then.get(v["version_id"])),
        )
    console.print(t)
    e = Table(title="annotation events")
    e.add_column("when", no_wrap=True)
    e.add_column("what", no_wrap=True)  # name, comment, line +9, prototype, local 0...
    e.add_column("event", no_wrap=True)  # "rejection ×N": N identical refusals
    e.add_column("change", ratio=3, overflow="fold")
    e.add_column("conf", justify="right")
    e.add_column("actor · reason", ratio=2, overflow="fold")
    for ev in h["timeline"]:
        mark = Text("✓ " if ev["written"] else "✗ ", style="green" if ev["written"] else "red")
        kind = lit(ev["kind"])
        when = _when(ev["created_at"])
        if (ev.get("repeats") or 1) > 1:  # identical refusals: one row, how often, the last time
            kind.append(f" ×{ev['repeats']:,}", style="bold")
            if ev.get("last_at") and ev["last_at"] != ev["created_at"]:
                when += f" … {_when(ev['last_at'])}"
        old, new = (clip(x, 120) if x else "∅" for x in (ev["old_name"], ev["new_name"]))
        e.add_row(
            when,
            lit(ev["what"], "bold" if ev["what"] == "name" else "cyan"),
            mark + kind,
            lit(f"{old} → {new}"),
            "" if ev["confidence"] is None else f"{ev['confidence']:.2f}",
            lit(f"{ev['actor']} · {ev['reason']}"),
        )
    console.print(e)


def search(
    query: Annotated[
        str | None,
        typer.Argument(
            help="Case-insensitive substring of a name; `#1031` or `2:1031` for an index."
        ),
    ] = None,
    string: Annotated[
        str | None,
        typer.Option("--string", help="Functions referencing a string containing this text."),
    ] = None,
    const: Annotated[
        str | None,
        typer.Option("--const", help="Functions using this integer constant (42, -1, 0x5f3759df)."),
    ] = None,
    version: Annotated[
        int | None,
        typer.Option("--version", help="Version for --string/--const/#index (default: latest)."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", help=f"At most this many (cap {queries.SEARCH_CAP}).")
    ] = 50,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Search functions by name, index, referenced string or constant.

    Name search covers every version; `--string`, `--const` and `#index` look in one version
    (the latest unless `--version`) and list unnamed functions too.
    """
    if sum(x is not None for x in (query, string, const)) != 1:
        fail("give exactly one of: a NAME, --string TEXT, --const N")
    conn = ro(db)
    if string is not None or const is not None:
        try:
            rows = (
                nav.by_string(conn, string, version, limit)
                if string is not None
                else nav.by_const(conn, nav.parse_const(const or ""), version, limit)
            )
        except ValueError as exc:
            fail(str(exc))
        _print_located(rows, json_out, string is not None)
        return
    assert query is not None
    ref = nav.parse_ref(query) if query.lstrip().startswith("#") or ":" in query else None
    if ref is not None:
        hit = nav.function_at(
            conn, ref.index, ref.version_id if ref.version_id is not None else version
        )
        _print_located([hit] if hit else [], json_out, False)
        return
    rows = queries.search_symbols(conn, query, limit)
    if json_out:
        print_json(rows)
        return
    t = Table(title=f"{len(rows)} match(es)")
    for col in ("name", "stable_id", "provenance", "conf"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            lit(r["name"], "bold"), r["stable_id"], lit(r["provenance"]), f"{r['confidence']:.2f}"
        )
    console.print(t)


def _print_located(rows: list[dict], json_out: bool, with_strings: bool) -> None:
    """Rows with a version and an index (unnamed functions included)."""
    if json_out:
        print_json(rows)
        return
    t = Table(title=f"{len(rows)} match(es)")
    for col in ("where", "name", "stable_id", "provenance") + (
        ("strings",) if with_strings else ()
    ):
        t.add_column(col)
    for r in rows:
        cells = [
            f"v{r['version_id']}#{r['index']}",
            lit(r["name"], "bold"),
            r["stable_id"],
            lit(r["provenance"] or "unnamed"),
        ]
        if with_strings:
            cells.append(lit("; ".join(r.get("strings", [])[:3])))
        t.add_row(*cells)
    console.print(t)


def export_cmd(
    version: Annotated[int, typer.Argument(help="Version id.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file instead of stdout.")
    ] = None,
    wasm: Annotated[
        Path | None,
        typer.Option(
            "--wasm", help="Write a copy of the module with the KB's names in its `name` section."
        ),
    ] = None,
    force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Export a version's names as git-diffable, tab-separated text (or into the module: --wasm).

    Files are replaced atomically; the KB itself (or its -wal/-shm) is never an output, and
    an existing SQLite database is replaced only with --force."""

    for out in (wasm, output):
        check_output(out, db, force)
    if wasm is not None and output is not None and os.path.abspath(wasm) == os.path.abspath(output):
        fail("--wasm and -o name the same file")
    conn = ro(db)
    try:
        with terminate_raises():
            if wasm is not None:
                data, n = names_io.named_module(conn, version)
                write_atomic(wasm, data)
                console.print(lit(f"wrote {wasm} ({n} function names in its name section)"))
                if output is None:
                    return
            text = names_io.export_text(conn, version)
            if output is None:
                sys.stdout.write(text)
            else:
                write_atomic(output, text)
                console.print(lit(f"wrote {output} ({text.count(chr(10)) - 3} functions)"))
    except OSError as exc:
        fail(f"cannot write {exc.filename or wasm or output}: {exc.strerror or exc}")
    finally:
        conn.close()


def import_names(
    file: Annotated[Path, typer.Argument(help="A file written by `kbtool export`.")],
    version: Annotated[
        int | None,
        typer.Option(
            "--version",
            help="Target version (default: the one with the same module, else the most related).",
        ),
    ] = None,
    as_human: Annotated[
        bool,
        typer.Option(
            "--as-human",
            help="Record every name as your own human name (locked unless --no-lock), whatever the file says.",
        ),
    ] = False,
    no_lock: Annotated[
        bool, typer.Option("--no-lock", help="With --as-human: leave the names unlocked.")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Read names from a `kbtool export` file into the KB, each onto the function it belongs to:
    same module + index, else a unique exact body, else a unique shape (not for tiny bodies),
    else the stable id. Ambiguous rows name nothing and are listed.

    Each name keeps the provenance and confidence its row gives (oracle, export, agent,
    diff-carry); a teammate's human names land as human but unlocked, and never replace a
    human name of this KB. With --as-human every name is your decision: human, locked."""

    text = read_text_input(file, "names")  # at most KBTOOL_MAX_NAMES_BYTES (256 MiB)
    conn = rw(db)
    rep = names_io.import_names(
        conn, text, source=file.name, version_id=version, as_human=as_human, lock=not no_lock
    )
    if json_out:
        print_json(rep.as_dict())
        return
    methods = ", ".join(f"{m} {n}" for m, n in rep.by_method.items())
    console.print(f"placed on version {rep.version_id}: {methods}")
    kinds = ", ".join(f"{p} {n}" for p, n in sorted(rep.by_provenance.items())) or "none"
    lock_note = " (locked)" if as_human and not no_lock else ""
    console.print(
        lit(
            f"imported {rep.written} name(s){lock_note}: {kinds}; {rep.already} already"
            f" the same; {rep.refused} refused by the gate; {rep.unplaced} unplaced;"
            f" {len(rep.ambiguous)} ambiguous (not named)"
        )
    )
    for r in rep.refusals[:20]:
        console.print("  refused: ", lit(f"#{r['index']} {r['name']}: {r['why']}"))
    if len(rep.refusals) > 20:
        console.print(f"  ... {len(rep.refusals) - 20} more refused (--json lists all)")
    for a in rep.ambiguous[:20]:
        console.print("  ambiguous: ", lit(f"#{a['index']} {a['name']}: {a['why']}"))
    if len(rep.ambiguous) > 20:
        console.print(f"  ... {len(rep.ambiguous) - 20} more (--json lists all)")
