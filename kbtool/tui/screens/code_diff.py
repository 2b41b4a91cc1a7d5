"""One function in two releases, on its own screen (:class:`FunctionDiffScreen`): aligned
listings (side by side or unified) or the diff of the lifted C. Split from
:mod:`kbtool.tui.screens.code`, which re-exports it."""

from __future__ import annotations

import sys
from typing import NamedTuple

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.render.code import WASM, C, diff_summary_text
from kbtool.render.text import lit
from kbtool.services import heap
from kbtool.tui.screens.base import (
    BACK,
    HISTORY,
    FunctionRef,
    KbScreen,
    push_kept,
    style_inputs,
)
from kbtool.tui.screens.code_paging import read_ro as _load
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.diff_view import FunctionDiffView
from kbtool.tui.widgets.lists import TitleBar
from kbtool.tui.widgets.palette import name_text

__all__ = ["KEPT", "DiffPair", "FunctionDiffScreen", "open_function_diff"]

KEPT = "kbtool-fdiff"  # the app's kept function diff screen (open_function_diff)
AT_ONCE_INSTRUCTIONS = 400  # both bodies this short, both versions prepared: read before shown


class DiffPair(NamedTuple):
    """The two functions a function diff compares."""

    from_version: int
    from_index: int
    to_version: int
    to_index: int


class FunctionDiffScreen(KbScreen):
    """A function in two releases: aligned listings (side by side or unified), changed
    constants, offsets and callees marked; ``w`` shows the diff of the lifted C instead."""

    DEFAULT_CSS = """
    FunctionDiffScreen #fdiff-status { height: 1; padding: 0 1; background: $panel; }
    FunctionDiffScreen #fdiff-view { height: 1fr; }
    """
    BINDINGS = [
        BACK,
        Binding("u", "toggle_unified", "unified/side"),
        Binding("w", "toggle_mode", "wasm/C"),
        Binding("n", "next_change(1)", "next change"),
        Binding("N,p", "next_change(-1)", "prev change", show=False),
        Binding("o", "open", "detail"),
        HISTORY,
    ]

    def __init__(self, from_version: int, from_index: int, to_version: int, to_index: int) -> None:
        super().__init__()
        self.pair = DiffPair(from_version, from_index, to_version, to_index)
        self.diff: dict | None = None
        self.unified = False
        self.mode = WASM
        self._gen = 0

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="fdiff-status")
        yield FunctionDiffView(id="fdiff-view")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#fdiff-view").focus()

    _styled_as: tuple | None = None  # the styles' inputs when it was closed (kept screen)

    def swap(self, from_version: int, from_index: int, to_version: int, to_index: int) -> None:
        """Another pair on this (kept, closed) screen, as a new screen of it would start
        (side by side, Raw WASM); the last one's late answer is dropped (``_gen``). Two short
        bodies of prepared versions are compared here, before it is shown (its first frame
        has the diff: one layout and render); else the worker compares them on its resume."""
        self.pair = pair = DiffPair(from_version, from_index, to_version, to_index)
        self.diff = None
        self.unified, self.mode = False, WASM
        self._gen += 1
        self.query_one("#title", TitleBar).show("")
        self.query_one("#fdiff-status", Static).update(Text("comparing…", style="italic"))
        view = self.query_one("#fdiff-view", FunctionDiffView)
        view.changes = []
        view.set_lines(0, lambda i: Text(""), 0)
        view.focus()
        try:
            diff = _load(self.kb.db_path, _short_diff_of, pair)
        except Exception:  # the worker says what it is
            diff = None
        if diff is None:
            self.seen_token = None  # resumed: refresh_from_kb compares them on a worker
            return
        self._gen += 1
        self._loaded(self._gen, diff, None)
        self.seen_token = self.kb.kb_token  # read now: not again when resumed

    def on_screen_suspend(self) -> None:
        if self not in self.app.screen_stack:  # closed (the kept one is not unmounted)
            self._styled_as = style_inputs(self.app)

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown again with nothing its styles depend on changed while it was closed: not
        restyled by Textual's handler (after this one)."""
        if self._styled_as is not None and self._styled_as == style_inputs(self.app):
            event.refresh_styles = False
        self._styled_as = None

    def reload(self) -> None:
        self._gen += 1
        self.query_one("#fdiff-status", Static).update(Text("comparing…", style="italic"))
        self._fetch(self._gen)

    @work(thread=True, group="fdiff")
    def _fetch(self, gen: int) -> None:
        from kbtool.services import code as code_service

        try:
            diff, error = _load(self.kb.db_path, code_service.function_diff_at, *self.pair), None
        except KBError as exc:
            diff, error = None, str(exc)
        except Exception as exc:
            diff, error = None, f"cannot compare: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._loaded, gen, diff, error)

    def _loaded(self, gen: int, diff: dict | None, error: str | None) -> None:
        if gen != self._gen:
            return
        if error is not None:
            self.diff = None
            self.query_one("#title", TitleBar).show("function diff")
            self.query_one("#fdiff-status", Static).update(lit(error, "bold red"))
            return
        self.diff = diff
        self._show()
        self.call_after_refresh(heap.settle)

    def _show(self) -> None:
        d = self.diff
        if d is None:
            return
        a, b = d["from"], d["to"]
        self.query_one("#title", TitleBar).show(
            name_text(b["name"] or a["name"], b["provenance"], bold=True),
            Text(
                f"  v{a['version_id']} #{a['func_index']} → v{b['version_id']} #{b['func_index']}"
            ),
            Text(
                f"  {'C' if self.mode == C else 'Raw WASM'}"
                f"{'' if self.mode == C else (' · unified' if self.unified else ' · side by side')}",
                style="bold reverse",
            ),
        )
        status = diff_summary_text(d["summary"])
        status.append("   n: next change · u: unified · w: wasm/C", style="dim")
        self.query_one("#fdiff-status", Static).update(status)
        view = self.query_one("#fdiff-view", FunctionDiffView)
        if self.mode == C:
            view.show_c_diff(d["c_diff"])
        else:
            view.show_rows(d["rows"], unified=self.unified, width=self.size.width)

    def action_toggle_unified(self) -> None:
        self.unified = not self.unified
        self._show()

    def action_toggle_mode(self) -> None:
        self.mode = WASM if self.mode == C else C
        self._show()

    def action_next_change(self, step: int) -> None:
        if not self.query_one("#fdiff-view", FunctionDiffView).next_change(step):
            self.notify("no changes", timeout=2)

    def on_resize(self) -> None:
        if self.diff is not None and self.mode == WASM and not self.unified:
            self._show()

    def current_function(self) -> FunctionRef | None:
        if self.diff is not None:
            b = self.diff["to"]
            return FunctionRef(b["version_id"], b["func_index"], b["stable_id"], b["name"])
        try:  # no code to compare (e.g. bytes not stored): the function itself still is
            fn = queries.get_function(self.kb.conn, self.pair.to_version, self.pair.to_index)
        except KBError:
            return None
        return FunctionRef(self.pair.to_version, self.pair.to_index, fn["stable_id"], fn["name"])


def _short_diff_of(conn, pair: DiffPair) -> dict | None:
    """The pair's diff when both bodies have at most :data:`AT_ONCE_INSTRUCTIONS` and both
    versions are prepared (read on the UI thread: a few ms); None for any other."""
    code_service = sys.modules.get("kbtool.services.code")
    if code_service is None:
        return None
    for vid, idx in ((pair.from_version, pair.from_index), (pair.to_version, pair.to_index)):
        if not code_service.is_cached(conn, vid):
            return None
        n = code_service.body_instructions(conn, vid, idx)
        if n is None or n > AT_ONCE_INSTRUCTIONS:
            return None
    return code_service.function_diff_at(conn, *pair)


def open_function_diff(
    app, from_version: int, from_index: int, to_version: int, to_index: int
) -> FunctionDiffScreen:
    """Push one function's diff. The app keeps one function diff screen (installed as
    :data:`KEPT`), shown again with another pair's content: not composed, mounted and styled
    again (issue 30). While it is open a new one is pushed over it."""
    return push_kept(app, KEPT, FunctionDiffScreen, from_version, from_index, to_version, to_index)
