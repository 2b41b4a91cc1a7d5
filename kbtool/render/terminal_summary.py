"""The shared vocabulary of the terminal diff views: the classification styles, the one-line
summary of a report, names and deltas as printed. Split from :mod:`kbtool.render.terminal`, which
re-exports every name here; pure (data in, Rich text out), names rendered literally."""

from __future__ import annotations

from rich.text import Text

from kbtool.kb.provenance import CLASSIFICATION_COLOURS
from kbtool.render.text import lit
from kbtool.textutil import printable

CLASS_STYLE = {
    k: ("dim" if k == "unchanged" else f"bold {c}" if k != "moved" else c)
    for k, c in CLASSIFICATION_COLOURS.items()
}
CLASS_ORDER = ("unchanged", "moved", "modified", "new", "deleted")


def printable_name(name) -> str:

    return printable(name) if name else "—"


def _delta(a: int, b: int, unit: str) -> str:
    d = b - a
    return f"{d:+,} {unit}" if d else f"±0 {unit}"


def summary_text(report: dict) -> Text:
    """One line: the pair, where the report comes from, and the summary counts."""
    s = report["summary"]
    t = Text()
    t.append_text(lit(report["from"], "bold"))
    t.append(" → ")
    t.append_text(lit(report["to"], "bold"))
    source = (
        "stored"
        if report.get("stored")
        else "computed after carry-over"
        if report.get("carried")
        else "computed, carry-over off"
    )
    t.append(f"  ({source})", style="dim")
    t.append("\n")
    parts = (
        (s["unchanged"], "unchanged", CLASS_STYLE["unchanged"]),
        (s["moved"], "moved", CLASS_STYLE["moved"]),
        (s["modified"], "modified", CLASS_STYLE["modified"]),
        (s["added"], "new", CLASS_STYLE["new"]),
        (s["removed"], "deleted", CLASS_STYLE["deleted"]),
        None,
        (s["runtime_churn"], "runtime churn", "magenta"),
        (s.get("review", 0), "flagged for review", "bold red"),
    )
    first = True
    for part in parts:
        if part is None:  # second line: what needs a closer look
            t.append("\n")
            first = True
            continue
        n, label, style = part
        if not first:
            t.append(" · ", style="dim")
        first = False
        t.append(f"{n:,}", style=style)
        t.append(f" {label}")
    return t
