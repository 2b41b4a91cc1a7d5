"""``kbtool agent VERSION``: an agent naming pass (offline or a provider) written through the gate."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

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
from kbtool.services.agents import BackendUnavailable

SELECTOR_HELP = "auto, offline, provider_a (aliases provider_a_alias_1/_2) or provider_b"
SHOWN_DETAILS = 40


#: later rounds stop at a fixpoint long before this; a bound keeps every count a small integer
MAX_ROUNDS = 100
#: the WebAssembly implementation limit on functions (JS API): no module has more candidates
MAX_FUNCTIONS = 1_000_000


def register(app: typer.Typer) -> None:
    app.command("agent")(agent)
    app.command("suggestions")(suggestions)


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
            max=MAX_ROUNDS,
            help="Rounds; later ones use the names written so far and stop at a fixpoint.",
        ),
    ] = 1,
    max_functions: Annotated[
        int | None,
        typer.Option(
            "--max-functions",
            min=0,
            max=MAX_FUNCTIONS,
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
    min_confidence: Annotated[
        float,
        typer.Option(
            "--min-confidence",
            min=0.0,
            max=1.0,
            help="Write floor: names below this calibrated confidence are kept as suggestions "
            "(`kbtool suggestions VERSION`) instead of written.",
        ),
    ] = 0.5,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Total deadline of one provider call in seconds, retries included "
            "(default: $KBTOOL_AGENT_TIMEOUT or 120).",
            show_default=False,
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option("--retries", min=0, max=20,
                     help="Retries of a 429/5xx/connection error per call (default: "
                     "$KBTOOL_AGENT_RETRIES or 3).", show_default=False),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, max=64,
                     help="Provider calls in flight (default: $KBTOOL_AGENT_CONCURRENCY or 4).",
                     show_default=False),
    ] = None,
    opinions: Annotated[
        int | None,
        typer.Option("--opinions", min=1, max=2,
                     help="2: a second prompt checks each answer (agreement raises the "
                     "calibrated confidence); 1 halves the calls (default: "
                     "$KBTOOL_AGENT_OPINIONS or 2).", show_default=False),
    ] = None,
    price: Annotated[
        str | None,
        typer.Option("--price", help="IN,OUT: US$ per million input/output tokens of the model "
                     "(default: the price table, $KBTOOL_AGENT_PRICES).", show_default=False),
    ] = None,
    no_knowledge: Annotated[
        bool, typer.Option("--no-knowledge",
                           help="Write names only, not the answers' comments, local names and "
                           "prototypes."),
    ] = False,
    ask_again: Annotated[
        bool, typer.Option("--ask-again",
                           help="Ask again where a callee or caller got a name since the stored "
                           "answer (default: a function already answered is not bought twice; "
                           "--rounds 2 re-asks within the pass)."),
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Name functions of a version with an agent backend (provenance `agent`, through the gate).

    A provider pass names callees before callers, keeps every answer in the KB as it arrives
    (a re-run sends only what has no answer) and shows calls, tokens and the estimated cost."""
    from kbtool.services.agents import parse_price

    try:
        price_v = parse_price(price) if price is not None else None
    except ValueError as exc:
        fail(str(exc))
    conn = ro(db) if dry_run else rw(db)
    try:
        plan = plan_agent_pass(conn, version, backend, not all_, max_functions, timeout=timeout,
                               retries=retries, concurrency=concurrency, opinions=opinions,
                               price=price_v)
    except (BackendUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0])
    extra = {"knowledge": not no_knowledge, "reuse_answers": not ask_again}
    show_bar = err_console.is_terminal and not json_out and plan.candidates

    def notice(message: str) -> None:  # stderr: --json keeps stdout pure
        err_console.print(lit(message), soft_wrap=True)

    if not show_bar:
        summary = run_agent_pass(
            conn, version, backend, not all_, rounds, dry_run=dry_run, notice=notice, plan=plan,
            min_confidence=min_confidence, **extra,
        )
    else:
        with _progress_bar() as bar:
            tasks = {"round 1": bar.add_task(f"{plan.backend.name} round 1",
                                             total=len(plan.candidates), spend="")}  # fmt: skip
            meter = getattr(plan.backend, "meter", None)

            def progress(stage: str, done: int, total: int | None) -> None:
                if stage not in tasks:  # a later round: its size is unknown (pulsing bar)
                    for t in tasks.values():
                        bar.update(t, visible=False)
                    tasks[stage] = bar.add_task(f"{plan.backend.name} {stage}", total=total,
                                                spend="")
                bar.update(tasks[stage], completed=done,
                           spend=spend_text(meter.to_dict()) if meter is not None else "")

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
                min_confidence=min_confidence,
                **extra,
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
        TextColumn("{task.fields[spend]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def spend_text(m: dict[str, Any]) -> str:
    """``12 calls (3 stored) 4,210 in / 900 out $0.0261`` for the progress bar and summary."""
    usd = m.get("estimated_cost_usd")
    cost = f" ${usd:.4f}" if usd is not None else " $?"
    stored = f" ({m['cached_answers']} stored)" if m.get("cached_answers") else ""
    return (f"{m.get('calls', 0)} calls{stored} {m.get('tokens_in', 0):,} in / "
            f"{m.get('tokens_out', 0):,} out{cost}")


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
            f"{s['rejected_by_economy']} by the gate, {s.get('suggested', 0)} kept as suggestions "
            f"(below the write floor; `kbtool suggestions {version}`); {s['rounds_run']} round(s)",
        ),
        soft_wrap=True,
    )
    if "calls" in s:
        console.print(Text.assemble("provider: ", lit(spend_text(s)),
                                    " (circuit breaker open: re-run to resume)"
                                    if s.get("circuit_open") else ""), soft_wrap=True)
    details = s["details"]
    if not details:
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("index", "outcome", "name", "conf", "source", "reason"):
        table.add_column(
            col, justify="right" if col in ("index", "conf") else "left", overflow="fold"
        )
    order = {"write": 0, "suggest": 1, "economy_reject": 2, "verifier_reject": 3}
    shown = sorted(details, key=lambda d: (order.get(d["kind"], 3), d["index"]))[:SHOWN_DETAILS]
    for d in shown:
        outcome = {
            "write": "would write" if dry_run else "written",
            "suggest": "suggestion",
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
        typer.Option("--all-above", min=0.0, max=1.0,
                     help="With `accept VERSION`: accept every open suggestion at this confidence or more."),
    ] = None,
    version: Annotated[
        int | None, typer.Option("--version-id", help="Only the suggestion of this version.")
    ] = None,
    keep_agent: Annotated[
        bool, typer.Option("--agent", help="Accept as provenance agent at the suggested confidence.")
    ] = False,
    as_human: Annotated[
        bool, typer.Option("--human", help="With --all-above: accept as human names (locked).")
    ] = False,
    status: Annotated[
        str, typer.Option("--status", help="List open (default), accepted, dismissed or all.")
    ] = "open",
    limit: Annotated[int, typer.Option("--limit", min=0, help="At most this many (cap 500).")] = 100,
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
            fail(f"expected one VERSION id, got {' '.join(rest)!r} (or `accept SID` / `dismiss SID`)")
        if status not in ("open", "accepted", "dismissed", "all"):
            fail(f"--status must be open, accepted, dismissed or all, not {status!r}")
        page = queries.suggestions(ro(db), int(rest[0]), status=None if status == "all" else status,
                                   offset=offset, limit=limit)
        if json_out:
            print_json(page)
        else:
            _print_suggestions(page)
        return
    conn = rw(db)
    try:
        if action == "accept" and all_above is not None:
            if len(rest) != 1 or not rest[0].isdigit():
                fail("--all-above needs one VERSION id: `kbtool suggestions accept VERSION --all-above X`")
            decisions = accept_suggestions_above(conn, int(rest[0]), all_above, as_human=as_human)
        elif not rest:
            fail(f"`{action}` needs one or more stable ids (see `kbtool suggestions VERSION`)")
        elif action == "accept":
            decisions = [accept_suggestion(conn, sid, version, as_human=not keep_agent)
                         for sid in rest]
        else:
            decisions = [{**dismiss_suggestion(conn, sid, version), "dismissed": True}
                         for sid in rest]
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
            console.print(Text.assemble(f"{d['stable_id']}: not written (", lit(d["reason"]),
                                        "), still open: ", lit(d["name"], "dim")))
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
        table.add_column(col, justify="right" if col in ("index", "conf") else "left",
                         overflow="fold", no_wrap=col == "stable_id")
    for s in items:
        cur = s["current"]
        table.add_row(
            s["stable_id"], str(s["index"]), lit(s["name"], COLOURS["agent"]),
            f"{s['confidence']:.2f}", lit(s["backend"]), lit(s["rule"]),
            lit(f"{cur['name']} ({cur['provenance']})" if cur else "-", "dim"), s["status"],
        )
    console.print(table)
