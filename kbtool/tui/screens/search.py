"""Search: named functions across every version, or a function by index (``#1031``), referenced
string (``"text``) or constant (``=0x10``) in the version on screen; results as you type."""

from __future__ import annotations

import asyncio
import re

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from kbtool.kb import queries
from kbtool.render.text import lit
from kbtool.services import nav
from kbtool.tui.screen_css import ScreenCss
from kbtool.tui.screens.base import BACK, HISTORY, RENAME, FunctionRef, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar
from kbtool.tui.widgets.palette import conf_text, name_text, prov_text

DEBOUNCE_S = 0.15
LIMIT = queries.SEARCH_CAP
_HEX = re.compile(r"[0-9a-f]{4,}\Z")


class SearchScreen(ScreenCss, KbScreen):
    """Type part of a name (or a stable_id prefix); Enter opens the function."""

    TCSS = "search"  # its rules: kbtool/tui/search.tcss, added when first registered

    BINDINGS = [
        BACK,
        Binding("down", "focus_results", "results", show=False),
        HISTORY,
        RENAME,
    ]

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self._initial = query
        self._results: list[dict] = []
        self._query = ""

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Vertical(id="search-body"):
            yield Input(
                value=self._initial,
                placeholder='name, stable_id, #index, "string or =constant',
                id="search-input",
            )
            yield Static(id="search-status")
            yield KbTable(id="search-results")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#search-results", KbTable)
        for label, width in (
            ("name", 30),
            ("provenance", 10),
            ("conf", 4),
            ("versions", 8),
            ("stable_id", 16),
        ):
            table.add_column(label, key=label, width=width)
        table.flex("name", 16)
        self.query_one("#title", TitleBar).show("search", Text("all versions", style="dim"))
        box = self.query_one("#search-input", Input)
        box.cursor_blink = self.kb.blink
        box.focus()

    # ------------------------------------------------------------ searching

    def reload(self) -> None:
        self._run(self.query_one("#search-input", Input).value, keep=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.debounced_search(event.value)

    @work(exclusive=True, group="search")
    async def debounced_search(self, text: str) -> None:
        """Wait for typing to pause; a newer keystroke cancels this worker (exclusive)."""
        await asyncio.sleep(DEBOUNCE_S)
        self._run(text)

    def _run(self, text: str, keep: bool = False) -> None:
        conn = self.kb.conn
        text = text.strip()
        self._query = text
        query = nav.classify(text)
        located = nav.located(conn, text, self.kb.version_id, limit=LIMIT) if text else []
        if query.kind in ("string", "const"):
            results = []  # the prefix asks for strings/constants only
        else:
            results = queries.search_symbols(conn, text, limit=LIMIT) if text else []
        seen = {r["stable_id"] for r in located}
        results = located + [r for r in results if r["stable_id"] not in seen]
        seen = {r["stable_id"] for r in results}
        if _HEX.match(text.lower()):  # a stable_id prefix: unnamed functions too
            for f in queries.find_functions(conn, text.lower(), limit=20):
                if f["stable_id"] not in seen and f["stable_id"].startswith(text.lower()):
                    results.insert(
                        0,
                        {
                            "stable_id": f["stable_id"],
                            "name": f["name"],
                            "provenance": f["provenance"],
                            "confidence": None,
                        },
                    )
                    seen.add(f["stable_id"])
        self._results = results
        table = self.query_one("#search-results", KbTable)
        keep_key = table.current_key() if keep else None
        rows = []
        for r in results:
            where = queries.functions_by_stable_id(conn, r["stable_id"])
            r["where"] = where
            span = f"v{r['version_id']}#{r['index']}" if "index" in r else _span(where)
            rows.append(
                (
                    r["stable_id"],
                    [
                        name_text(r["name"], r["provenance"]),
                        prov_text(r["provenance"]),
                        conf_text(r["confidence"]),
                        Text(span),
                        Text(r["stable_id"], style="dim"),
                    ],
                )
            )
        table.replace_rows(rows, keep_key=keep_key)
        self.refresh_bindings()
        status = self.query_one("#search-status", Static)
        if not text:
            status.update(
                Text(
                    "Type to search every version's named functions (#1031 an index, "
                    '"text a string, =0x10 a constant); ↓ moves to the results, '
                    "⏎ opens one.",
                    style="dim",
                )
            )
        elif not results:
            what = {
                "index": "no function at index ",
                "string": "no function references a string with ",
                "const": "no function uses the constant ",
            }.get(query.kind, "no named function matches ")
            status.update(
                Text.assemble(what, lit(query.text if query.kind != "index" else text, "bold"))
            )
        else:
            capped = " (capped)" if len(results) >= LIMIT else ""
            status.update(
                Text.assemble(f"{len(results)} result(s){capped} for ", lit(text, "bold"))
            )

    # ------------------------------------------------------------ navigation

    def action_focus_results(self) -> None:
        self.query_one("#search-results", KbTable).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._run(event.value, keep=True)  # do not wait for the debounce
        self.action_open()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def current_function(self) -> FunctionRef | None:
        key = self.query_one("#search-results", KbTable).current_key()
        for r in self._results:
            if r["stable_id"] == key and "index" in r:
                return FunctionRef(r["version_id"], r["index"], key, r["name"])
            if r["stable_id"] == key and r.get("where"):
                last = r["where"][-1]
                return FunctionRef(last["version_id"], last["index"], key, r["name"])
        return None

    def after_rename(self, ref: FunctionRef) -> None:
        self.reload()


def _span(where: list[dict]) -> str:
    """Versions a function appears in, as labels-free ids: ``1-3`` or ``1,3``."""
    ids = [w["version_id"] for w in where]
    if not ids:
        return ""
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 1:
        return f"v{ids[0]}-{ids[-1]}"
    return ",".join(f"v{i}" for i in ids[:4]) + ("…" if len(ids) > 4 else "")
