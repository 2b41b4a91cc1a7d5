"""Heatmap: every defined function of one version as a tinted cell, with the cell under the cursor."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.kb.queries.functions import HeatmapCells, HeatmapRow
from kbtool.render.text import lit
from kbtool.tui.screens.base import BACK_HIDDEN, RENAME, FunctionRef, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.heatmap import BUCKETS, HALF, UNNAMED, HeatmapGrid, cell_code
from kbtool.tui.widgets.lists import Panel, TitleBar
from kbtool.tui.widgets.palette import (
    PROVENANCES,
    conf_text,
    coverage_bar,
    name_text,
    prov_text,
    split_of,
)


def _coverage(cells: HeatmapCells) -> dict:
    """``queries.coverage`` of a version, from its heatmap's counts (one query less)."""
    named = dict(zip([p for p in PROVENANCES if p is not None], cells.named_by_slot, strict=True))
    defined = len(cells.indices)
    return {
        "defined": defined,
        "named": cells.named,
        "coverage_pct": round(cells.named / defined * 100, 2) if defined else 0.0,
        "oracle_named": named.get("oracle", 0),
        "human_named": named.get("human", 0),
        "agent_named": named.get("agent", 0),
        "export_named": named.get("export", 0),
        "diff_carry_named": named.get("diff-carry", 0),
    }


class HeatmapScreen(KbScreen):
    """One cell per defined function of a version, tinted by provenance, brighter when surer."""

    BINDINGS = [
        BACK_HIDDEN,  # works, not shown: here it is the same as v (versions)
        Binding("H", "history", "history"),
        Binding("g,number_sign", "goto", "go to #", key_display="g", show=False),  # ? lists it
        RENAME,
        Binding("u", "next_unnamed", "next unnamed", show=False),
        Binding("[", "other_version(-1)", "prev version", show=False),
        Binding("]", "other_version(1)", "next version", show=False),
    ]

    def __init__(self, version_id: int, index: int | None = None) -> None:
        super().__init__()
        self.version_id = version_id
        self._want_index = index
        self._indices: Sequence[int] = ()  # the cells' function indices, in order
        self._full_rows: list[HeatmapRow] | None = None  # see _rows
        self._ref: FunctionRef | None = None  # the cursor's function, as _show_cell read it
        self._label = ""

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Horizontal(id="heatmap-body"):
            yield HeatmapGrid(id="grid")
            with Vertical(id="side"):
                yield Panel(id="cell-info")
                yield Static(id="legend")
                yield Static(id="heat-coverage")
        yield Panel(id="cell-line")  # shown instead of the side panel below 80x24
        yield DiffFooter(compact=True, show_command_palette=False)

    _resumed = False  # shown once: a later resume restyles as Textual does

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """First shown just after its mount, every widget styled a moment ago as it was
        registered (with every rule that can select it: the app's files are in the
        stylesheet already, a widget's own rules are scoped to it): Textual's handler (after
        this one) would restyle them all again (~10 M instructions of the TUI's start on
        ffmpeg, issue 30). Shown again later (a theme may have changed), restyled as usual."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False

    def on_mount(self) -> None:
        self.query_one(HeatmapGrid).focus()
        self.app.theme_changed_signal.subscribe(self, lambda _t: self._show_legend())

    # ------------------------------------------------------------ data

    @property
    def _rows(self) -> list[HeatmapRow]:
        """Every cell's :class:`HeatmapRow`, read on first use after a reload: the screen
        itself needs only the cells' codes and indices (``queries.heatmap_cells``) and the
        cursor's row (the start no longer makes ~22,000 rows on ffmpeg; issue 30)."""
        if self._full_rows is None:
            self._full_rows = queries.heatmap_rows(self.kb.conn, self.version_id)
        return self._full_rows

    def reload(self) -> None:
        conn = self.kb.conn
        grid = self.query_one(HeatmapGrid)
        keep = self._want_index
        if keep is None and self._indices and grid.count:
            keep = self._indices[min(grid.cursor, len(self._indices) - 1)]
        if keep is None:  # reopened: where the cursor was last time
            keep = self.kb.heatmap_cursor.get(self.version_id)
        self._want_index = None
        self.kb.heatmap_first = False  # the versions screen underneath may load from now on
        try:
            info = queries.get_version(conn, self.version_id)
        except KBError:
            self.query_one("#cell-info", Panel).set(
                Text("this version is gone from the KB", style="bold red")
            )
            return
        self._label = info["label"]
        self._full_rows = self._ref = None
        cells = self.kb.heatmap_cells(self.version_id)
        self._indices = cells.indices
        pos = 0
        if keep is not None and self._indices:
            pos = min(bisect_left(self._indices, keep), len(self._indices) - 1)
        self.kb.version_id = self.version_id
        self._cov = _coverage(cells)
        self.query_one("#title", TitleBar).show(
            lit(self._label, "bold"), f"heatmap  {len(self._indices):,} functions"
        )
        grid.set_cells(bytearray(cells.codes), cursor=pos)
        self._show_legend()
        self._show_coverage()
        if not self._indices:
            self.query_one("#cell-info", Panel).set(
                Text("This version has no defined functions.", style="italic")
            )

    def position_of_index(self, index: int) -> int | None:
        pos = bisect_left(self._indices, index)
        return pos if pos < len(self._indices) and self._indices[pos] == index else None

    # ------------------------------------------------------------ side panel

    def on_heatmap_grid_cursor_moved(self, event: HeatmapGrid.CursorMoved) -> None:
        if 0 <= event.position < len(self._indices):
            self.kb.heatmap_cursor[self.version_id] = self._indices[event.position]
        self._show_cell(event.position)

    def on_heatmap_grid_selected(self, event: HeatmapGrid.Selected) -> None:
        self.action_open()

    def _show_cell(self, pos: int) -> None:
        box = self.query_one("#cell-info", Panel)
        n = len(self._indices)
        if pos >= n:
            return
        idx = self._indices[pos]
        try:
            fn = queries.get_function(self.kb.conn, self.version_id, idx)
        except KBError:
            fn = None
        sym = fn["symbol"] if fn else None
        if fn is not None:  # the live record (a rename since the last reload shows at once)
            sid, name, prov, conf, size = (
                fn["stable_id"],
                fn["name"],
                fn["provenance"],
                fn["confidence"],
                fn["body_size"],
            )
            self._ref = FunctionRef(self.version_id, idx, sid, name)
        else:  # gone from the KB since the reload (the next poll reloads)
            sid, name, prov, conf, size = "", None, None, None, 0
            self._ref = None
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True, min_width=4)  # labels never collapse to "f…"
        grid.add_column(no_wrap=True, overflow="ellipsis")
        grid.add_row("func", Text(f"#{idx}  ({pos + 1:,}/{n:,})"))
        grid.add_row("name", name_text(name, prov, bold=True))
        prov_line = prov_text(prov)
        if sym and sym["locked"]:
            prov_line.append("  locked", style="bold")
        grid.add_row("prov", prov_line)
        grid.add_row("conf", conf_text(conf))
        grid.add_row("type", lit(fn["type"] if fn else None))
        grid.add_row("size", Text(f"{size:,} B" + (f", {fn['instr_count']:,} instr" if fn else "")))
        grid.add_row("id", Text(sid, style="dim"))
        box.set(grid)
        line = Text(f"#{idx} ")
        line.append_text(name_text(name, prov, bold=True))
        line.append("  ")
        line.append_text(prov_text(prov))
        if conf is not None:
            line.append(f" {conf:.2f}")
        line.append(f"  {pos + 1:,}/{n:,}", style="dim")
        self.query_one("#cell-line", Panel).set(line)

    def _show_legend(self) -> None:
        grid = self.query_one(HeatmapGrid)
        pal = grid._get_palette()
        out = Text()
        names = {None: "unnamed"}
        for i, prov in enumerate(PROVENANCES):
            out.append(HALF * 2, style=f"{pal.color(cell_code(prov, 1.0), True).hex}")
            out.append(f" {names.get(prov, prov):<11}")
            if i % 2 == 1:
                out.append("\n")
        out.append("conf 0 ")
        for b in range(BUCKETS):
            out.append(HALF, style=pal.color(PROVENANCES.index("human") * BUCKETS + b, True).hex)
        out.append(" 1\n")
        out.append(HALF, style=pal.cursor.hex)
        out.append(" cursor", style="dim")
        self.query_one("#legend", Static).update(out)

    def _show_coverage(self) -> None:
        cov = self._cov
        out = Text()
        out.append(f"{cov['coverage_pct']:.1f}% named", style="bold")
        out.append(f"  {cov['named']:,}/{cov['defined']:,}\n")
        out.append_text(coverage_bar(split_of(cov), cov["defined"], 26))
        self.query_one("#heat-coverage", Static).update(out)

    # ------------------------------------------------------------ actions

    def current_function(self) -> FunctionRef | None:
        grid = self.query_one(HeatmapGrid)
        if grid.cursor >= len(self._indices):
            return None
        index = self._indices[grid.cursor]
        ref = self._ref
        if ref is not None and ref.index == index and ref.version_id == self.version_id:
            return ref
        row = queries.heatmap_row(self.kb.conn, self.version_id, index)
        if row is None:
            return None
        self._ref = FunctionRef(self.version_id, row.index, row.stable_id, row.name)
        return self._ref

    def after_rename(self, ref: FunctionRef) -> None:
        pos = self.position_of_index(ref.index)
        if pos is None:
            return
        fn = queries.get_function(self.kb.conn, self.version_id, ref.index)
        if self._full_rows is not None:
            self._full_rows[pos] = self._full_rows[pos]._replace(
                name=fn["name"], provenance=fn["provenance"], confidence=fn["confidence"]
            )
        self.query_one(HeatmapGrid).set_cell(pos, cell_code(fn["provenance"], fn["confidence"]))
        self._show_cell(pos)
        self._cov = _coverage(self.kb.heatmap_cells(self.version_id))
        self._show_coverage()

    def action_goto(self) -> None:
        """Prompt for a function index and move the cursor to it."""

        def done(index: int | None) -> None:
            if index is None:
                return
            pos = self.position_of_index(index)
            if pos is None:
                self.notify(f"{self._label} has no defined function #{index}", timeout=3)
                return
            self.query_one(HeatmapGrid).move_to(pos)

        from kbtool.tui.screens.goto import GotoScreen  # its first `g`: not at start

        self.app.push_screen(GotoScreen(self._label), done)

    def action_next_unnamed(self) -> None:
        grid = self.query_one(HeatmapGrid)
        code = UNNAMED * BUCKETS + BUCKETS - 1
        found = grid._codes.find(bytes([code]), grid.cursor + 1)
        if found < 0:
            found = grid._codes.find(bytes([code]), 0)
        if found < 0:
            self.notify("every function of this version is named", timeout=3)
            return
        grid.move_to(found)

    def action_other_version(self, step: int) -> None:
        ids = [v["id"] for v in queries.list_versions(self.kb.conn)]
        if self.version_id not in ids:
            return
        i = ids.index(self.version_id) + step
        if not 0 <= i < len(ids):
            return
        ref = self.current_function()
        index = None
        if ref is not None:
            for where in queries.functions_by_stable_id(self.kb.conn, ref.stable_id):
                if where["version_id"] == ids[i]:
                    index = where["index"]
        self.version_id = ids[i]
        self._want_index = index if index is not None else 0
        self.refresh_from_kb()
