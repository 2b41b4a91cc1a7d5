"""``kbtool analyze VERSION``: static analysis on demand (names, thread facts, structs)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kbtool.commands.common import DbOption, JsonOption, console, err_console, print_json, rw
from kbtool.render.text import lit
from kbtool.services import code_store
from kbtool.services.analyze import analyze_version

BAR_AFTER_SECONDS = 1.0
STAGES = {
    "decode": "decoding",
    "names": "recognising names",
    "threads": "thread facts",
    "structs": "recovering structs",
    "write": "writing through the gate",
}


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze_cmd)


class LazyBar:
    """A transient Rich progress bar on stderr that appears only once the work has taken
    longer than :data:`BAR_AFTER_SECONDS`, and only at a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if time.perf_counter() - self.t0 < BAR_AFTER_SECONDS:
                return
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=err_console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("", total=1)
        self.bar.update(
            self.task, description=STAGES.get(stage, stage), completed=done, total=max(total, 1)
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def analyze_cmd(
    version: Annotated[int, typer.Argument(help="Version id to analyse (see `kbtool versions`).")],
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Static analysis of a stored version: name libc/runtime functions (as agent, through
    the gate), record thread facts and recover structs. Needs no key and no network; runs
    on demand (ingest does not run it); a second run writes nothing new."""

    conn = rw(db)
    bar = LazyBar(err_console.is_terminal)
    t0 = time.perf_counter()
    try:
        res = analyze_version(conn, version, progress=bar, prepare_diffs=True)
        code_store.start_background(conn, version)  # its code views' preparation, kept
    finally:
        bar.close()
        conn.close()
    secs = time.perf_counter() - t0
    if json_out:
        print_json(res)
        return
    print_summary(res, secs)
    if pairs := res.get("diffs_preparing", {}).get("pairs"):  # issue 30.3: kept ahead
        shown = ", ".join(f"{a} -> {b}" for a, b in pairs)
        status = "python -m kbtool.services.diff.warm --status --db KB"
        console.print(f"diffs: preparing {shown} in the background (progress: {status})")


def print_summary(res: dict[str, Any], secs: float) -> None:
    s = res["summary"]
    console.print(
        Text.assemble(
            "analysed version ",
            (str(res["version_id"]), "bold"),
            " ",
            lit(res["label"], "bold cyan"),
            f" in {secs:.2f}s",
        )
    )
    n = s["names"]
    console.print(
        f"names: {s['recognised']} recognised -> {n['written']} written, {n['refused']} refused "
        f"by the gate, {n['unchanged']} unchanged, {n['skipped']} skipped; "
        f"{s['review']} left for review (fit several names)"
    )
    if s["names_by_family"]:
        t = Table(box=None, padding=(0, 2), pad_edge=False)
        t.add_column("family")
        for col in ("written", "refused", "unchanged", "skipped"):
            t.add_column(col, justify="right")
        for fam, row in s["names_by_family"].items():
            t.add_row(fam, *(str(row[c]) for c in ("written", "refused", "unchanged", "skipped")))
        console.print(t)
    kinds = s["thread_facts_by_kind"]
    console.print("thread facts: " + (", ".join(f"{k} {v}" for k, v in kinds.items()) or "none"))
    console.print(f"structs: {s['structs']} recovered")
