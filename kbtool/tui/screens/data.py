"""Data: a version's strings (with their xref counts) and globals (roles, names, readers and
writers), as IDA's Strings and Names windows (issue 26). ``/`` filters the strings, Enter
lists the xrefs of the row under the cursor, Tab switches between the two tables.

Read from :mod:`kbtool.services.data` (the stored data model); every label and string is
untrusted and shown as literal ``Text``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import data as data_svc
from kbtool.textutil import clip, printable
from kbtool.tui.screens.base import BACK, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar

PAGE = 500  # strings listed at once (the filter narrows the rest)


class DataScreen(KbScreen):
    """Strings and globals of one version."""

    DEFAULT_CSS = """
    DataScreen #data-status { height: 1; padding: 0 1; background: $panel; }
    DataScreen #data-filter { height: 1; border: none; padding: 0 1; display: none; }
    DataScreen #data-filter.-shown { display: block; }
    DataScreen #data-body { height: 1fr; }
    DataScreen #data-strings-box { height: 2fr; }
    DataScreen #data-globals-box { height: 1fr; border-top: hkey $panel; }
    DataScreen .section { height: 1; padding: 0 1; text-style: bold; }
    DataScreen KbTable { height: 1fr; }
    """
    BINDINGS = [
        BACK,
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("tab", "switch", "strings/globals", show=False),
        Binding("enter", "xrefs", "xrefs", key_display="⏎", show=False),
    ]

    def __init__(self, version_id: int) -> None:
        super().__init__()
        self.version_id = version_id
        self.search: str | None = None
        self._strings: list[dict[str, Any]] = []
        self._globals: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="data-status")
        yield Input(placeholder="filter strings (Enter)", id="data-filter")
        with Vertical(id="data-body"):
            with Vertical(id="data-strings-box"):
                yield Static("strings", id="strings-label", classes="section")
                yield KbTable(id="data-strings")
            with Vertical(id="data-globals-box"):
                yield Static("globals", classes="section")
                yield KbTable(id="data-globals")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        st = self.query_one("#data-strings", KbTable)
        for label, width in (("address", 8), ("xrefs", 5), ("label", 22), ("text", 40)):
            st.add_column(label, key=label, width=width)
        st.flex("text", 16)
        gt = self.query_one("#data-globals", KbTable)
        for label, width in (
            ("global", 6),
            ("name", 24),
            ("type", 7),
            ("role", 16),
            ("reads/writes", 12),
        ):
            gt.add_column(label, key=label, width=width)
        gt.flex("name", 10)
        st.focus()

    def reload(self) -> None:
        self.query_one("#title", TitleBar).show(Text(f"v{self.version_id} strings and globals"))
        status = self.query_one("#data-status", Static)
        try:
            page = data_svc.strings(self.kb.conn, self.version_id, search=self.search, limit=PAGE)
            self._globals = data_svc.globals_of(self.kb.conn, self.version_id)
        except KBError as exc:
            status.update(lit(str(exc), "bold red"))
            return
        self._strings = page["items"]
        info = Text(f" {page['total']:,} string(s)", style="bold")
        if self.search:
            info.append_text(lit(f" containing {self.search!r}"))
        if page["total"] > len(self._strings):
            info.append(f", first {len(self._strings)} shown: / narrows", style="dim")
        info.append(f"   {len(self._globals)} global(s)   ⏎ xrefs  tab switch", style="dim")
        status.update(info)
        st = self.query_one("#data-strings", KbTable)
        rows = [
            (
                str(k),
                [
                    Text(f"{it['address']:x}"),
                    Text(str(it["refs"])),
                    lit(it["label"]),
                    lit(clip(printable(repr(it["text"] or "")[1:-1]), 200), "green"),
                ],
            )
            for k, it in enumerate(self._strings)
        ]
        if not rows:
            rows.append(
                ("none", [Text(""), Text(""), Text("no strings", style="dim italic"), Text("")])
            )
        st.replace_rows(rows, keep_key=st.current_key())
        gt = self.query_one("#data-globals", KbTable)
        grows = [
            (
                str(k),
                [
                    Text(f"g{g['index']}"),
                    lit(g["name"]) if g["name"] else Text("-", style="dim"),
                    Text(g["type"] + (" mut" if g["mutable"] else "")),
                    lit(g["role"] or "", "dim"),
                    Text(f"{g['reads']}/{g['writes']}"),
                ],
            )
            for k, g in enumerate(self._globals)
        ]
        gt.replace_rows(grows, keep_key=gt.current_key())

    # ------------------------------------------------------------ actions

    def action_filter(self) -> None:
        box = self.query_one("#data-filter", Input)
        box.add_class("-shown")
        box.value = self.search or ""
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.search = event.value.strip() or None
        event.input.remove_class("-shown")
        self.query_one("#data-strings", KbTable).focus()
        self.reload()

    def action_switch(self) -> None:
        gt = self.query_one("#data-globals", KbTable)
        if gt.has_focus:
            self.query_one("#data-strings", KbTable).focus()
        else:
            gt.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.data_table.id)

    def action_xrefs(self) -> None:
        gt = self.query_one("#data-globals", KbTable)
        self._open("data-globals" if gt.has_focus else "data-strings")

    def _open(self, table_id: str | None) -> None:
        from kbtool.tui.screens.xrefs import XrefsScreen

        key = self.query_one(f"#{table_id}", KbTable).current_key()
        if key is None or not key.isdigit():
            return
        if table_id == "data-globals":
            target = f"g:{self._globals[int(key)]['index']}"
        else:
            target = hex(self._strings[int(key)]["address"])
        self.app.push_screen(XrefsScreen(self.version_id, target))
