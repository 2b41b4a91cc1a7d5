"""Types: the KB's struct, union, enum and typedef declarations (issue 27), read-only, as
IDA's Local Types window: the list (kind, size, members, uses, provenance, lock) and, for the
row under the cursor, its declaration, members with offsets and sizes, and where it is applied.

Read from :mod:`kbtool.services.types`; every name and declaration is untrusted text and shown
as literal ``Text``. Writing types stays with ``kbtool types`` and MCP ``declare_type``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import types as types_svc
from kbtool.services import types_view
from kbtool.textutil import clip
from kbtool.tui.screens.base import BACK, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar
from kbtool.tui.widgets.palette import prov_text

PAGE = types_svc.MAX_LIST  # types listed at once
SHOWN_APPLIED = 50  # "applied" lines of one type


class TypesScreen(KbScreen):
    """The KB's types (version-independent) and one type's layout."""

    DEFAULT_CSS = """
    TypesScreen #types-status { height: 1; padding: 0 1; background: $panel; }
    TypesScreen #types-body { height: 1fr; }
    TypesScreen #types-list { height: 1fr; }
    TypesScreen #types-detail-box { height: 1fr; border-top: hkey $panel; padding: 0 1; }
    """
    BINDINGS = [BACK]

    def __init__(self) -> None:
        super().__init__()
        self._types: list[dict[str, Any]] = []
        self._shown: str | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="types-status")
        with Vertical(id="types-body"):
            yield KbTable(id="types-list")
            with VerticalScroll(id="types-detail-box"):
                yield Static(id="types-detail")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        t = self.query_one("#types-list", KbTable)
        for label, width in (
            ("name", 24),
            ("kind", 7),
            ("size", 5),
            ("members", 7),
            ("uses", 4),
            ("provenance", 10),
            ("conf", 4),
            ("lock", 4),
        ):
            t.add_column(label, key=label, width=width)
        t.flex("name", 16)
        t.focus()

    def reload(self) -> None:
        self.query_one("#title", TitleBar).show(Text("types"))
        status = self.query_one("#types-status", Static)
        try:
            page = types_view.types_page(self.kb.conn, 0, PAGE)
        except KBError as exc:
            status.update(lit(str(exc), "bold red"))
            return
        self._types = page["types"]
        info = Text(f" {page['total']:,} type(s)", style="bold")
        if page["total"] > len(self._types):
            info.append(
                f", first {len(self._types)} shown (kbtool types list --offset N)", style="dim"
            )
        info.append(
            "   no types yet: kbtool types add FILE.h"
            if not page["total"]
            else "   read-only: kbtool types add FILE.h / apply / field",
            style="dim",
        )
        status.update(info)
        table = self.query_one("#types-list", KbTable)
        rows = [
            (
                str(k),
                [
                    lit(r["name"], "bold"),
                    lit(r["kind"] or ""),
                    Text("" if r["size"] is None else str(r["size"])),
                    Text(str(r["fields"])),
                    Text(str(r["uses"])),
                    prov_text(r["provenance"]),
                    Text(f"{r['confidence']:.2f}"),
                    Text("yes" if r["locked"] else ""),
                ],
            )
            for k, r in enumerate(self._types)
        ]
        if not rows:
            rows.append(("none", [Text("none", style="dim italic")] + [Text("")] * 7))
        table.replace_rows(rows, keep_key=table.current_key())
        self._shown = None
        self._show_detail()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        key = self.query_one("#types-list", KbTable).current_key()
        detail = self.query_one("#types-detail", Static)
        if key is None or not key.isdigit() or int(key) >= len(self._types):
            detail.update(Text(""))
            self._shown = None
            return
        name = self._types[int(key)]["name"]
        if name == self._shown:
            return
        self._shown = name
        try:
            r = types_view.type_detail(self.kb.conn, name)
        except KBError as exc:
            detail.update(lit(str(exc), "bold red"))
            return
        detail.update(self.detail_text(r))

    def detail_text(self, r: dict[str, Any]) -> Text:
        """The declaration, layout line, members, enumerators and where the type is applied."""
        out = Text()
        out.append_text(lit(r.get("text") or r["name"], "green"))
        out.append("\n")
        size = "?" if r.get("size") is None else str(r["size"])
        out.append_text(lit(f"{r.get('kind')}, {size} bytes, align {r.get('align')}; "))
        out.append_text(prov_text(r["provenance"]))
        out.append(f" {r['confidence']:.2f}" + (", locked" if r["locked"] else ""))
        fields = r.get("fields") or []
        if fields:
            out.append("\n\nmembers\n", style="bold")
            names = [clip(f["name"] or "(anonymous)", 40) for f in fields]
            width = max(4, *map(len, names))
            out.append(f"{'offset':>8}  {'size':>5}  {'name':<{width}}  type\n", style="dim")
            for f, fname in zip(fields, names, strict=True):
                out.append(f"{f['offset']:>8}  {f['size']:>5}  ")
                out.append_text(lit(fname, "bold"))
                out.append(" " * (width - len(fname) + 2))
                out.append_text(lit(clip(f["type"], 80), "cyan"))
                out.append("\n")
        enums = r.get("enumerators") or []
        if enums:
            out.append("\n\nenumerators\n", style="bold")
            for n, v in enums:
                out.append_text(lit(clip(str(n), 60)))
                out.append(f" = {v}\n")
        applied = r.get("applied") or []
        out.append("\napplied\n" if fields or enums else "\n\napplied\n", style="bold")
        if not applied:
            out.append("nowhere yet (kbtool types apply)\n", style="dim italic")
        for a in applied[:SHOWN_APPLIED]:
            out.append_text(self._where(a))
            out.append("\n")
        if len(applied) > SHOWN_APPLIED:
            out.append(
                f"… {len(applied) - SHOWN_APPLIED:,} more (kbtool types show)\n", style="dim"
            )
        return out

    def _where(self, a: dict[str, Any]) -> Text:
        """``local 1 of build_histogram (v2 #100): struct hist *`` or ``data d:… : T``."""
        line = Text()
        fn = a.get("function")
        if fn is not None:
            line.append(f"local {a['key']} of ")
            line.append_text(
                lit(clip(fn["name"], 60), "bold")
                if fn["name"]
                else lit(f"unnamed {a['target']}", "dim")
            )
            if fn["version_id"] is not None:
                line.append(f" (v{fn['version_id']} #{fn['index']})", style="dim")
        else:
            line.append("data ")
            line.append_text(lit(clip(a["target"] + (f" {a['key']}" if a["key"] else ""), 60)))
        line.append(": ")
        line.append_text(lit(clip(a["type"], 80), "cyan"))
        line.append("  ")
        line.append_text(prov_text(a["provenance"]))
        return line
