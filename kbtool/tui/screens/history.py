"""History: when a logical function was first seen, every version it is in, and its annotation
events: its name's and its knowledge's (comment, line comments, prototype, local names and
types), labelled by what changed; identical refusals are one row with ``×N``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from kbtool.kb.errors import KBError
from kbtool.kb.provenance import EVENT_COLOURS
from kbtool.render.text import lit
from kbtool.services.history import function_history
from kbtool.textutil import clip, printable
from kbtool.tui.screen_css import ScreenCss
from kbtool.tui.screens.base import BACK, RENAME, FunctionRef, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar
from kbtool.tui.widgets.palette import conf_text, name_text, prov_text

KIND_STYLE = {
    k: ("bold " if k in ("human-edit", "revert") else "") + c for k, c in EVENT_COLOURS.items()
}
KIND_STYLE.update({"lock": "dim", "unlock": "dim", "rejection": "red"})


def short_time(ts: str | None) -> str:
    """``2026-01-02T03:04:05.678Z`` -> ``2026-01-02 03:04``."""
    if not ts:
        return ""
    return ts[:16].replace("T", " ")


class HistoryScreen(ScreenCss, KbScreen):
    """Time travel for one stable_id."""

    TCSS = "history"  # its rules: kbtool/tui/history.tcss, added when first registered

    BINDINGS = [
        BACK,
        Binding("enter", "open_version_row", "open", key_display="⏎", show=False),
        RENAME,
    ]

    def __init__(self, stable_id: str) -> None:
        super().__init__()
        self.stable_id = stable_id
        self._hist: dict | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Vertical(id="history-body"):
            yield Static(id="first-seen")
            yield Static("versions", classes="section")
            yield KbTable(id="hist-versions")
            yield Static("events", classes="section")
            yield KbTable(id="hist-events")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        vt = self.query_one("#hist-versions", KbTable)
        for label, width in (
            ("version", 14),
            ("index", 6),
            ("body", 7),
            ("identity", 12),
            ("name then", 20),
        ):
            vt.add_column(label, key=label, width=width)
        vt.flex("name then", 16)
        et = self.query_one("#hist-events", KbTable)
        for label, width in (
            ("when", 16),
            ("what", 10),
            ("kind", 12),
            ("", 1),
            ("change", 24),
            ("conf", 4),
            ("actor", 14),
            ("reason", 36),
            ("version", 10),
        ):
            et.add_column(label, key=label or "ok", width=width)
        et.flex("change", 24)
        self.query_one("#hist-events").focus()

    def reload(self) -> None:
        try:
            hist = function_history(self.kb.conn, self.stable_id)
        except KBError as exc:
            self._hist = None
            self.query_one("#first-seen", Static).update(lit(str(exc), "bold red"))
            return
        self._hist = hist
        sym = hist["symbol"]
        self.query_one("#title", TitleBar).show(
            Text("history "),
            name_text(sym["name"] if sym else None, sym["provenance"] if sym else None, bold=True),
        )
        first = hist["first_seen"]
        head = Text()
        head.append("stable_id ", style="bold")
        head.append(self.stable_id)
        head.append("   first seen ", style="bold")
        head.append_text(lit(first["label"]))
        head.append(f" #{first['index']}  ({short_time(first['ingested_at'])})\n")
        head.append("now       ", style="bold")
        if sym:
            head.append_text(name_text(sym["name"], sym["provenance"], bold=True))
            head.append("  ")
            head.append_text(prov_text(sym["provenance"]))
            head.append(f" {sym['confidence']:.2f}")
            if sym["locked"]:
                head.append("  locked", style="bold")
        else:
            head.append("unnamed", style="dim italic")
        head.append(f"   in {len(hist['versions'])} version(s), {len(hist['timeline'])} event(s)")
        self.query_one("#first-seen", Static).update(head)

        names_then = {n["version_id"]: n["name"] for n in hist["names_by_version"]}
        vt = self.query_one("#hist-versions", KbTable)
        rows = []
        for v in hist["versions"]:
            ident = v["match_method"] or "new"
            if v["match_score"] is not None and ident != "new":
                ident += f" {v['match_score']:.2f}"
            rows.append(
                (
                    str(v["version_id"]),
                    [
                        lit(clip(printable(v["label"]), 14)),
                        Text(f"#{v['index']}"),
                        Text("changed", style="bold yellow")
                        if v["body_changed"]
                        else Text("same", style="dim"),
                        lit(ident),
                        lit(names_then[v["version_id"]])
                        if names_then.get(v["version_id"])
                        else name_text(None),
                    ],
                )
            )
        vt.replace_rows(rows, keep_key=vt.current_key())
        vt.styles.height = min(len(rows), 6) + 1

        et = self.query_one("#hist-events", KbTable)
        erows = []
        for e in hist["timeline"]:
            change = Text()
            if e["old_name"] is not None or e["new_name"] is not None:
                change.append_text(
                    lit(clip(e["old_name"], 80)) if e["old_name"] else Text("∅", style="dim")
                )
                change.append(" → ")
                change.append_text(
                    lit(clip(e["new_name"], 80)) if e["new_name"] else Text("∅", style="dim")
                )
            kind = lit(e["kind"], KIND_STYLE.get(e["kind"], ""))
            if (e.get("repeats") or 1) > 1:  # identical refusals counted on one row
                kind.append(f" ×{e['repeats']:,}", style="bold")
            erows.append(
                (
                    str(e["id"]),
                    [
                        Text(short_time(e["created_at"])),
                        lit(e["what"], "bold" if e["what"] == "name" else "cyan"),
                        kind,
                        Text("✓", style="green") if e["written"] else Text("✗", style="red"),
                        change,
                        conf_text(e["confidence"]),
                        lit(e["actor"]),
                        lit(e["reason"], "dim"),
                        lit(e.get("version_label") or ""),
                    ],
                )
            )
        if not erows:
            erows.append(
                ("none", [Text(""), Text("no events", style="dim italic")] + [Text("")] * 7)
            )
        et.replace_rows(erows, keep_key=et.current_key())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "hist-versions":
            self.action_open_version_row()

    def action_open_version_row(self) -> None:
        if self._hist is None:
            return
        key = self.query_one("#hist-versions", KbTable).current_key()
        for v in self._hist["versions"]:
            if str(v["version_id"]) == key:
                self.kb.open_detail(v["version_id"], v["index"])

    def current_function(self) -> FunctionRef | None:
        if self._hist is None:
            return None
        last = self._hist["versions"][-1]
        sym = self._hist["symbol"]
        return FunctionRef(
            last["version_id"], last["index"], self.stable_id, sym["name"] if sym else None
        )

    def after_rename(self, ref: FunctionRef) -> None:
        self.refresh_from_kb()
