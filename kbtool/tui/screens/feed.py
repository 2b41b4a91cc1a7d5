"""Agents feed: the work of `kbtool deep` and agent passes, live (polls the event feed)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.render.text import lit
from kbtool.tui.screens.base import BACK, FunctionRef, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar

POLL_SECONDS = 1.0
MAX_ROWS = 500
KIND_STYLE = {
    "deep-done": "green",
    "named": "green",
    "failed": "bold red",
    "rejected": "red",
    "deep-pass-started": "bold",
    "deep-pass-done": "bold",
    "agent-pass-started": "bold",
    "agent-pass-done": "bold",
}


def _summary(payload: dict) -> str:
    keep = (
        "name",
        "status",
        "confidence",
        "renamed",
        "lines",
        "truncated",
        "reason",
        "error",
        "functions",
        "done",
        "written",
        "considered",
    )
    return "  ".join(f"{k}={payload[k]}" for k in keep if k in payload)


class FeedScreen(KbScreen):
    """The latest events first; new ones appear within a second. Enter opens the function."""

    BINDINGS = [BACK, Binding("enter", "open", "open")]

    def __init__(self) -> None:
        super().__init__()
        self._last: int | None = None
        self._rows: list[dict] = []

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="feed-status")
        yield KbTable(id="feed-table")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#feed-table", KbTable)
        for label, width in (
            ("id", 6),
            ("time", 8),
            ("kind", 18),
            ("version", 7),
            ("function", 16),
            ("details", 40),
        ):
            table.add_column(label, key=label, width=width)
        table.flex("details", 20)
        self.query_one("#title", TitleBar).show(
            "agents feed", Text("kbtool deep, kbtool agent", style="dim")
        )
        self.set_interval(POLL_SECONDS, self.poll)
        self.poll()

    def reload(self) -> None:
        self.poll()

    def poll(self) -> None:
        feed = queries.events_since(self.kb.conn, self._last)
        if not feed["events"] and self._last is not None:
            return
        self._last = feed["last_id"]
        self._rows = (feed["events"][::-1] + self._rows)[:MAX_ROWS]
        table = self.query_one("#feed-table", KbTable)
        table.clear()
        for e in self._rows:
            table.add_row(
                str(e["id"]),
                (e["created_at"] or "")[11:19],
                Text(e["kind"], style=KIND_STYLE.get(e["kind"], "")),
                str(e["version_id"] or ""),
                lit(e["stable_id"] or ""),
                lit(_summary(e["payload"])),
                key=str(e["id"]),
            )
        self.query_one("#feed-status", Static).update(
            Text(f"{len(self._rows)} events; polling every {POLL_SECONDS:g} s", style="dim")
        )

    def current_function(self) -> FunctionRef | None:
        table = self.query_one("#feed-table", KbTable)
        if not self._rows or table.cursor_row is None or table.cursor_row >= len(self._rows):
            return None
        e = self._rows[table.cursor_row]
        idx = e["payload"].get("func_index")
        if e["stable_id"] and e["version_id"] and isinstance(idx, int):
            return FunctionRef(e["version_id"], idx, e["stable_id"])
        return None
