"""``kbtool agent VERSION``: an agent naming pass (offline or a provider) written through the gate."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kbtool.agents import BackendUnavailable
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
from kbtool.kb.provenance import COLOURS
from kbtool.render.text import lit
from kbtool.services.agent_pass import plan_agent_pass, run_agent_pass

SELECTOR_HELP = "auto, offline, provider_a (aliases provider_a_alias_1/_2) or provider_b"
SHOWN_DETAILS = 40


def register(app: typer.Typer) -> None:
    app.command("agent")(agent)


def agent(
    version: Annotated[int, typer.Argument(help="The version id (see `kbtool versions`).")],
    backend: Annotated[str, typer.Option("--backend", "-b", help=SELECTOR_HELP)] = "auto",
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also propose for functions named at confidence 0.5 or more (the gate still decides).",
        ),
    ] = False,
    rounds: Annotated[
        int,
        typer.Option(
            "--rounds",
            min=1,
            help="Rounds; later ones use the names written so far and stop at a fixpoint.",
        ),
    ] = 1,
    max_functions: Annotated[
        int | None,
        typer.Option(
            "--max-functions",
            min=0,
            help="Cost guard: candidates sent to the backend (default: all offline, 500 for a provider; 0 = no cap).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Propose, verify and decide as the gate would; write nothing."
        ),
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Name functions of a version with an agent backend (provenance `agent`, through the gate)."""

    conn = ro(db) if dry_run else rw(db)
    try:
        plan = plan_agent_pass(conn, version, backend, not all_, max_functions)
    except BackendUnavailable as exc:
        fail(str(exc))
    show_bar = err_console.is_terminal and not json_out and plan.candidates

    def notice(message: str) -> None:  # stderr: --json keeps stdout pure
        err_console.print(lit(message), soft_wrap=True)

    if not show_bar:
        summary = run_agent_pass(
            conn, version, backend, not all_, rounds, dry_run=dry_run, notice=notice, plan=plan
        )
    else:
        with _progress_bar() as bar:
            tasks = {"round 1": bar.add_task(f"{plan.backend.name} round 1",
                                             total=len(plan.candidates))}  # fmt: skip

            def progress(stage: str, done: int, total: int | None) -> None:
                if stage not in tasks:  # a later round: its size is unknown (pulsing bar)
                    for t in tasks.values():
                        bar.update(t, visible=False)
                    tasks[stage] = bar.add_task(f"{plan.backend.name} {stage}", total=total)
                bar.update(tasks[stage], completed=done)

            summary = run_agent_pass(
                conn,
                version,
                backend,
                not all_,
                rounds,
                dry_run=dry_run,
                progress=progress,
                notice=notice,
                plan=plan,
            )
    if json_out:
        print_json(summary)
        return
    _print_summary(summary, version, dry_run)


def _progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _print_summary(s: dict[str, Any], version: int, dry_run: bool) -> None:
    head = "dry run (nothing written): " if dry_run else ""
    verb = "would be written" if dry_run else "written"
    console.print(
        Text.assemble(
            f"{head}agent pass on version {version} with ",
            lit(s["backend"], "bold"),
            f": {s['considered']} considered, {s['skipped_existing']} skipped (already named), "
            f"{s['proposed']} proposed, {s['written']} {verb} ({s['specialist_written']} by the "
            f"specialist), {s['rejected_by_verifier']} rejected by the verifier, "
            f"{s['rejected_by_economy']} by the gate; {s['rounds_run']} round(s)",
        ),
        soft_wrap=True,
    )
    details = s["details"]
    if not details:
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("index", "outcome", "name", "conf", "source", "reason"):
        table.add_column(
            col, justify="right" if col in ("index", "conf") else "left", overflow="fold"
        )
    order = {"write": 0, "economy_reject": 1, "verifier_reject": 2}
    shown = sorted(details, key=lambda d: (order.get(d["kind"], 3), d["index"]))[:SHOWN_DETAILS]
    for d in shown:
        outcome = {
            "write": "would write" if dry_run else "written",
            "economy_reject": "gate: kept",
            "verifier_reject": "verifier",
        }.get(d["kind"], d["kind"])
        name_style = COLOURS["agent"] if d["kind"] == "write" else "dim"
        table.add_row(
            str(d["index"]),
            Text(outcome),
            lit(d["name"], name_style),
            f"{d['confidence']:.2f}" if d.get("confidence") is not None else "",
            lit(d.get("source")),
            lit(d.get("reason")),
        )
    console.print(table)
    if len(details) > SHOWN_DETAILS:
        console.print(f"... {len(details) - SHOWN_DETAILS} more (use --json for all)")
