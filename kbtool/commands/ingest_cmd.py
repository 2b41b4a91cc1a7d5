"""``kbtool ingest``'s work and output, without Typer: the Typer command
(:func:`kbtool.commands.core.ingest`) and the CLI's direct path for a plain
``kbtool [--db P] ingest FILE [options]`` (:func:`kbtool.cli.main`, no Typer nor pydantic
import: ~0.1 s of a small module's ingest) both call :func:`run`, so both print the same."""

from __future__ import annotations

import time
from pathlib import Path

from kbtool.commands.consoles import console, err_console, print_json
from kbtool.kb.db import open_rw
from kbtool.kb.schema import new_kb_page_size
from kbtool.render.text import lit, toolchain_text


def _progress_bar():
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _run_ingest(
    conn, file: Path, label: str | None, js: Path | None, carry: bool = True, **lineage
):
    from kbtool.services.ingest import ingest_file  # here: `kbtool versions` never needs it

    big = file.exists() and file.stat().st_size > 1_000_000 and err_console.is_terminal
    if not big:
        return ingest_file(conn, file, label=label, glue_path=js, carry=carry, **lineage)
    with _progress_bar() as bar:
        task = bar.add_task(f"decoding {file.name}", total=file.stat().st_size)

        def progress(stage: str, done: int, total: int) -> None:
            if stage == "decode":
                bar.update(task, completed=done, total=total)
            else:
                bar.update(task, description=f"{stage} {file.name}")

        return ingest_file(
            conn, file, label=label, glue_path=js, progress=progress, carry=carry, **lineage
        )


def run(
    db: str,
    file: Path,
    *,
    label: str | None = None,
    js: Path | None = None,
    no_carry: bool = False,
    program: str | None = None,
    base: int | None = None,
    force: bool = False,
    json_out: bool = False,
) -> None:
    """Ingest ``file`` into the KB at ``db`` (created when missing) and print the summary
    (``json_out``: the contract's JSON). Errors propagate (the CLI prints them as one line)."""
    from kbtool.services.ingest import AlreadyIngested

    # (a KB this ingest creates gets pages sized for its first module)
    size = file.stat().st_size if file.is_file() else 0
    conn = open_rw(db, create=True, page_size=new_kb_page_size(size))
    t0 = time.perf_counter()
    try:
        res = _run_ingest(
            conn, file, label, js, carry=not no_carry, program=program, base=base, force=force
        )
    except AlreadyIngested as exc:
        if json_out:
            print_json({"already_ingested": exc.version_id, "label": exc.label})
        else:
            console.print(lit(str(exc), "yellow"))
        return
    secs = time.perf_counter() - t0
    preparing = [] if res.new_program else _warm_diffs(conn, res.version_id)
    if json_out:
        print_json({**res.__dict__, "seconds": round(secs, 3)})
        return
    _print_summary(res, secs)
    if preparing:
        shown = ", ".join(f"{a} -> {b}" for a, b in preparing)
        status = "python -m kbtool.services.diff.warm --status --db KB"
        console.print(f"diffs: preparing {shown} in the background (progress: {status})")


def _warm_diffs(conn, version_id: int) -> list:
    """The pairs of ``version_id`` prepared in a detached process (issue 30.3: diffs kept
    ahead; ``KBTOOL_DIFF_WARM``). Not asked for the first version of a program: it has no
    pair, and the module costs ~13 ms of a small module's ingest to import."""
    from kbtool.services.diff.warm import start_background

    return start_background(conn, version_id)["pairs"]


def _print_summary(res, secs: float) -> None:
    console.print(
        f"ingested version [bold]{res.version_id}[/] ",
        lit(res.label, "bold cyan"),
        f" in {secs:.2f}s: {res.imported} imported + {res.defined} defined functions, "
        f"{res.exported} exported, {res.instructions:,} instructions",
    )
    console.print(
        "toolchain: ",
        toolchain_text(res.toolchain_version),
        f"  shared memory: {'yes' if res.shared_memory else 'no'}",
    )
    console.print(lit(res.lineage_text, "bold" if res.new_program else ""))
    if res.parent_version_id is not None:
        methods = ", ".join(f"{k} {v}" for k, v in sorted(res.carried_by_method.items()))
        console.print(
            f"identities carried from version {res.parent_version_id}: {res.carried}"
            f" ({methods or 'none'}); body changed: {res.body_changed}; new: {res.new_identities}"
        )
    for note in res.matcher_notes:  # a matcher stage stopped at its work budget (hostile input)
        console.print("[yellow]note:[/] ", lit(note))
    sources = ", ".join(f"{k} {v}" for k, v in sorted(res.names_by_source.items()))
    console.print(
        f"names from the binary: {res.names_written} written"
        + (f" ({sources})" if sources else "")
        + f", {res.names_same} already named the same, {res.names_refused} refused"
    )
    if res.go is not None:
        go = res.go
        if "error" in go:
            err_console.print("[yellow]go:[/] ", lit(go["error"]))
        else:
            console.print(
                "Go pclntab (",
                lit(go.get("go_version") or "version unknown"),
                f", {go['pclntab_format']}): {go['named']} of {go['defined']} functions named",
            )
    if res.diff_carry:
        dc = res.diff_carry
        console.print(
            f"names carried by diff: {dc.get('written', 0)} written, {dc.get('refused', 0)} refused"
        )
    if res.glue is not None:
        g = res.glue
        console.print(
            "JS glue (",
            lit(g.get("shape") or "unrecognised"),
            f"): {g['exports']} export names, {g['imports']} import names recovered",
        )
        for note in g["unknown"][:10]:
            err_console.print("[yellow]glue:[/] ", lit(note))
