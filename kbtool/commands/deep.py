"""``kbtool deep``: lifted C -> cleaned C + understanding per function, with live events."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kbtool.commands.common import (
    DbOption,
    JsonOption,
    console,
    count_progress,
    err_console,
    fail,
    print_json,
    rw,
)
from kbtool.services.agents import BackendUnavailable
from kbtool.services.deep import DEFAULT_MAX_FUNCTIONS, run_deep


def _notice(message: str) -> None:
    err_console.print(message, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("deep")(deep)


def deep(
    version: Annotated[int, typer.Argument(help="Version id (see `kbtool versions`).")],
    function: Annotated[
        list[int] | None,
        typer.Option(
            "--function",
            "-f",
            help="Function index to analyse (repeatable); default: the unnamed "
            "and unconfident functions without a deep record.",
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Who writes the understandings and proposes names (offline: no key, "
            "no network; provider_a, provider_b, auto as in `kbtool agent`: one model call per "
            "function, 4 at a time).",
        ),
    ] = "offline",
    no_name: Annotated[bool, typer.Option("--no-name", help="Do not propose names.")] = False,
    all_functions: Annotated[
        bool, typer.Option("--all", help="Also functions already named with confidence >= 0.5.")
    ] = False,
    max_functions: Annotated[
        int, typer.Option("--max-functions", min=1, help="At most this many functions in one run.")
    ] = DEFAULT_MAX_FUNCTIONS,
    force: Annotated[
        bool, typer.Option("--force", help="Redo functions that have a record.")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Lift each function to C, clean it (variables renamed from their roles) and write an
    understanding; the studio's Agents panel shows the work live."""
    conn = rw(db)
    show = sys.stderr.isatty() and not json_out
    with count_progress("deep", show=show, to=console) as bar:
        task = bar.add_task("deep", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            res = run_deep(
                conn,
                version,
                functions=function,
                all_functions=all_functions,
                force=force,
                max_functions=max_functions,
                progress=progress,
                name=not no_name,
                backend=backend,
                notice=_notice,
            )
        except (BackendUnavailable, ValueError) as exc:
            fail(str(exc))
    if json_out:
        print_json(res)
        return
    console.print(
        f"deep on version {version}: {res['considered']} considered, {res['done']} done, "
        f"{res['truncated']} truncated, {res['failed']} failed, {res['skipped_existing']} already "
        f"done; {res['renamed_variables']} of {res['variables']} variables renamed"
    )
    if res["backend"] != "offline":
        errors = ", ".join(f"{n} {code}" for code, n in res.get("understanding_errors", {}).items())
        console.print(
            f"understandings ({res['backend']}, {res['model']}): "
            f"{res['understood_by_provider']} from the model, {res['understanding_fallbacks']} "
            f"offline fallbacks{' (' + errors + ')' if errors else ''}"
        )
    naming = res.get("naming")
    if naming:
        console.print(
            f"names ({naming['backend']}): {naming['proposed']} proposed, "
            f"{naming['written']} written, {naming['rejected_by_verifier']} rejected by "
            f"the verifier, {naming['rejected_by_economy']} by the gate"
        )
    first = (function or [None])[0]
    console.print(
        f"read them with `kbtool show {version}:{first if first is not None else 'INDEX'} --deep`"
        ", the TUI's code screen (v: Cleaned C), `kbtool serve` (the studio) or "
        "`GET /api/analysis/{stable_id}`",
        markup=False,
        highlight=False,
    )
