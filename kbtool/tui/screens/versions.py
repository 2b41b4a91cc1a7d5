"""Versions: every ingested release, grouped by program (lineage), with toolchain, counts, shared
memory and coverage by provenance; the info box shows the program and parent of the cursor's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.render.text import lit, toolchain_text
from kbtool.textutil import clip, printable
from kbtool.tui.screen_css import add_screen_css
from kbtool.tui.screens.base import BACK_HIDDEN, KbScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import TitleBar
from kbtool.tui.widgets.palette import PROVENANCES, coverage_bar, prov_text, split_of

if TYPE_CHECKING:
    from textual.widgets import DataTable

    from kbtool.tui.widgets.table import KbTable

_PROGRAM_KEY = "program:"


class VersionsScreen(KbScreen):
    """The home screen: pick a version (Enter opens its heatmap)."""

    BINDINGS = [
        Binding("d", "diff_to", "diff"),
        BACK_HIDDEN,  # back to the heatmap last shown (its cursor kept), if any
    ]

    def _heatmap_to_return_to(self) -> int | None:
        vid = self.kb.version_id
        return vid if vid is not None and queries.version_exists(self.kb.conn, vid) else None

    def action_back(self) -> None:
        """Esc/Backspace: pop when something is above; else reopen the last heatmap shown."""
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        elif (vid := self._heatmap_to_return_to()) is not None:
            self.kb.open_heatmap(vid)

    _composed = False  # its widgets made (at start under the heatmap: when first shown)

    def compose(self) -> ComposeResult:
        # Starting on the heatmap, this screen lies under it unseen: its widgets (a table,
        # a footer) are made when it is first shown, not before the heatmap's first paint.
        if self.kb.heatmap_first:
            return
        from kbtool.tui.widgets.table import KbTable  # first shown: not at a start on the heatmap

        # its rules too (versions.tcss; they select only the widgets made here, none of them
        # styled yet): a start on the heatmap does not parse them
        add_screen_css(self.app, "versions")
        self._composed = True
        yield TitleBar(id="title")
        with Vertical(id="versions-body"):
            yield KbTable(id="versions-table")
            yield Static(id="version-info")
            yield Static(id="versions-empty")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        if self._composed:
            self._columns()

    async def on_screen_resume(self) -> None:
        # runs before KbScreen's (which reloads what it shows): the widgets first
        if not self._composed and self.is_current and not self.kb.heatmap_first:
            await self.recompose()
            if self._composed:
                self._columns()

    def _table(self) -> KbTable:
        return self.query_one("#versions-table")  # type: ignore[return-value]

    def _columns(self) -> None:
        table = self._table()
        for label, key, width in (
            ("id", "id", 3),
            ("label", "label", 14),
            ("toolchain", "toolchain", 14),
            ("funcs", "funcs", 5),
            ("defined", "defined", 7),
            ("shm", "shm", 3),
            ("coverage", "coverage", 19),
        ):
            table.add_column(label, key=key, width=width)
        table.flex("label", 10)

    # ------------------------------------------------------------ data

    def reload(self) -> None:
        if self.kb.heatmap_first:  # the heatmap opens on top at start: load when shown
            self.seen_token = None
            return
        conn = self.kb.conn
        self._versions = queries.list_versions(conn)
        self._coverage = {v["id"]: queries.coverage(conn, v["id"]) for v in self._versions}
        table = self._table()
        empty = not self._versions
        self.set_class(empty, "-empty")
        first_of: dict[str, int] = {}
        for v in self._versions:
            first_of.setdefault(v["program"], v["id"])
        self._versions.sort(key=lambda v: (first_of[v["program"]], v["id"]))  # grouped by program
        n_prog = len(first_of)
        self.query_one("#title", TitleBar).show(
            f"versions ({len(self._versions)})" + (f" · {n_prog} programs" if n_prog > 1 else "")
        )
        table.disabled = empty  # nothing to open: no "⏎ open" in the footer
        if empty:
            self.query_one("#versions-empty", Static).update(self._empty_text())
            table.clear()
            return
        keep = self.kb.version_id
        rows = []
        prev_program = None
        for v in self._versions:
            if n_prog > 1 and v["program"] != prev_program:  # a header row per program
                rows.append(
                    (
                        f"{_PROGRAM_KEY}{v['id']}",
                        [
                            Text(""),
                            Text.assemble(
                                ("▾ ", "magenta"),
                                lit(clip(printable(v["program"]), 40), "bold magenta"),
                            ),
                            Text(""),
                            Text(""),
                            Text(""),
                            Text(""),
                            Text(""),
                        ],
                    )
                )
            prev_program = v["program"]
            cov = self._coverage[v["id"]]
            bar = coverage_bar(split_of(cov), cov["defined"], 12)
            bar.append(f" {cov['coverage_pct']:5.1f}%")
            rows.append(
                (
                    str(v["id"]),
                    [
                        Text(str(v["id"]), justify="right"),
                        lit(clip(printable(v["label"]), 40), "bold"),
                        toolchain_text(v["toolchain_version"], 14),
                        Text(str(v["functions"]), justify="right"),
                        Text(str(cov["defined"]), justify="right"),
                        Text("yes" if v["shared_memory"] else "no"),
                        bar,
                    ],
                )
            )
        table.replace_rows(
            rows, keep_key=str(keep) if keep is not None else str(self._versions[-1]["id"])
        )
        if self.focused is None:
            table.focus()
        self._show_info()

    def _empty_text(self) -> Text:
        import shlex  # an empty KB only: not at start

        db = printable(shlex.quote(str(self.kb.db_path)))
        t = Text()
        t.append("This KB has no versions yet.\n\n", style="bold")
        t.append("Ingest a release of your module to start:\n\n")
        t.append(f"    kbtool ingest app-1.0.wasm --label 1.0 --db {db}\n\n", style="bold cyan")
        t.append("or try the bundled demo (two zstd releases):\n\n")
        t.append(
            "    kbtool demo --db kbtool-demo.db && kbtool tui --db kbtool-demo.db\n\n",
            style="bold cyan",
        )
        t.append("This screen updates by itself when a version arrives.", style="dim")
        return t

    # ------------------------------------------------------------ cursor

    def _highlighted(self) -> int | None:
        key = self._table().current_key()
        if key is None or key.startswith(_PROGRAM_KEY):  # a program's header row
            return None
        return int(key)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        vid = self._highlighted()
        if vid is not None:
            self.kb.version_id = vid
        self._show_info()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_version()

    def _show_info(self) -> None:
        vid = self._highlighted()
        box = self.query_one("#version-info", Static)
        if vid is None:
            box.update("")
            return
        info = queries.version_info(self.kb.conn, vid)
        cov = self._coverage.get(vid) or queries.coverage(self.kb.conn, vid)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True, min_width=9)  # never "v… p… t…"
        grid.add_column(overflow="fold")
        grid.add_row("version", Text.assemble(lit(info["label"], "bold"), f"  (id {vid})"))
        lin = info.get("lineage") or {}
        parent = info["parent_version_id"]
        how = f", overlap {lin['overlap']:.1%}" if lin.get("overlap") is not None else ""
        grid.add_row(
            "program",
            Text.assemble(
                lit(info["program"], "bold magenta"),
                f"  parent: version {parent}{how}"
                if parent is not None
                else "  (first of its lineage)",
            ),
        )
        producers = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(info["producers"].items()))
        grid.add_row("toolchain", toolchain_text(info["toolchain_version"]))
        if producers:
            grid.add_row("producers", lit(clip(printable(producers), 200)))
        grid.add_row(
            "functions",
            Text(
                f"{info['imported_functions']} imported + {info['defined_functions']} defined,"
                f" {info['exported_functions']} exported, {info['instructions']:,} instructions"
            ),
        )
        grid.add_row(
            "module",
            Text(
                f"{info['size']:,} bytes  sha256 {info['sha256'][:16]}…"
                f"  shared memory {'yes' if info['shared_memory'] else 'no'}"
            ),
        )
        grid.add_row("ingested", lit(info["ingested_at"]))
        split = Text()
        parts = split_of(cov)
        for prov in PROVENANCES:
            if split:
                split.append("  ")
            split.append_text(prov_text(prov))
            split.append(f" {parts[prov]}")
        grid.add_row(
            "named", Text(f"{cov['named']} of {cov['defined']} ({cov['coverage_pct']:.1f}%)")
        )
        grid.add_row("split", split)
        if info["parent_version_id"] is not None:
            grid.add_row(
                "carried",
                Text(f"{info['carried']} identities from version {info['parent_version_id']}"),
            )
        box.update(grid)

    # ------------------------------------------------------------ actions

    def action_open_version(self) -> None:
        vid = self._highlighted()
        if vid is not None:
            self.kb.open_heatmap(vid)

    def action_diff_to(self) -> None:
        vid = self._highlighted()
        self.kb.open_diff(to_version=vid)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open_version", "diff_to"):
            return True if getattr(self, "_versions", None) else None
        if action == "back":  # back to the heatmap last shown, when there is one
            return len(self.app.screen_stack) > 1 or self._heatmap_to_return_to() is not None
        return super().check_action(action, parameters)
