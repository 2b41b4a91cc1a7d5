"""Diff: what changed between two versions (``kbtool.services.diff.report.get_diff``), filtered and coloured.

The report is the stored one when saved, otherwise computed as a pure read (carry-over off,
nothing stored); it is computed in a worker thread on its own read-only connection so a
large pair does not freeze the screen, and kept in the process's diff cache
(:mod:`kbtool.services.diff.cache`) until the KB changes, so going back to a pair is instant.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Select, Static, Tab, Tabs

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import KBError
from kbtool.render.terminal import CLASS_STYLE, summary_text
from kbtool.render.text import lit
from kbtool.services import heap
from kbtool.services.diff.programs import cross_program_warning, default_pair
from kbtool.services.diff.report import CHANGED
from kbtool.services.diff.triage import order_changes
from kbtool.services.diff.view import cached_head, cached_view, keep_cached_head
from kbtool.textutil import clip, printable
from kbtool.tui.screen_css import ScreenCss
from kbtool.tui.screens.base import BACK, HISTORY, FunctionRef, KbScreen
from kbtool.tui.widgets.changelog_view import ChangelogPane
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import KbTable, TitleBar
from kbtool.tui.widgets.palette import conf_text, name_text, prov_text

# filter id -> (tab label, predicate over a change entry)
# One meaning per word, as in docs/diff.md: "changed" = modified + new + deleted (the default
# tab); unchanged and moved sit behind their own tabs; "runtime" = entries marked runtime (the
# summary's "runtime churn" counts only those changed across a toolchain change).
FILTERS: dict[str, tuple[str, object]] = {
    "changed": ("changed", lambda c: c["classification"] in CHANGED),
    "modified": ("modified", lambda c: c["classification"] == "modified"),
    "new": ("new", lambda c: c["classification"] == "new"),
    "deleted": ("deleted", lambda c: c["classification"] == "deleted"),
    "runtime": ("runtime", lambda c: bool(c.get("runtime"))),
    "review": ("review", lambda c: bool(c.get("review"))),
    "all": ("all", lambda c: True),
    "moved": ("moved", lambda c: c["classification"] == "moved"),  # keys 8, 9: behind
    "unchanged": ("unchanged", lambda c: c["classification"] == "unchanged"),  # their tabs
}
CHUNK = 500  # a filter of at most this many rows goes into the table whole; a longer one:
FIRST_SCREENS = 2  # this many screens of rows first (what is on screen, and a page down),
STEP = 200  # then this many at a time as the cursor nears the end of what is loaded


def filter_counts(changes: list[dict]) -> dict[str, int]:
    """Rows per filter in one pass: every predicate of :data:`FILTERS` reads only an entry's
    classification, runtime and review, so the entries are grouped by those three and each
    predicate is asked once per group (22k entries: one pass instead of nine)."""
    groups = Counter(
        (c["classification"], bool(c.get("runtime")), bool(c.get("review"))) for c in changes
    )
    counts = dict.fromkeys(FILTERS, 0)
    for (cls, runtime, review), n in groups.items():
        probe = {"classification": cls, "runtime": runtime, "review": review}
        for fid, (_, pred) in FILTERS.items():
            if pred(probe):  # type: ignore[operator]
                counts[fid] += n
    return counts


def _view(conn, frm: int, to: int) -> tuple[dict, bool]:
    """(report, toolchain changed), through the diff cache. The changelog is read only when
    its pane is shown (:class:`ChangelogPane`): thousands of entries on a big module (a
    1.8 MB file on ffmpeg), and the pane is hidden until ``c``."""
    view = cached_view(conn, frm, to, with_changelog=False)
    return view["report"], view["toolchain_changed"]


def _head(conn, frm: int, to: int) -> tuple[dict, bool] | None:
    """(head, toolchain changed) of the pair's report when one is kept and the whole report
    is not in memory (:mod:`kbtool.services.diff.head`: the summary, the counts and the first
    changed rows in triage order, ~0.1 MB instead of 5.7 on ffmpeg), else None."""
    view = cached_head(conn, frm, to)
    return None if view is None else (view["head"], view["toolchain_changed"])


def head_counts(head: dict) -> dict[str, int]:
    """:func:`filter_counts` from a head's groups (each predicate asked once per group)."""
    counts = dict.fromkeys(FILTERS, 0)
    for cls, runtime, review, n, _width in head["groups"]:
        probe = {"classification": cls, "runtime": runtime, "review": review}
        for fid, (_, pred) in FILTERS.items():
            if pred(probe):  # type: ignore[operator]
                counts[fid] += n
    return counts


def _summary(report: dict) -> Text:
    return summary_text(report)


class DiffScreen(ScreenCss, KbScreen):
    """From/to pickers, summary counts, filter tabs, the change table and the changelog.

    Opens on the selected version and its parent (never two programs by default); a
    cross-program pair picked by hand shows the report's warning above the summary. Names are
    shown whole: the name column is as wide as the longest, and the table scrolls sideways
    (left/right arrows) when that is wider than the terminal."""

    TCSS = "diff"  # its rules: kbtool/tui/diff.tcss, added when first registered

    DEFAULT_CSS = """
    DiffScreen #diff-warning {
        display: none;
        height: auto;
        padding: 0 1;
        background: $warning 30%;
        color: $text;
        text-style: bold;
    }
    DiffScreen.-cross #diff-warning {
        display: block;
    }
    """

    # the table has the focus from the screen's compose: focused in on_mount (a later call)
    # the screen's first frame drew the "from" picker focused, the table not, and a second
    # layout and frame followed for the focus's move (its scrollbars restyled)
    AUTO_FOCUS = "#diff-table"

    BINDINGS = [
        BACK,
        Binding("f", "next_filter", "filter"),
        Binding("c", "toggle_changelog", "changelog"),
        Binding("x", "swap", "swap", show=False),
        HISTORY,
        Binding("n", "rename", "rename", show=False),
        *[
            Binding(str(i + 1), f"filter('{fid}')", fid, show=False)
            for i, fid in enumerate(FILTERS)
        ],
    ]

    def __init__(self, from_version: int | None = None, to_version: int | None = None) -> None:
        super().__init__()
        self._from = from_version
        self._to = to_version
        self._report: dict | None = None
        self._filter = "changed"
        self._shown: list[dict] = []
        self._loaded = 0
        self._toolchain_changed = False
        self._diff_want: tuple[int, int] | None = None
        self._diff_gen = 0
        self._diff_running = False
        self._shown_pair: tuple[int, int] | None = None
        # the report's head is shown (the first changed rows, :func:`_head`); the whole report
        # is read once that frame is drawn (:meth:`_after_head`)
        self._head: dict | None = None
        # kept with the report they were made of (:meth:`_entries`, :meth:`_widths`)
        self._sorted: tuple[dict, list[dict]] | None = None
        self._group_widths: tuple[dict, dict] | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Vertical(id="diff-body"):
            with Horizontal(id="diff-pick"):
                yield Static("from", classes="pick-label")
                yield Select([], id="diff-from", allow_blank=True, compact=True, prompt="version")
                yield Static("to", classes="pick-label")
                yield Select([], id="diff-to", allow_blank=True, compact=True, prompt="version")
            yield Static(id="diff-warning")
            yield Static(id="diff-summary")
            yield Tabs(
                *[Tab(label, id=f"f-{fid}") for fid, (label, _) in FILTERS.items()],
                id="diff-filter",
            )
            yield KbTable(id="diff-table")
            yield ChangelogPane(id="diff-changelog")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#diff-table", KbTable)
        for label, width in (
            ("change", 8),
            ("from", 5),
            ("to", 5),
            ("name", 20),
            ("provenance", 10),
            ("conf", 4),
            ("score", 5),
            ("flags", 9),
        ):
            table.add_column(label, key=label, width=width)
        table.flex("name", 14)
        table.focus()

    # ------------------------------------------------------------ versions

    def reload(self) -> None:
        versions = queries.list_versions(self.kb.conn)
        self._versions = {v["id"]: v for v in versions}
        ids = [v["id"] for v in versions]
        options = [
            (
                Text.assemble(
                    lit(clip(printable(v["label"]), 16)),
                    " · ",
                    lit(clip(printable(v["program"]), 12), "magenta"),
                ),
                v["id"],
            )
            for v in versions
        ]
        if len(ids) < 2:
            self._message(
                "A diff needs two versions; this KB has "
                f"{len(ids)}. Ingest another release with `kbtool ingest FILE --label L`."
            )
            return
        to = (
            self._to
            if self._to in ids
            else (self.kb.version_id if self.kb.version_id in ids else ids[-1])
        )
        if self._from in ids and self._from != to:
            frm = self._from  # a pair asked for (or picked) explicitly
        else:
            pair = default_pair(versions, to)  # the version and its parent, one program
            if pair is None:
                v = self._versions[to]
                self._from, self._to = None, to
                self._fill_pickers(options, None, to)
                self._message(
                    f"version {to} is the only version of program {v['program']}: "
                    "there is nothing of the same program to compare it with; pick "
                    "a pair above (two programs compare unrelated code)"
                )
                return
            frm, to = pair
        self._from, self._to = frm, to
        self._fill_pickers(options, frm, to)
        self.compute(frm, to)

    def _fill_pickers(self, options: list, frm: int | None, to: int | None) -> None:
        with self.prevent(Select.Changed):
            for sel_id, value in (("#diff-from", frm), ("#diff-to", to)):
                sel = self.query_one(sel_id, Select)
                sel.set_options(options)
                if value is None:
                    sel.clear()
                else:
                    sel.value = value

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK:
            return
        if event.select.id == "diff-from":
            self._from = int(event.value)
        else:
            self._to = int(event.value)
        if self._from is None or self._to is None:
            return
        if self._from == self._to:
            self._message("Pick two different versions.")
            return
        self.compute(self._from, self._to)

    def action_swap(self) -> None:
        if self._from is not None and self._to is not None:
            self._from, self._to = self._to, self._from
            self.reload()

    # ------------------------------------------------------------ computing

    def compute(self, frm: int, to: int) -> None:
        """Ask for the report of (frm, to). One computation runs at a time; requests made
        meanwhile (pickers, live refresh while an agent writes names) collapse into one rerun."""
        self._diff_want = (frm, to)
        self._diff_gen += 1
        if self._diff_running:
            return
        self._diff_running = True
        # a pair shown anew on the default tab may open on its report's head
        head = self._shown_pair != (frm, to) and self._filter == "changed"
        if self._shown_pair != (frm, to):
            if head and self._head_now(self._diff_gen, frm, to):
                return
            self._busy(frm, to)
        self._compute(self._diff_gen, frm, to, head)

    def _head_now(self, gen: int, frm: int, to: int) -> bool:
        """Show the pair's kept head at once (False: none kept, or it cannot be read; the
        worker then reads and reports as before). A head is small (~0.1 MB, ~20 ms on
        ffmpeg): read here, the screen's first layout draws its rows; read on the worker, it
        came after four layouts of an empty screen (the worker shares the interpreter's lock
        with them), ~250 ms later on ffmpeg, each layout then done again for the rows."""
        try:
            conn = open_ro(self.kb.db_path)
            try:
                with heap.collector_paused():
                    got = _head(conn, frm, to)
            finally:
                conn.close()
        except Exception:  # noqa: BLE001 - the worker reads it again and says why
            return False
        if got is None:
            return False
        with self.app.batch_update():
            self._head_done(gen, got)
        return True

    @work(thread=True, group="diff")
    def _compute(self, gen: int, frm: int, to: int, head: bool = False) -> None:
        try:
            conn = open_ro(self.kb.db_path)
            try:
                with heap.collector_paused():
                    got = _head(conn, frm, to) if head else None
                    if got is None:
                        result = _view(conn, frm, to)
                        # kept (the diff cache): frozen before the collector is back, so its
                        # young generations do not walk the new report in front of the first
                        # rows; a full collection it may make due waits for the screen's settle
                        heap.settle(collect=False)
            finally:
                conn.close()
        except KBError as exc:
            self.app.call_from_thread(self._done, gen, None, str(exc))
            return
        except Exception as exc:  # never take the whole app down for one diff
            self.app.call_from_thread(
                self._done, gen, None, f"the diff failed: {type(exc).__name__}: {exc}"
            )
            return
        if got is not None:
            self.app.call_from_thread(self._head_done, gen, got)
            return
        self.app.call_from_thread(self._done, gen, result, None)

    def _done(self, gen: int, result: tuple | None, error: str | None) -> None:
        self._diff_running = False
        if gen != self._diff_gen:  # something newer was asked meanwhile
            self.compute(*self._diff_want)
            return
        if error is not None:
            self._message(error)
            return
        report, toolchain_changed = result
        self._toolchain_changed = toolchain_changed
        if self._head is not None and self._shown_pair == self._diff_want:
            self._whole(report)  # its head is on screen: the same rows, the rest behind them
        else:
            self._shown_pair = self._diff_want
            self._head = None
            self._show_report(report)
        # a modified row opens the function diff: both versions prepared meanwhile
        self.call_after_refresh(self.kb.prepare_code, *self._shown_pair)
        self.call_after_refresh(self._keep_head, *self._shown_pair)

    def _head_done(self, gen: int, got: tuple[dict, bool]) -> None:
        """The head of the pair's report: shown as the report would be (same summary, counts
        and first rows), unless more rows than it holds are wanted at once; the whole report
        is read once that frame is drawn."""
        if gen != self._diff_gen:  # something newer was asked meanwhile
            self._diff_running = False
            self.compute(*self._diff_want)
            return
        head, toolchain_changed = got
        table = self.query_one("#diff-table", KbTable)
        keep_row = table.cursor_row if table.row_count else 0
        if keep_row + self._first_rows(head["changed_total"]) > len(head["changed"]):
            self._compute(gen, *self._diff_want)  # more than the head holds: the whole now
            return
        self._toolchain_changed = toolchain_changed
        self._shown_pair = self._diff_want
        self._head = head
        self._show_report(head["report"])
        self.call_after_refresh(self._after_head, gen, table.painted)

    def _after_head(self, gen: int, painted: int, tries: int = 0) -> None:
        table = self.query_one("#diff-table", KbTable)
        if table.painted == painted and self.is_current and tries < 50:
            # not drawn yet (the screen went idle before the table asked for its frame): the
            # whole report's read would hold the GIL in front of the head's frame
            self.call_after_refresh(self._after_head, gen, painted, tries + 1)
            return
        # at once (a pause here only moved the frame after the head's later in the benchmark:
        # nothing else draws one); the rows a person pages through first are the head's
        self._read_whole(gen)

    def _read_whole(self, gen: int) -> None:
        if gen == self._diff_gen and self.is_attached:
            self._compute(gen, *self._diff_want)
        elif self.is_attached:  # something newer was asked meanwhile
            self._diff_running = False
            self.compute(*self._diff_want)

    def _whole(self, report: dict) -> None:
        """The whole report behind its head: the rows on screen stay (they are its first rows
        on the default tab, as :meth:`_fill_table` would make them); the rest come as the
        cursor goes down, or a tab picked meanwhile is filled now."""
        self._head = None
        self._report = report
        if self._filter != "changed":
            self._fill_table()
            return
        shown = order_changes([c for c in report["changes"] if FILTERS["changed"][1](c)], "triage")  # type: ignore[operator]
        if shown[: self._loaded] != self._shown[: self._loaded]:  # never: the head's own rows
            self._fill_table()
            return
        self._shown = shown
        table = self.query_one("#diff-table", KbTable)
        if table.row_count and table.cursor_row >= self._loaded - self._margin():
            self._load_more()

    @work(thread=True, group="diff-head", exclusive=True, description="the report's head")
    def _keep_head(self, frm: int, to: int) -> None:
        """Keep the head of a report read whole (none kept under today's key), so that the
        next process opens on it; after the table's frame (~20 ms on ffmpeg, once)."""
        try:
            conn = open_ro(self.kb.db_path)
            try:
                keep_cached_head(conn, frm, to)
            finally:
                conn.close()
        except Exception:  # noqa: BLE001 - only the next open's speed is at stake
            return

    def _busy(self, frm: int, to: int) -> None:
        self.query_one("#diff-summary", Static).update(
            Text(f"comparing version {frm} with {to}…", style="italic")
        )
        versions = getattr(self, "_versions", {})
        if frm in versions and to in versions:  # say it before the answer comes
            self._warn(cross_program_warning(versions[frm], versions[to]))

    def _warn(self, warning: str | None) -> None:
        """The cross-program warning above the summary (hidden for a pair of one program)."""
        self.query_one("#diff-warning", Static).update(
            Text.assemble(("⚠ ", "bold"), lit(warning, "bold")) if warning else ""
        )
        self.set_class(bool(warning), "-cross")

    def _message(self, text: str) -> None:
        self._report = None
        self._head = None
        self._shown_pair = None
        self._warn(None)
        self.query_one("#diff-summary", Static).update(lit(text, "italic"))
        self.query_one("#diff-table", KbTable).clear()
        self.query_one(ChangelogPane).clear()
        self.query_one("#title", TitleBar).show("diff")

    def _show_report(self, report: dict) -> None:
        """The report (or, :attr:`_head` set, the report's fields besides its entries)."""
        head = self._head
        self._report = report
        self._warn(report.get("warning"))
        self.query_one("#title", TitleBar).show(
            "diff", Text.assemble(lit(report["from"], "bold"), " → ", lit(report["to"], "bold"))
        )
        summary = _summary(report)
        runtime = (
            any(c.get("runtime") for c in report["changes"])
            if head is None
            else any(g[1] for g in head["groups"])
        )
        if not self._toolchain_changed and runtime:
            summary.append("  (toolchain same or unknown: runtime rows are not churn)", style="dim")
        self.query_one("#diff-summary", Static).update(summary)
        counts = filter_counts(report["changes"]) if head is None else head_counts(head)
        tabs = self.query_one("#diff-filter", Tabs)
        for fid, (label, _) in FILTERS.items():
            tab = tabs.query_one(f"#f-{fid}", Tab)
            tab.label = Text(f"{label} {counts[fid]:,}")
        # the changelog: read and drawn once its pane is shown (nothing made while hidden)
        self.query_one(ChangelogPane).want(*self._shown_pair)
        self._fill_table()
        # the report stays in the diff cache: frozen once the screen is whole (a full
        # collection it may need then is not in front of the table's first frame)
        self.set_timer(0.5, heap.settle)

    def _page(self) -> int:
        """Rows of one screen (the terminal's height: the table is never taller)."""
        return max(10, self.app.size.height)

    def _fill_table(self) -> None:
        """Rows of the current filter: up to CHUNK rows whole; a longer filter its first
        screens now, then STEP rows at a time as the cursor nears the end.

        (A DataTable measures every cell it is given: 20,000 rows would freeze the screen for
        seconds, and even 500 cost 100 ms in front of the first frame; the counts are always
        exact. A refresh keeps the cursor's row and loads up to it.)
        """
        table = self.query_one("#diff-table", KbTable)
        if self._report is None:
            return
        head = self._head
        if head is not None and self._filter != "changed":
            return  # filled when the whole report is in (:meth:`_whole`)
        keep_row = table.cursor_row if table.row_count else 0
        if head is not None:  # its first changed rows, in triage order already
            self._shown = head["changed"]
            total = head["changed_total"]
        else:
            self._shown = self._entries(self._filter)
            total = len(self._shown)
        self._loaded = min(total, keep_row + self._first_rows(total))
        table.replace_rows(self._row(i) for i in range(self._loaded))
        self._fit_names()
        self.refresh_bindings()

    def _entries(self, fid: str) -> list[dict]:
        """The report's entries of filter ``fid`` in triage order (modified functions that
        look like patches first, issue 29). The default tab sorts its own entries; another
        tab sorts the whole report once (kept with it), and each tab is then a pass over that:
        a stable sort filtered is the sort of the filtered (22.5k entries on ffmpeg: ~5 ms a
        tab instead of ~20)."""
        report = self._report
        assert report is not None
        pred = FILTERS[fid][1]
        if self._sorted is None or self._sorted[0] is not report:
            if fid == "changed":
                return order_changes([c for c in report["changes"] if pred(c)], "triage")  # type: ignore[operator]
            self._sorted = (report, order_changes(report["changes"], "triage"))
        return [c for c in self._sorted[1] if pred(c)]  # type: ignore[operator]

    def _widths(self) -> dict[tuple[str, bool, bool], int]:
        """The longest name (as shown, a name-less row "unnamed") of each group of entries
        (classification, runtime, review): a filter's longest is its groups' (kept with the
        report: one pass over it, not one per tab)."""
        report = self._report
        assert report is not None
        if self._group_widths is None or self._group_widths[0] is not report:
            widths: dict[tuple[str, bool, bool], int] = {}
            for c in report["changes"]:
                key = (c["classification"], bool(c.get("runtime")), bool(c.get("review")))
                w = len(printable(c.get("name") or "unnamed"))
                if w > widths.get(key, -1):
                    widths[key] = w
            self._group_widths = (report, widths)
        return self._group_widths[1]

    def _first_rows(self, total: int) -> int:
        """Rows a filter of ``total`` rows loads at once (below the cursor's)."""
        return total if total <= CHUNK else min(CHUNK, FIRST_SCREENS * self._page())

    def _fit_names(self) -> None:
        """The name column as wide as the longest name of the filter (whole names; the table
        scrolls sideways when that is wider than the screen)."""
        if self._head is not None:  # the changed groups' longest (a name-less row: 7)
            changed = FILTERS["changed"][1]
            longest = max(
                (
                    max(g[4], 7)
                    for g in self._head["groups"]
                    if changed({"classification": g[0]})  # type: ignore[operator]
                ),
                default=0,
            )
        elif self._filter == "changed" and self._group_widths is None:  # its own rows
            longest = max(
                (len(printable(c.get("name") or "unnamed")) for c in self._shown), default=0
            )
        else:
            pred = FILTERS[self._filter][1]
            longest = max(
                (
                    w
                    for (cls, runtime, review), w in self._widths().items()
                    if pred({"classification": cls, "runtime": runtime, "review": review})  # type: ignore[operator]
                ),
                default=0,
            )
        self.query_one("#diff-table", KbTable).flex("name", max(14, min(longest + 1, 400)))

    def _row(self, i: int) -> tuple[str, list]:
        c = self._shown[i]
        cls = c["classification"]
        flags = Text()
        if c.get("runtime"):
            churn = self._toolchain_changed and cls in ("modified", "new", "deleted")
            flags.append("churn" if churn else "rt", style="magenta")
        if c.get("review"):
            flags.append(" review" if flags else "review", style="bold red")
        score = c.get("score")
        return (
            str(i),
            [
                Text(cls, style=CLASS_STYLE.get(cls, "")),
                Text("" if c.get("from_index") is None else str(c["from_index"]), justify="right"),
                Text("" if c.get("to_index") is None else str(c["to_index"]), justify="right"),
                name_text(c.get("name"), c.get("provenance")),
                prov_text(c.get("provenance")),
                conf_text(c.get("confidence")),
                Text("" if score is None else f"{score:.2f}", justify="right"),
                flags,
            ],
        )

    def _load_more(self) -> None:
        if self._loaded >= len(self._shown):
            return  # (the head's rows all loaded: the rest once the whole report is in)
        table = self.query_one("#diff-table", KbTable)
        end = min(self._loaded + min(STEP, CHUNK), len(self._shown))
        for i in range(self._loaded, end):
            key, cells = self._row(i)
            table.add_row(*cells, key=key)
        self._loaded = end

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # a page ahead: page down never reaches the end of what is loaded
        if (
            event.data_table.id == "diff-table"
            and event.cursor_row >= self._loaded - self._margin()
        ):
            self._load_more()

    def _margin(self) -> int:
        return min(CHUNK // 2, self._page() + 5)

    # ------------------------------------------------------------ filters

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        fid = (event.tab.id or "f-changed")[2:]
        if fid in FILTERS and fid != self._filter:
            self._filter = fid
            self._fill_table()

    def action_filter(self, fid: str) -> None:
        self.query_one("#diff-filter", Tabs).active = f"f-{fid}"

    def action_next_filter(self) -> None:
        ids = list(FILTERS)
        self.action_filter(ids[(ids.index(self._filter) + 1) % len(ids)])

    def action_toggle_changelog(self) -> None:
        # the classes go on the pane and the table, not the screen: a class on the screen
        # applied the stylesheet again to every widget of it (ffmpeg: 70-95 ms CPU, now 6)
        pane = self.query_one(ChangelogPane)
        show = not pane.has_class("-shown")
        with self.app.batch_update():
            if show:
                pane.about_to_show()
            pane.set_class(show, "-shown")
            self.query_one("#diff-table", KbTable).set_class(show, "-with-changelog")

    # ------------------------------------------------------------ rows

    def _current_change(self) -> dict | None:
        key = self.query_one("#diff-table", KbTable).current_key()
        if key is None or not key.isdigit() or int(key) >= len(self._shown):
            return None
        return self._shown[int(key)]

    def current_function(self) -> FunctionRef | None:
        c = self._current_change()
        if c is None or self._report is None:
            return None
        if c.get("to_index") is not None and c.get("to_stable_id"):
            return FunctionRef(
                self._report.get("to_version_id", self._to),
                c["to_index"],
                c["to_stable_id"],
                c.get("name"),
            )
        if c.get("from_index") is not None and c.get("from_stable_id"):
            return FunctionRef(
                self._report.get("from_version_id", self._from),
                c["from_index"],
                c["from_stable_id"],
                c.get("name"),
            )
        return None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        c = self._current_change()
        if c is not None and self._report is not None and c["classification"] == "modified":
            from kbtool.tui.screens.code_diff import open_function_diff  # one kept screen

            open_function_diff(
                self.app,
                self._report.get("from_version_id", self._from),
                c["from_index"],
                self._report.get("to_version_id", self._to),
                c["to_index"],
            )
            return
        self.action_open()

    def after_rename(self, ref: FunctionRef) -> None:
        self.refresh_from_kb()
