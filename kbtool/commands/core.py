"""Core commands: ingest, versions, functions, coverage, show, demo."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kbtool.commands.common import (
    DbOption,
    JsonOption,
    console,
    db_path,
    fail,
    print_json,
    ro,
)
from kbtool.kb import queries
from kbtool.kb.schema import SCHEMA_VERSION
from kbtool.render.code import c_syntax
from kbtool.render.terminal import coverage_table, evidence_table
from kbtool.render.text import lit, toolchain_text
from kbtool.services import nav
from kbtool.textutil import clip, printable


def register(app: typer.Typer) -> None:
    app.command()(ingest)
    app.command()(versions)
    app.command()(functions)
    app.command("coverage")(coverage_cmd)
    app.command()(show)
    app.command()(demo)


def ingest(
    file: Annotated[Path, typer.Argument(help="The .wasm module of one release.")],
    label: Annotated[
        str | None, typer.Option("--label", "-l", help="Version label (default: file name).")
    ] = None,
    js: Annotated[
        Path | None,
        typer.Option(
            "--js",
            help="Emscripten JS loader shipped beside the module; recovers minified export/import names.",
        ),
    ] = None,
    no_carry: Annotated[
        bool,
        typer.Option(
            "--no-carry", help="Do not carry names from the parent version by fuzzy matching."
        ),
    ] = False,
    program: Annotated[
        str | None,
        typer.Option(
            "--program",
            help="The program (lineage) this version belongs to (default: found from the module).",
        ),
    ] = None,
    base: Annotated[
        int | None,
        typer.Option(
            "--base", help="Carry identities and names from this version (forces the parent)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Ingest bytes already in the KB again (needs a new --label)."),
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Ingest one release of a module: decode it, store facts, carry identities and names.

    The parent is the earlier version the module shares most functions with (exact body or
    shape); a module unrelated to every version starts a new program. Identities and names
    never cross programs.
    """
    from kbtool.commands import ingest_cmd  # (also run without Typer: kbtool.cli.main)

    ingest_cmd.run(
        db_path(db),
        file,
        label=label,
        js=js,
        no_carry=no_carry,
        program=program,
        base=base,
        force=force,
        json_out=json_out,
    )


def versions(json_out: JsonOption = False, db: DbOption = None) -> None:
    """List ingested versions with toolchain, function counts and coverage."""
    conn = ro(db)
    rows = queries.list_versions(conn)
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("The KB has no versions yet. Try: kbtool ingest app.wasm --label 1.0")
        return
    t = Table(title="versions")
    for col in (
        "id",
        "program",
        "label",
        "parent",
        "toolchain",
        "functions",
        "defined",
        "shared mem",
        "coverage",
    ):
        t.add_column(
            col,
            justify="right"
            if col in ("id", "parent", "functions", "defined", "coverage")
            else "left",
        )
    for v in sorted(rows, key=lambda v: (_first_id(rows, v["program"]), v["id"])):
        cov = queries.coverage(conn, v["id"])
        parent = "" if v["parent_version_id"] is None else str(v["parent_version_id"])
        t.add_row(
            str(v["id"]),
            lit(v["program"], "bold"),
            lit(v["label"]),
            parent,
            toolchain_text(v["toolchain_version"]),
            str(v["functions"]),
            str(cov["defined"]),
            "yes" if v["shared_memory"] else "no",
            f"{cov['coverage_pct']:.1f}%",
        )
    console.print(t)


def _first_id(rows: list, program: str) -> int:
    """Programs in the order they first appeared."""
    return min(v["id"] for v in rows if v["program"] == program)


def functions(
    version: Annotated[int, typer.Argument(help="Version id (see `kbtool versions`).")],
    unnamed: Annotated[
        bool, typer.Option("--unnamed", help="Only functions without a name.")
    ] = False,
    imports: Annotated[bool, typer.Option("--imports", help="Include imported functions.")] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List the functions of a version with their names, provenance and confidence."""
    conn = ro(db)
    rows = queries.list_functions(conn, version, include_imports=imports)
    if unnamed:
        rows = [r for r in rows if r["name"] is None]
    if json_out:
        print_json(rows)
        return
    console.print(f"functions of version {version}: {len(rows):,}", style="bold", highlight=False)
    write_function_rows(rows, width=console.width if console.is_terminal else None)


TYPE_WIDTH = 32  # a longer type signature is clipped with "…"
_CHUNK = 2000  # rows written (and flushed) at a time


def function_lines(rows: list[dict], width: int | None = None):
    """The function table as plain, aligned text lines (header first), one per row, generated
    lazily: a Rich Table measures every cell before printing anything (43 s on 22.5k rows).
    Names and types are untrusted: shown with :func:`printable`. ``width`` (a terminal's)
    clips names to fit; without it (a pipe) names are whole."""
    iw = max([5] + [len(str(r["index"])) for r in rows])
    tw = min(TYPE_WIDTH, max([4] + [len(r["type"] or "") for r in rows]))
    fixed = iw + 16 + tw + 10 + 4 + 5 * 2
    nw = None if width is None else max(8, width - fixed)
    yield (
        f"{'index':>{iw}}  {'stable_id':<16}  {'type':<{tw}}  {'provenance':<10}  {'conf':>4}  name"
    )
    for r in rows:
        name = printable(r["name"]) if r["name"] is not None else "—"
        if nw is not None:
            name = clip(name, nw)
        conf = "" if r["confidence"] is None else f"{r['confidence']:.2f}"
        yield (
            f"{r['index']:>{iw}}  {r['stable_id']:<16}  {clip(printable(r['type']), tw):<{tw}}  "
            f"{printable(r['provenance']) or '—':<10}  {conf:>4}  {name}"
        )


def write_function_rows(rows: list[dict], width: int | None = None) -> None:
    """Stream :func:`function_lines` to stdout a chunk at a time (flushed: ``| head`` sees
    rows at once)."""
    out = sys.stdout
    buf: list[str] = []
    for line in function_lines(rows, width):
        buf.append(line)
        if len(buf) >= _CHUNK:
            out.write("\n".join(buf) + "\n")
            out.flush()
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")
    out.flush()


def coverage_cmd(
    version: Annotated[int, typer.Argument(help="Version id (see `kbtool versions`).")],
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show how many defined functions of a version are named, split by provenance."""
    conn = ro(db)
    cov = queries.coverage(conn, version)
    if json_out:
        print_json(cov)
        return

    console.print(coverage_table(cov, title=f"coverage of version {version}"))


def show(
    stable_id: Annotated[
        str,
        typer.Argument(
            help="A function's stable_id, or VERSION:INDEX (2:1031), or INDEX (#1031, 1031: latest version)."
        ),
    ],
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also the `kbtool deep` record: understanding, renamed variables and the cleaned C.",
        ),
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show a logical function: its annotation record and where it appears."""
    conn = ro(db)
    stable_id, at_version = _resolve_function(conn, stable_id)
    sym = queries.get_symbol(conn, stable_id)
    where = queries.functions_by_stable_id(conn, stable_id)
    analysis = queries.get_analysis(conn, stable_id) if deep else None
    if json_out:
        out = (
            sym
            if sym is not None
            else {
                "stable_id": stable_id,
                "name": None,
                "summary": None,
                "type_signature": None,
                "provenance": None,
                "confidence": None,
                "locked": False,
                "evidence": [],
            }
        )
        from kbtool.commands.knowledge import knowledge_of  # issue 27

        out = {**out, "knowledge": knowledge_of(conn, stable_id, at_version)}
        print_json({**out, "deep": analysis} if deep else out)
        return
    shown = next((w for w in where if w["version_id"] == at_version), where[-1])
    fn = queries.get_function(conn, shown["version_id"], shown["index"])
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("stable_id", stable_id)
    t.add_row("name", lit(sym["name"] if sym else None, "bold"))
    t.add_row("provenance", lit(sym["provenance"] if sym else "unnamed"))
    t.add_row("confidence", f"{sym['confidence']:.2f}" if sym else "—")
    t.add_row("locked", "yes" if sym and sym["locked"] else "no")
    t.add_row("summary", lit(sym["summary"] if sym else None))
    t.add_row("type", lit(fn["type"]))
    if fn["imported"]:
        t.add_row("import", lit(f"{fn['import_module']}.{fn['import_field']}"))
    if fn["export_names"]:
        t.add_row("exports", lit(", ".join(fn["export_names"])))
    t.add_row("raw name", lit(fn["raw_name"]))
    t.add_row(
        "appears in",
        ", ".join(
            f"v{w['version_id']}#{w['index']}{' (body changed)' if w['body_changed'] else ''}"
            for w in where
        ),
    )
    console.print(t)
    from kbtool.commands.knowledge import print_knowledge_for  # issue 27

    print_knowledge_for(conn, stable_id, shown)
    if sym and sym["evidence"]:
        console.print()
        console.print(evidence_table(sym["evidence"]))
    if deep:
        console.print()
        _print_deep(analysis, shown)


def _print_deep(a: dict | None, shown: dict) -> None:
    """The ``kbtool deep`` record: understanding, renamed variables, cleaned C (highlighted;
    every text from the binary or a model shown literally)."""
    console.print(Text("deep", style="bold underline"))
    if a is None:
        console.print(
            Text(
                f"no deep record yet: kbtool deep {shown['version_id']} -f {shown['index']}",
                style="dim",
            )
        )
        return
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    conf = a.get("confidence")
    by = a.get("backend") or "offline"
    t.add_row(
        "status",
        Text.assemble(
            lit(a.get("status")),
            (f"  confidence {conf:.2f}" if isinstance(conf, (int, float)) else "", "dim"),
        ),
    )
    t.add_row("by", lit(by + (f" ({a['model']})" if a.get("model") else "")))
    t.add_row("lifted from", f"v{a['version_id']}#{a['func_index']}")
    t.add_row("understanding", lit(a.get("understanding")))
    renames = a.get("rename_map") or {}
    if renames:
        names = Text()
        for i, (old, new) in enumerate(renames.items()):
            if i:
                names.append(", ", style="dim")
            names.append_text(lit(old, "dim"))
            names.append(" → ", style="dim")
            names.append_text(lit(new, "cyan"))
        t.add_row("variables", names)
    console.print(t)
    if a.get("clean_c"):
        console.print(Text("cleaned C", style="bold"))
        console.print(c_syntax(a["clean_c"]), soft_wrap=True)  # whole lines, never cropped


def _resolve_function(conn, text: str) -> tuple[str, int | None]:
    """``text`` as (stable_id, version asked for): a stable_id, ``V:INDEX`` or ``#INDEX``/``INDEX``
    (the latest version). A known stable_id wins over an index spelled the same."""
    if queries.stable_id_exists(conn, text):
        return text, None
    ref = nav.parse_ref(text)
    if ref is None:
        queries.require_stable_id(conn, text)  # raises the usual unknown-stable_id error
    assert ref is not None
    hit = nav.function_at(conn, ref.index, ref.version_id)
    if hit is None:
        vid = ref.version_id if ref.version_id is not None else queries.latest_version_id(conn)
        fail(f"version {vid} has no function {ref.index}")
    assert hit is not None
    return hit["stable_id"], hit["version_id"]


def demo(
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing KB file.")] = False,
) -> None:
    """Build a demo KB from the bundled zstd releases and show what it holds."""

    from kbtool.services.demo import demo_kb_schema, migrate_demo

    path = Path(db_path(db))
    if path.exists() and not force:
        before = demo_kb_schema(path)
        if before is not None:
            if before < SCHEMA_VERSION:  # the demo KB of an older kbtool: brought up to date
                after = migrate_demo(path)
                console.print(
                    lit(f"migrated the demo KB {path} from KB schema {before} to {after}")
                )
            console.print(
                lit(
                    f"{path} already holds the demo KB; opening it"
                    " (kbtool demo --force rebuilds it)"
                )
            )
            console.print()
            versions(db=str(path))
            return
        fail(
            f"{path} exists and is not the demo KB; pass --force to replace it, or --db another path"
        )
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    from kbtool.services.demo import build_demo

    steps = build_demo(path, echo=lambda msg: console.print(lit(msg)))
    console.print()
    versions(db=str(path))
    for line in steps:
        console.print(lit(line))
