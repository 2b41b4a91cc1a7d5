"""Xrefs: who uses a function, a global, a data item or a string (issue 26), as IDA's
"cross references to" window: one row per place (function, instruction offset, kind);
Enter opens that function's disassembly at the instruction. For a function target, what
it uses (data and globals) follows; Enter there lists that item's own xrefs.

The answer comes from :func:`kbtool.services.data.xrefs` (the stored data model). Labels,
string text and names are untrusted: every cell is a literal ``Text``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import data as data_svc
from kbtool.textutil import clip, printable
from kbtool.tui.screens.base import BACK, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar


def target_text(t: dict[str, Any]) -> Text:
    """One line saying what the target is (literal text)."""
    if t["kind"] == "function":
        return lit(f"function #{t['index']} {t.get('name') or '(unnamed)'}")
    if t["kind"] == "global":
        name = t.get("name") or f"g{t['index']}"
        return lit(
            f"global {name} (g{t['index']}, {t['type']}{' mut' if t['mutable'] else ''},"
            f" role {t.get('role') or '-'})"
        )
    out = lit(f"{t['kind']} {t['label']} at 0x{t['address']:x} ({t['size']} bytes)")
    if t.get("text") is not None:
        out.append_text(lit(" " + clip(printable(repr(t["text"])), 80), "green"))
    return out


def _fn(index: int, name: str | None) -> Text:
    if index < 0:
        return Text("(data)", style="dim")
    t = Text(f"#{index} ", style="dim")
    t.append_text(lit(name) if name else Text("unnamed", style="dim italic"))
    return t


class XrefsScreen(KbScreen):
    """The references of one target of a version (``x`` on a line of the code screen, Enter
    on a string or global of the data screen)."""

    DEFAULT_CSS = """
    XrefsScreen #xrefs-head { height: auto; padding: 0 1; background: $boost; }
    XrefsScreen .section { height: 1; padding: 0 1; text-style: bold; }
    XrefsScreen #xrefs-table { height: 1fr; }
    XrefsScreen #xrefs-uses { height: 1fr; }
    XrefsScreen #xrefs-uses.-none, XrefsScreen #uses-label.-none { display: none; }
    """
    BINDINGS = [
        BACK,
        Binding("enter", "open_row", "open", key_display="⏎", show=False),
        Binding("tab", "switch", "refs/uses", show=False),
    ]

    def __init__(self, version_id: int, target: str, result: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.version_id = version_id
        self.target = target
        self.result = result
        self._fresh = result is not None  # the first reload shows it; later ones re-read
        self._uses: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Vertical(id="xrefs-body"):
            yield Static(id="xrefs-head")
            yield Static(id="refs-label", classes="section")
            yield KbTable(id="xrefs-table")
            yield Static(id="uses-label", classes="section")
            yield KbTable(id="xrefs-uses")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#xrefs-table", KbTable)
        for label, width in (("function", 40), ("offset", 8), ("kind", 13)):
            table.add_column(label, key=label, width=width)
        table.flex("function", 20)
        uses = self.query_one("#xrefs-uses", KbTable)
        for label, width in (("offset", 8), ("kind", 13), ("target", 40)):
            uses.add_column(label, key=label, width=width)
        uses.flex("target", 20)
        table.focus()

    def reload(self) -> None:
        if self._fresh:
            self._fresh = False
        else:
            try:
                self.result = data_svc.xrefs(self.kb.conn, self.version_id, self.target)
            except KBError as exc:
                self.query_one("#title", TitleBar).show(Text("xrefs "), lit(self.target))
                self.query_one("#xrefs-head", Static).update(lit(str(exc), "bold red"))
                return
        res = self.result
        self.query_one("#title", TitleBar).show(
            Text(f"v{self.version_id} xrefs "), lit(clip(self.target, 40))
        )
        self.query_one("#xrefs-head", Static).update(target_text(res["target"]))
        shown = len(res["refs"])
        label = f"{res['total']} reference(s) to it" + (
            f", first {shown} shown" if res["total"] > shown else ""
        )
        self.query_one("#refs-label", Static).update(Text(label, style="bold"))
        table = self.query_one("#xrefs-table", KbTable)
        rows = []
        for k, r in enumerate(res["refs"]):
            off = "" if r.get("offset") is None else f"0x{r['offset']:x}"
            rows.append((str(k), [_fn(r["func_index"], r.get("name")), Text(off), lit(r["kind"])]))
        if not rows:
            rows.append(("none", [Text("no references", style="dim italic"), Text(""), Text("")]))
        table.replace_rows(rows, keep_key=table.current_key())
        self._show_uses(res.get("uses"))

    def _show_uses(self, uses: dict[str, Any] | None) -> None:
        table = self.query_one("#xrefs-uses", KbTable)
        label = self.query_one("#uses-label", Static)
        self._uses = list((uses or {}).get("data") or [])
        for w in (table, label):
            w.set_class(uses is None, "-none")
        if uses is None:
            return
        calls = uses.get("calls") or []
        label.update(
            Text(
                f"it uses {len(self._uses)} data/global reference(s) and calls {len(calls)}"
                " function(s)",
                style="bold",
            )
        )
        rows = []
        for k, u in enumerate(self._uses):
            if u["target_kind"] == "global":
                what = lit(f"g{u['target']}" + (f" {u['label']}" if u.get("label") else ""))
            else:
                what = lit(u.get("label") or f"0x{u['target']:x}")
                if u.get("text") is not None:
                    what.append_text(lit(" " + clip(printable(repr(u["text"])), 60), "green"))
            rows.append((str(k), [Text(f"0x{u['offset']:x}"), lit(u["kind"]), what]))
        if not rows:
            rows.append(("none", [Text(""), Text("nothing", style="dim italic"), Text("")]))
        table.replace_rows(rows, keep_key=table.current_key())

    # ------------------------------------------------------------ actions

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_row(event.data_table.id)

    def action_switch(self) -> None:
        uses = self.query_one("#xrefs-uses", KbTable)
        if self._uses and not uses.has_focus:
            uses.focus()
        else:
            self.query_one("#xrefs-table", KbTable).focus()

    def action_open_row(self, table_id: str | None = None) -> None:
        if self.result is None:
            return
        uses = self.query_one("#xrefs-uses", KbTable)
        if table_id == "xrefs-uses" or (table_id is None and uses.has_focus):
            key = uses.current_key()
            if key is None or not key.isdigit():
                return
            u = self._uses[int(key)]
            target = f"g:{u['target']}" if u["target_kind"] == "global" else hex(u["target"])
            self.app.push_screen(XrefsScreen(self.version_id, target))
            return
        key = self.query_one("#xrefs-table", KbTable).current_key()
        if key is None or not key.isdigit():
            return
        r = self.result["refs"][int(key)]
        if r["func_index"] < 0:
            self.notify("a reference from data (a pointer table), not from code", timeout=3)
            return
        from kbtool.tui.screens.code import WASM, CodeScreen

        screen = CodeScreen(self.version_id, r["func_index"], WASM)
        screen.at_offset = r.get("offset")  # the disassembly opens on that instruction
        self.app.push_screen(screen)
