"""Suggestions: agent names kept below the write floor, for a person to accept or dismiss.

Lists the version's open suggestions (name, confidence, backend, rule, the function's current
name; every text escaped). Enter accepts the highlighted one through the gate as
``kbtool suggestions accept`` does (a locked human name, via
:func:`kbtool.services.agent_pass.accept_suggestion`); ``d`` dismisses it. Read-only mode
(``kbtool tui --read-only``) lists only.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.tui.screens.base import BACK, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar

PAGE = 500


class SuggestionsScreen(KbScreen):
    """Open suggestions of one version, highest confidence first."""

    BINDINGS = [BACK, Binding("enter", "accept", "accept"), Binding("d", "dismiss", "dismiss")]

    def __init__(self, version_id: int) -> None:
        super().__init__()
        self.version_id = version_id
        self._rows: list[dict] = []

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="sugg-status")
        yield KbTable(id="sugg-table")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#sugg-table", KbTable)
        for label, width in (
            ("index", 6),
            ("name", 28),
            ("conf", 5),
            ("backend", 10),
            ("rule", 22),
            ("now", 24),
        ):
            table.add_column(label, key=label, width=width)
        table.flex("name", 16)
        self.query_one("#title", TitleBar).show(
            f"suggestions · version {self.version_id}",
            Text("Enter accept (human, locked) · d dismiss", style="dim"),
        )
        self.reload()

    def reload(self) -> None:
        page = queries.suggestions(self.kb.conn, self.version_id, limit=PAGE)
        self._rows = page["items"]
        table = self.query_one("#sugg-table", KbTable)
        keep = table.cursor_row
        table.clear()
        for s in self._rows:
            cur = s.get("current")
            table.add_row(
                str(s["index"]),
                lit(s["name"], "cyan"),
                f"{s['confidence']:.2f}",
                lit(s.get("backend")),
                lit(s.get("rule")),
                lit(f"{cur['name']} ({cur['provenance']})" if cur else "-", "dim"),
            )
        if self._rows:
            table.move_cursor(row=min(keep, len(self._rows) - 1))
        shown = (
            f"{len(self._rows)} of {page['total']}"
            if page["total"] > len(self._rows)
            else str(page["total"])
        )
        self.query_one("#sugg-status", Static).update(
            Text(
                f"{shown} open suggestion(s)"
                if self._rows
                else "no open suggestions (names below the write floor appear here after "
                "`kbtool agent`)",
                style="dim",
            )
        )

    def _selected(self) -> dict | None:
        table = self.query_one("#sugg-table", KbTable)
        if not self._rows or table.cursor_row is None:
            return None
        return self._rows[min(table.cursor_row, len(self._rows) - 1)]

    def _decide(self, accept: bool) -> None:
        s = self._selected()
        if s is None:
            return
        if self.kb.read_only:
            self.notify(
                "read-only: start `kbtool tui` without --read-only to decide", severity="warning"
            )
            return
        from kbtool.services.agent_pass import NoSuggestion, accept_suggestion, dismiss_suggestion

        conn = open_rw(self.kb.db_path, create=False)
        try:
            if accept:
                d = accept_suggestion(conn, s["stable_id"], self.version_id, actor="human:tui")
                msg = (
                    Text.assemble("accepted ", lit(s["name"], "bold"))
                    if d["written"]
                    else Text.assemble("not written: ", lit(d["reason"]))
                )
            else:
                dismiss_suggestion(conn, s["stable_id"], self.version_id, actor="human:tui")
                msg = Text.assemble("dismissed ", lit(s["name"], "dim"))
        except (NoSuggestion, KBError) as exc:
            msg = Text(str(exc).splitlines()[0])
        finally:
            conn.close()
        self.notify(msg.plain)
        self.reload()

    def action_accept(self) -> None:
        self._decide(True)

    def on_data_table_row_selected(self, event: KbTable.RowSelected) -> None:
        """Enter on the table (the table takes the key before the screen's binding)."""
        event.stop()
        self._decide(True)

    def action_dismiss(self) -> None:
        self._decide(False)
