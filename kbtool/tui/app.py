"""``kbtool tui``: the Textual app. Thin: screen navigation, the KB connection, live refresh, rename.

Reads go through :mod:`kbtool.kb.queries` (and :func:`kbtool.services.diff.report.get_diff`) on one
read-only connection (``open_ro``); the only write, ``n`` rename, goes through the gate
(:func:`kbtool.kb.gate.upsert_symbol`) on a short-lived ``open_rw`` connection, and does
not exist with ``--read-only``.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.events import Event, InputEvent, Resize
from textual.widgets import Input

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError, UnknownVersionError
from kbtool.kb.queries.functions import HeatmapCells
from kbtool.services import heap
from kbtool.textutil import clip, printable
from kbtool.tui.jump import FunctionJumpProvider
from kbtool.tui.screens.base import FunctionRef, KbScreen, unshown_screens
from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.screens.versions import VersionsScreen
from kbtool.tui.widgets.heatmap import BUCKETS
from kbtool.tui.widgets.palette import PROVENANCES
from kbtool.tui.workers import ReleasingWorkers, running_on

# The screens a start does not show (diff, detail, history, search, feed, rename) and the
# gate are imported when first opened: the diff screen alone pulls the diff services and the
# static analysis (~25 ms of a ~250 ms start on ffmpeg's KB, issue 30).


def _loaded_screen(module: str, name: str) -> type | None:
    """A screen class if its module was imported (else no screen of it can be shown)."""
    mod = sys.modules.get(module)
    return getattr(mod, name, None) if mod is not None else None


def _is_screen(screen: object, module: str, name: str) -> bool:
    cls = _loaded_screen(module, name)
    return cls is not None and isinstance(screen, cls)


_DIFF = ("kbtool.tui.screens.diff", "DiffScreen")

_PREFETCH = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbtool-prefetch")


def _pause_collector() -> bool:
    """Pause the cyclic collector if it runs (True: the caller turns it back on)."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def _heatmap_cells(db_path: Path, version_id: int) -> HeatmapCells:
    conn = open_ro(db_path)
    try:
        return queries.heatmap_cells(conn, version_id, PROVENANCES, BUCKETS)
    finally:
        conn.close()


def _prepare_code(db_path: Path, version_id: int) -> None:
    """Prepare a version for the code views (module, names, data labels), once per KB state."""
    from kbtool.services import code as code_service

    conn = open_ro(db_path)
    try:
        if not code_service.is_cached(conn, version_id):
            code_service.code_module(conn, version_id)
    except Exception:  # the code screen says why when it is opened
        pass
    finally:
        conn.close()


def _warm_code(db_path: Path, version_id: int) -> None:
    """What a prepared version's first code open builds (``code.warm_views``: the struct
    layouts, the neighbours' indexes; ~60-70 ms CPU on ffmpeg), built at an idle moment."""
    from kbtool.services import code as code_service

    conn = open_ro(db_path)
    try:
        code_service.warm_views(conn, version_id)
    except Exception:  # the code screen says why when it is opened
        pass
    finally:
        conn.close()


def _import_code_service() -> None:
    """Import what a version's code preparation runs first: the code service and the wasm
    package (~100 modules, ~100 ms CPU), which the start leaves out (it reads no module)."""
    import kbtool.services.code  # noqa: F401


class _Prefetch(NamedTuple):
    """The heatmap cells of ``version_id`` being fetched on a thread at start-up."""

    version_id: int
    cells: Future[HeatmapCells]


MIN_SIZE = (80, 24)
POLL_SECONDS = 1.5
IDLE_CHECK_SECONDS = 0.25  # how often an idle TUI looks for a due full collection
CLOSING_CHECK_SECONDS = 0.05  # a freeze waits for a popped screen's removal: checked this often
CLOSING_WAITS = 40  # ... at most this many times (2 s), then tried all the same
# the collector's first threshold while a screen that closes is open, times Python's: see
# KbApp.young_threshold
YOUNG_FACTOR = 10
THEMES = {"dark": "textual-dark", "light": "textual-light"}


def _resident(screen: object) -> bool:
    """A screen that stays open (the versions, a heatmap): frozen with what it holds."""
    return isinstance(screen, (VersionsScreen, HeatmapScreen))


class KbApp(ReleasingWorkers, App[None]):
    """Browse a KB: versions, heatmap, diff, search, detail, history."""

    CSS_PATH = "kbtool.tcss"
    TITLE = "kbtool"
    COMMANDS = App.COMMANDS | {FunctionJumpProvider}
    COMMAND_PALETTE_BINDING = "ctrl+p"
    BINDINGS = [
        Binding("slash", "search", "search", key_display="/"),
        Binding("d", "diff", "diff"),
        Binding("v", "versions", "versions"),
        Binding("a", "feed", "agents feed", show=False),
        Binding("S", "suggestions", "suggestions", show=False),  # issue 31: agent suggestions
        Binding("s", "data", "strings/globals", show=False),  # issue 26: the data screen
        Binding("T", "types", "types", show=False),  # issue 27: the KB's types (read-only)
        Binding("t", "toggle_theme", "theme", show=False),
        Binding(
            "question_mark", "toggle_keys", "keys", key_display="?", show=False
        ),  # in the title bar
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        version_id: int | None = None,
        theme: str = "dark",
        poll_seconds: float | None = POLL_SECONDS,
        start: str = "heatmap",
        blink: bool = True,
        collector_paused: bool = False,
    ) -> None:
        # The start up to the first frame makes long-lived objects (the widgets, the
        # heatmap's cells) and almost no garbage: with the long-lived policy on (kbtool tui,
        # heap.enable) the collector is paused until the first frame is drawn, then the
        # policy's first freeze takes them unwalked. ``collector_paused``: the caller paused
        # it (kbtool tui, for the imports) and leaves turning it back on to the app.
        self._start_paused = collector_paused or (heap.enabled() and _pause_collector())
        try:
            self._init(db_path, read_only, version_id, theme, poll_seconds, start, blink)
        except BaseException:
            self._resume_collector()
            raise

    def _init(
        self,
        db_path: str | os.PathLike[str],
        read_only: bool,
        version_id: int | None,
        theme: str,
        poll_seconds: float | None,
        start: str,
        blink: bool,
    ) -> None:
        super().__init__()
        self.db_path = Path(db_path)
        self.read_only = read_only
        # Opening here (not on mount) makes a missing KB, a file that is not a KB or an
        # older schema fail with one clear message before the terminal is taken over.
        self.conn = open_ro(self.db_path)
        if version_id is not None and not queries.version_exists(self.conn, version_id):
            self.conn.close()
            raise UnknownVersionError(f"unknown version id {version_id} (see `kbtool versions`)")
        self.version_id: int | None = version_id
        self.heatmap_cursor: dict[int, int] = {}  # version id -> function index under the cursor
        self.kb_token = queries.change_token(self.conn)
        self.poll_seconds = poll_seconds
        self.start = start
        # Starting on the heatmap: the versions screen underneath loads when first shown, and
        # the heatmap's cells are fetched on a thread (own read-only connection) while Textual
        # starts up, so the first paint does not wait for both one after the other.
        latest = queries.latest_version_id(self.conn)
        self.heatmap_first = start == "heatmap" and latest is not None
        self._prefetch: _Prefetch | None = None
        self.code_prefetch: Future[None] | None = None  # see prepare_code
        self._code_jobs: dict[int, Future[None]] = {}  # version id -> its last preparation
        # the code service imported on the prefetch thread at the first idle moment (see
        # collect_when_idle), then frozen with the rest: the first detail's preparation
        # does not import it while the detail is drawn
        self._code_imports: Future[None] | None = None
        self._code_imports_settled = latest is None  # nothing to prepare in an empty KB
        self._warmed: set[int] = set()  # versions whose first code open was built ahead
        if self.heatmap_first:
            vid = version_id or latest
            self._prefetch = _Prefetch(vid, _PREFETCH.submit(_heatmap_cells, self.db_path, vid))
        self.blink = blink  # text cursor blink (off in snapshot tests)
        self.last_input = time.monotonic()  # the last key or mouse event (heap's idle moment)
        self._due_seen = False  # a due collection already seen by collect_when_idle
        self._transient: weakref.WeakSet = weakref.WeakSet()  # screens opened that close
        self._stack_ids: set[int] = set()  # ids of the screens at the last screen change
        self._gc_young = gc.get_threshold()[0]  # the collector's first threshold, restored
        name = THEMES.get(theme, theme)
        if name not in self.available_themes:
            self.conn.close()
            raise ValueError(
                f"unknown theme {theme!r}; use dark, light or one of: "
                + ", ".join(sorted(self.available_themes))
            )
        self.theme = name

    def prepare_code(self, *version_ids: int) -> Future[None] | None:
        """Prepare versions for the code views on the prefetch thread, one after the other (a
        detail screen asks for its version once drawn, the diff screen for its pair: the code
        or the function diff is what one opens next), so the first code screen of a version
        does not wait for it; a version already queued is not queued again. The last job."""
        for vid in version_ids:
            job = self._code_jobs.get(vid)
            if job is None or job.done():
                job = self._code_jobs[vid] = _PREFETCH.submit(_prepare_code, self.db_path, vid)
            self.code_prefetch = job
        return self.code_prefetch

    def heatmap_cells(self, version_id: int) -> HeatmapCells:
        """``queries.heatmap_cells`` in the heatmap's code order, served once from the
        start-up prefetch when it matches."""
        pre, self._prefetch = self._prefetch, None
        if pre is not None and pre.version_id == version_id:
            try:
                return pre.cells.result()
            except Exception:
                pass  # fall back to the app's own connection
        return queries.heatmap_cells(self.conn, version_id, PROVENANCES, BUCKETS)

    # ------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> VersionsScreen:
        return VersionsScreen()

    def run(self, *args, **kwargs):  # type: ignore[override]
        """``kbtool tui``: the collector's long-lived policy (:mod:`kbtool.services.heap`) for
        this process, then Textual's loop (Pilot tests run the app without it)."""
        heap.enable()
        if not self._start_paused:
            self._start_paused = _pause_collector()
        try:
            return super().run(*args, **kwargs)
        finally:
            self._resume_collector()

    def _resume_collector(self) -> None:
        """The collector back on after the start (see ``__init__``): the first frame is
        drawn (or the app ended before it)."""
        if self._start_paused:
            self._start_paused = False
            gc.enable()

    def on_mount(self) -> None:
        if heap.enabled():  # a due full collection waits until no key for IDLE_SECONDS
            heap.defer_to_idle()
            heap.freeze_when(self.resident_only, self.closed_screens_gone)  # none that closes
            self.set_interval(IDLE_CHECK_SECONDS, self.collect_when_idle)
            self.screen_change_signal.subscribe(self, self._screen_changed, immediate=True)
        self.call_after_refresh(heap.settle)  # the heatmap's cells and the widgets: kept
        self.call_after_refresh(self._active)  # idle counts from the first frame, not before
        self.call_after_refresh(self._freeze)
        # the first frame is drawn (and what it made frozen: no young collection walks it)
        self.call_after_refresh(self._resume_collector)
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll_changes)
        self._size_class(self.size.width, self.size.height)
        if self.heatmap_first:
            self.open_heatmap(self.version_id or queries.latest_version_id(self.conn))

    def on_unmount(self) -> None:
        self._resume_collector()
        if heap.enabled():
            heap.defer_to_idle(False)
            heap.freeze_when(None)
            if self._gc_young:
                gc.set_threshold(self._gc_young, *gc.get_threshold()[1:])
        self.conn.close()

    async def on_event(self, event: Event) -> None:
        if isinstance(event, InputEvent):
            self._active()
        await super().on_event(event)

    def _active(self, *_: object) -> None:
        """A key, a mouse event or a screen opened or closed: not idle (collect_when_idle)."""
        self.last_input = time.monotonic()

    def _screen_changed(self, *_: object) -> None:
        """A screen opened or closed: not idle; back to the resident screens, the freeze a
        settle asked for meanwhile (what the closed screen left is collected first)."""
        self._active()
        # an installed screen (the kept code screen) is never removed on pop: not waited on
        self._transient.update(
            s for s in self.screen_stack if not _resident(s) and not self.is_screen_installed(s)
        )
        before, self._stack_ids = self._stack_ids, {id(s) for s in self.screen_stack}
        if before - self._stack_ids:  # a screen closed: waited on with tries of its own
            heap.closed()
        self.young_threshold()
        if heap.pending():
            self.call_after_refresh(self._freeze)

    def _freeze(self, retry: bool = True, waits: int = 0) -> None:
        """:func:`heap.freeze_pending`; once frozen, the closed screens still alive are
        frozen with the rest (held past heap.STUCK_TRIES tries): not waited on again.
        A screen popped is still being removed for a few frames: tried once it is (up to
        CLOSING_WAITS checks), so a try is not spent on a screen that is about to be freed."""
        if waits < CLOSING_WAITS and self._closing_screens():
            self.set_timer(CLOSING_CHECK_SECONDS, lambda: self._freeze(retry, waits + 1))
            return
        if heap.freeze_pending(retry):
            self._transient = weakref.WeakSet()

    def _closing_screens(self) -> bool:
        """A screen popped is still being removed (Textual has not closed it yet), or a
        thread work of it is still under way: that thread holds it beyond the collector's
        sight (``kbtool.tui.workers.running_on``), so a try then found it alive (issue 30)."""
        stack = self.screen_stack
        return any(not s._closed or running_on(s) for s in list(self._transient) if s not in stack)

    def resident_only(self) -> bool:
        """Only the screens that stay open are (the versions, a heatmap): freezing now
        keeps no widget that dies with a screen (:func:`heap.freeze_when`). A screen made
        and not shown yet counts as open: frozen before its push, it was never freed by the
        freeze's later collections, and every try after its close failed on it (issue 30)."""
        stack = self.screen_stack
        return all(_resident(s) for s in stack) and not unshown_screens(stack)

    def young_threshold(self) -> int:
        """The collector's first threshold: :data:`YOUNG_FACTOR` times Python's while a
        screen that closes is open, Python's again once only the resident ones are. While
        one is open, what a settle keeps (a diff report, the changelog's rows, a version
        prepared) waits for its freeze (:func:`heap.freeze_when`) in the young generations,
        and each full collection walks it with the screen's widgets (ffmpeg's diff screen:
        80,000-200,000 objects, 60-160 ms); full collections come after so many young ones,
        so they are that many times rarer (a closed screen's cycles are still freed: by
        :meth:`_freeze`'s collection, or the next young one). Only the first of the three is
        set: a version's preparation holds back the third and restores all three when done
        (``code_prepared._collector_paused``), so each idle check sets it again. The
        threshold now."""
        now = gc.get_threshold()
        if not (heap.enabled() and self._gc_young):  # Python's policy; 0: collector off
            return now[0]
        want = self._gc_young * (1 if self.resident_only() else YOUNG_FACTOR)
        if now[0] != want:
            gc.set_threshold(want, *now[1:])
        return want

    def closed_screens_gone(self) -> bool:
        """Every other screen ever opened is freed (not one still being unmounted)."""
        return not self._transient

    def collect_when_idle(self) -> bool:
        """Pay the collector's due full collection (:func:`heap.collect_due`, ~0.5 s on
        ffmpeg) once no key or mouse event came, no screen was opened or closed and no
        worker or preparation ran for ``heap.IDLE_SECONDS``. Collected?"""
        quiet = time.monotonic() - self.last_input
        self.young_threshold()
        if not self._code_imports_settled:
            self._import_when_idle(quiet)
        elif quiet >= heap.IDLE_SECONDS:
            self._warm_when_idle()
        if heap.pending() and quiet >= IDLE_CHECK_SECONDS:  # a settle on resident screens
            self._freeze(retry=quiet >= heap.IDLE_SECONDS)  # a closed one still held
        if not heap.due():
            self._due_seen = False
            return False
        if not self._due_seen:  # just became due (a preparation ended): quiet from now on
            self._due_seen = True
            self.last_input = time.monotonic()
        if time.monotonic() - self.last_input < heap.IDLE_SECONDS:
            return False
        if any(not w.is_finished for w in self.workers) or not (
            self.code_prefetch is None or self.code_prefetch.done()
        ):  # a screen's answer (a C lift, a diff) or a preparation is awaited: not idle
            self.last_input = time.monotonic()
            return False
        return heap.collect_due()

    def _warm_when_idle(self) -> None:
        """Once no key came for ``heap.IDLE_SECONDS`` and no preparation runs: what the first
        code open of each prepared version builds, built on the prefetch thread (one version
        per idle check). Done while a person reads, it no longer lands on that open (~60 ms
        CPU on ffmpeg); done with the preparation it landed on the screens drawn meanwhile."""
        if self.code_prefetch is not None and not self.code_prefetch.done():
            return
        for vid, job in self._code_jobs.items():
            if vid not in self._warmed and job.done():
                self._warmed.add(vid)
                self.code_prefetch = _PREFETCH.submit(_warm_code, self.db_path, vid)
                return

    def _import_when_idle(self, quiet: float) -> None:
        """Once no key came for ``heap.IDLE_SECONDS``: the code service imported on the
        prefetch thread (a code preparation already queued imports it itself); once
        imported, a settle freezes it with the resident screens' objects."""
        job = self._code_imports
        if job is None:
            if quiet >= heap.IDLE_SECONDS and (
                self.code_prefetch is None or self.code_prefetch.done()
            ):
                self._code_imports = _PREFETCH.submit(_import_code_service)
        elif job.done():
            self._code_imports_settled = True
            heap.settle(collect=False)

    def on_resize(self, event: Resize) -> None:
        self._size_class(event.size.width, event.size.height)

    def _size_class(self, width: int, height: int) -> None:
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        self.set_class(small, "-small")

    # ------------------------------------------------------------ live refresh

    def poll_changes(self) -> bool:
        """Refresh the current screen if the KB changed underneath (ingest, names). Cheap."""
        try:
            token = queries.change_token(self.conn)
        except Exception:
            return False
        if token == self.kb_token:
            return False
        self.kb_token = token
        screen = self.screen
        if isinstance(screen, KbScreen):
            screen.refresh_from_kb()
        return True

    # ------------------------------------------------------------ navigation

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A key that would lead to the screen already shown is hidden from the footer.
        if action == "diff" and _is_screen(self.screen, *_DIFF):
            return False
        if isinstance(self.focused, Input) and action in (
            "search",
            "diff",
            "versions",
            "quit",
            "feed",
            "toggle_theme",
            "toggle_keys",
            "data",
            "types",
        ):
            return False  # while typing, these letters are text (the footer says so)
        if action == "versions" and len(self.screen_stack) == 1:
            return False
        return True

    def action_versions(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_search(self) -> None:
        from kbtool.tui.screens.search import SearchScreen

        if isinstance(self.screen, SearchScreen):
            self.screen.query_one("#search-input").focus()
            return
        self.push_screen(SearchScreen())

    def action_diff(self) -> None:
        self.open_diff()

    def action_feed(self) -> None:
        from kbtool.tui.screens.feed import FeedScreen

        if not isinstance(self.screen, FeedScreen):
            self.push_screen(FeedScreen())

    def action_suggestions(self) -> None:
        from kbtool.tui.screens.suggestions import SuggestionsScreen

        vid = self.version_id or queries.latest_version_id(self.conn)
        if vid is not None and not isinstance(self.screen, SuggestionsScreen):
            self.push_screen(SuggestionsScreen(vid))

    def action_data(self) -> None:
        """The strings and globals of the version on screen (else the one picked last)."""
        from kbtool.tui.screens.data import DataScreen

        vid = getattr(self.screen, "version_id", None)
        vid = vid if isinstance(vid, int) else self.version_id
        if vid is not None and not isinstance(self.screen, DataScreen):
            self.push_screen(DataScreen(vid))

    def action_types(self) -> None:
        from kbtool.tui.screens.types import TypesScreen

        if not isinstance(self.screen, TypesScreen):
            self.push_screen(TypesScreen())

    def action_toggle_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def open_heatmap(self, version_id: int, index: int | None = None) -> None:
        self.push_screen(HeatmapScreen(version_id, index))

    def open_detail(self, version_id: int, index: int) -> None:
        from kbtool.tui.screens.detail import open_detail  # one kept screen (issue 30)

        open_detail(self, version_id, index)

    def open_history(self, stable_id: str) -> None:
        from kbtool.tui.screens.history import HistoryScreen

        self.push_screen(HistoryScreen(stable_id))

    def open_diff(self, from_version: int | None = None, to_version: int | None = None) -> None:
        from kbtool.tui.screens.diff import DiffScreen

        if isinstance(self.screen, DiffScreen):
            return
        self.push_screen(DiffScreen(from_version, to_version))

    # ------------------------------------------------------------ rename (the one write)

    def start_rename(self, ref: FunctionRef) -> None:
        if self.read_only:
            return
        from kbtool.tui.screens.rename import RenameScreen

        screen = self.screen

        def done(name: str | None) -> None:
            if name:
                self.write_name(ref, name, screen)

        self.push_screen(RenameScreen(ref), done)

    @work(thread=True, exclusive=True, group="rename")
    def write_name(self, ref: FunctionRef, name: str, screen: KbScreen | None = None) -> dict:
        """Write ``name`` as a locked human name through the gate, then toast the decision."""

        from kbtool.kb.gate import upsert_symbol

        try:
            conn = open_rw(self.db_path, create=False)
            try:
                decision = upsert_symbol(
                    conn,
                    ref.stable_id,
                    name,
                    provenance="human",
                    confidence=1.0,
                    actor="human:tui",
                    lock=True,
                    version_id=ref.version_id,
                    evidence={"source": "kbtool tui"},
                )
            finally:
                conn.close()
        except KBError as exc:
            decision = {"written": False, "reason": str(exc)}
        self.call_from_thread(self._renamed, ref, name, decision, screen)
        return decision

    def _renamed(
        self, ref: FunctionRef, name: str, decision: dict, screen: KbScreen | None
    ) -> None:
        old = printable(clip(ref.name or "unnamed", 40))
        new = printable(clip(name, 40))
        if decision["written"]:
            self.notify(
                f"{old} → {new}\nsaved as a human name (locked)",
                title="renamed",
                markup=False,
                timeout=4,
            )
        elif decision["reason"] == "no change":
            self.notify(
                f"{new} is already this function's locked human name", markup=False, timeout=4
            )
        else:
            self.notify(
                f"not renamed: {printable(decision['reason'])}",
                severity="error",
                markup=False,
                timeout=6,
            )
        self.kb_token = queries.change_token(self.conn)
        for s in self.screen_stack:
            if isinstance(s, KbScreen):
                s.seen_token = None  # everything below re-reads when resumed
        target = screen if screen is not None else self.screen
        if isinstance(target, KbScreen) and target is self.screen:
            after = getattr(target, "after_rename", None)
            if after is not None:
                after(ref)
            else:
                target.refresh_from_kb()
            target.seen_token = self.kb_token
