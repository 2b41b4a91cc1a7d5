"""``kbtool agent VERSION``: an agent naming pass (offline or a provider) written through the gate."""

from __future__ import annotations

import sqlite3
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
from kbtool.services.agent_pass import PassPlan, plan_agent_pass, run_agent_pass
from kbtool.services.agents import BackendUnavailable

SELECTOR_HELP = "auto, offline, provider_a (aliases provider_a_alias_1/_2) or provider_b"
SHOWN_DETAILS = 40


#: later rounds stop at a fixpoint long before this; a bound keeps every count a small integer
MAX_ROUNDS = 100
#: the WebAssembly implementation limit on functions (JS API): no module has more candidates
MAX_FUNCTIONS = 1_000_000


def register(app: typer.Typer) -> None:
    from kbtool.commands.agent_suggestions import suggestions

    app.command("agent")(agent)
    app.command("suggestions")(suggestions)


# the options of ``kbtool agent`` (Annotated aliases keep the command's signature short)
VersionArg = Annotated[int, typer.Argument(help="The version id (see `kbtool versions`).")]
BackendOption = Annotated[str, typer.Option("--backend", "-b", help=SELECTOR_HELP)]
AllOption = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Also propose for functions named at confidence 0.5 or more (the gate still decides).",
    ),
]
RoundsOption = Annotated[
    int,
    typer.Option(
        "--rounds",
        min=1,
        max=MAX_ROUNDS,
        help="Rounds; later ones use the names written so far and stop at a fixpoint.",
    ),
]
MaxFunctionsOption = Annotated[
    int | None,
    typer.Option(
        "--max-functions",
        min=0,
        max=MAX_FUNCTIONS,
        help="Cost guard: candidates sent to the backend (default: all offline, 500 for a provider; 0 = no cap).",
        show_default=False,
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Propose, verify and decide as the gate would; write nothing."),
]
MinConfidenceOption = Annotated[
    float,
    typer.Option(
        "--min-confidence",
        min=0.0,
        max=1.0,
        help="Write floor: names below this calibrated confidence are kept as suggestions "
        "(`kbtool suggestions VERSION`) instead of written.",
    ),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Total deadline of one provider call in seconds, retries included "
        "(default: $KBTOOL_AGENT_TIMEOUT or 120).",
        show_default=False,
    ),
]
RetriesOption = Annotated[
    int | None,
    typer.Option(
        "--retries",
        min=0,
        max=20,
        help="Retries of a 429/5xx/connection error per call (default: "
        "$KBTOOL_AGENT_RETRIES or 3).",
        show_default=False,
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--concurrency",
        min=1,
        max=64,
        help="Provider calls in flight (default: $KBTOOL_AGENT_CONCURRENCY or 4).",
        show_default=False,
    ),
]
OpinionsOption = Annotated[
    int | None,
    typer.Option(
        "--opinions",
        min=1,
        max=2,
        help="2: a second prompt checks each answer (agreement raises the "
        "calibrated confidence); 1 halves the calls (default: "
        "$KBTOOL_AGENT_OPINIONS or 2).",
        show_default=False,
    ),
]
PriceOption = Annotated[
    str | None,
    typer.Option(
        "--price",
        help="IN,OUT: US$ per million input/output tokens of the model "
        "(default: the price table, $KBTOOL_AGENT_PRICES).",
        show_default=False,
    ),
]
NoKnowledgeOption = Annotated[
    bool,
    typer.Option(
        "--no-knowledge",
        help="Write names only, not the answers' comments, local names and prototypes.",
    ),
]
AskAgainOption = Annotated[
    bool,
    typer.Option(
        "--ask-again",
        help="Ask again where a callee or caller got a name since the stored "
        "answer (default: a function already answered is not bought twice; "
        "--rounds 2 re-asks within the pass).",
    ),
]


def agent(
    version: VersionArg,
    backend: BackendOption = "auto",
    all_: AllOption = False,
    rounds: RoundsOption = 1,
    max_functions: MaxFunctionsOption = None,
    dry_run: DryRunOption = False,
    min_confidence: MinConfidenceOption = 0.5,
    timeout: TimeoutOption = None,
    retries: RetriesOption = None,
    concurrency: ConcurrencyOption = None,
    opinions: OpinionsOption = None,
    price: PriceOption = None,
    no_knowledge: NoKnowledgeOption = False,
    ask_again: AskAgainOption = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Name functions of a version with an agent backend (provenance `agent`, through the gate).

    A provider pass names callees before callers, keeps every answer in the KB as it arrives
    (a re-run sends only what has no answer) and shows calls, tokens and the estimated cost."""
    price_v = _price(price)
    conn = ro(db) if dry_run else rw(db)
    plan = _plan(
        conn,
        version,
        backend,
        not all_,
        max_functions,
        timeout=timeout,
        retries=retries,
        concurrency=concurrency,
        opinions=opinions,
        price=price_v,
    )
    summary = _run_with_bar(
        conn,
        plan,
        json_out,
        version,
        backend,
        not all_,
        rounds,
        dry_run=dry_run,
        min_confidence=min_confidence,
        knowledge=not no_knowledge,
        reuse_answers=not ask_again,
    )
    if json_out:
        print_json(summary)
        return
    _print_summary(summary, version, dry_run)


def _price(price: str | None) -> tuple[float, float] | None:
    """``--price IN,OUT`` parsed (None: the price table); a bad value fails in one line."""
    from kbtool.services.agents import parse_price

    try:
        return parse_price(price) if price is not None else None
    except ValueError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def _plan(conn: sqlite3.Connection, *args: Any, **kwargs: Any) -> PassPlan:
    """``plan_agent_pass(conn, *args, **kwargs)``; a bad value or a missing backend fails in
    one line."""
    try:
        return plan_agent_pass(conn, *args, **kwargs)
    except (BackendUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0])
        raise  # unreachable: fail() exits


def _notice(message: str) -> None:
    """A one-line message for a person on stderr (--json keeps stdout pure)."""
    err_console.print(lit(message), soft_wrap=True)


def _run_with_bar(
    conn: sqlite3.Connection,
    plan: PassPlan,
    json_out: bool,
    version: int,
    backend: str,
    only_unconfident: bool,
    rounds: int,
    **options: Any,
) -> dict[str, Any]:
    """Run ``plan`` (``options``: :func:`run_agent_pass`'s keywords), drawing a progress bar on
    a terminal's stderr unless ``--json`` or there is nothing to send."""
    progress = None
    bar = _progress_bar() if err_console.is_terminal and not json_out and plan.candidates else None
    if bar is not None:
        bar.start()
        progress = _bar_progress(bar, plan)
    try:
        return run_agent_pass(
            conn,
            version,
            backend,
            only_unconfident,
            rounds,
            progress=progress,
            notice=_notice,
            plan=plan,
            **options,
        )
    finally:
        if bar is not None:
            bar.stop()


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


def _bar_progress(bar: Progress, plan: Any) -> Any:
    """The pass's progress callback drawing on ``bar``: one task per round (later rounds
    pulse: their size is unknown), the meter's spending and projection beside it."""
    tasks = {"round 1": bar.add_task(f"{plan.backend.name} round 1",
                                     total=len(plan.candidates), spend="")}  # fmt: skip
    meter = getattr(plan.backend, "meter", None)

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:  # a later round: its size is unknown (pulsing bar)
            for t in tasks.values():
                bar.update(t, visible=False)
            tasks[stage] = bar.add_task(f"{plan.backend.name} {stage}", total=total, spend="")
        bar.update(
            tasks[stage],
            completed=done,
            spend=spend_text(meter.to_dict(), live=True) if meter is not None else "",
        )

    return progress


def spend_text(m: dict[str, Any], *, live: bool = False) -> str:
    """``12 calls (3 stored) 4,210 in / 900 out $0.0261`` for the progress bar and summary;
    ``live`` adds round 1's projected total (``of ~$0.4210``), re-scaled by the provider's
    usage as answers arrive."""
    usd = m.get("estimated_cost_usd")
    cost = f" ${usd:.4f}" if usd is not None else " $?"
    stored = f" ({m['cached_answers']} stored)" if m.get("cached_answers") else ""
    ahead = ""
    if live and m.get("projected_tokens_in") is not None:
        total = m.get("projected_cost_usd")
        ahead = (
            f" of ~${total:.4f}"
            if total is not None
            else f" of ~{m['projected_tokens_in'] + m['projected_tokens_out']:,} tokens"
        )
    return (
        f"{m.get('calls', 0)} calls{stored} {m.get('tokens_in', 0):,} in / "
        f"{m.get('tokens_out', 0):,} out{cost}{ahead}"
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
            f"{s['rejected_by_economy']} by the gate, {s.get('suggested', 0)} kept as suggestions "
            f"(below the write floor; `kbtool suggestions {version}`); {s['rounds_run']} round(s)",
        ),
        soft_wrap=True,
    )
    if "calls" in s:
        console.print(
            Text.assemble(
                "provider: ",
                lit(spend_text(s)),
                " (circuit breaker open: re-run to resume)" if s.get("circuit_open") else "",
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
