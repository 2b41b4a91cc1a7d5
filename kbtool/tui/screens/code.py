"""Code: one function's raw wasm, lifted C or cleaned C (``kbtool deep``); and one function's diff across two releases
(:mod:`kbtool.tui.screens.code_diff`, re-exported here).

Both views draw with Textual's line API (:class:`LinesView`): only the visible lines are
highlighted (and cached), so a 10,000-instruction function scrolls as fast as a short one.
The code is fetched on a worker thread with its own read-only connection
(:mod:`kbtool.services.code`, which keeps prepared modules in an LRU). Every string from
the binary is shown literally (:func:`kbtool.render.code.wasm_line` escapes controls).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import OptionList, Static

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.render.code import WASM, C
from kbtool.render.disasm import head_lines
from kbtool.render.text import lit
from kbtool.services import heap
from kbtool.textutil import printable
from kbtool.tui.screens.base import BACK, HISTORY, RENAME, FunctionRef, KbScreen, push_kept
from kbtool.tui.screens.base import style_inputs as _style_inputs
from kbtool.tui.screens.code_diff import DiffPair, FunctionDiffScreen
from kbtool.tui.screens.code_paging import PagedDisassembly
from kbtool.tui.screens.code_paging import read_ro as _load
from kbtool.tui.screens.knowledge import KnowledgeEdits
from kbtool.tui.widgets.code_view import CodeView, code_width, keep_split, split_code
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lines_view import LinesView
from kbtool.tui.widgets.listing_pages import ListingPages
from kbtool.tui.widgets.lists import LinkList, TitleBar
from kbtool.tui.widgets.palette import name_text

__all__ = [
    "DiffPair",
    "CLEAN",
    "KEPT",
    "MODE_LABEL",
    "CodeScreen",
    "FunctionDiffScreen",
    "LinesView",
    "open_code",
]

CLEAN = "clean"  # the cleaned C of `kbtool deep` (queries.get_analysis)
PENDING = "pending"  # shown in the C view while a huge function's C is lifted
MODE_LABEL = {WASM: "Raw WASM", C: "C", CLEAN: "Cleaned C"}
MODE_CYCLE = {WASM: C, C: CLEAN, CLEAN: WASM}
AT_ONCE_INSTRUCTIONS = 400  # the kept screen reads a function this short before it is shown
KEPT = "kbtool-code"  # the name the app's kept code screen is installed under (open_code)


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


# ---------------------------------------------------------------- one function


class CodeScreen(PagedDisassembly, KnowledgeEdits, KbScreen):
    """One function's code: Raw WASM / C / Cleaned C (``w`` toggles wasm/C, ``v`` cycles all
    three), the deep understanding above it when present; callers and callees as links."""

    DEFAULT_CSS = """
    CodeScreen #code-body { height: 1fr; }
    CodeScreen #code-main { width: 1fr; }
    CodeScreen #code-view { height: 1fr; }
    CodeScreen #code-understanding { height: auto; max-height: 6; padding: 0 1;
        background: $boost; display: none; }
    CodeScreen #code-understanding.-shown { display: block; }
    CodeScreen #code-status { height: 1; padding: 0 1; background: $panel; }
    CodeScreen #code-links { width: 30; border-left: vkey $panel; }
    CodeScreen .links-label { height: 1; padding: 0 1; }
    CodeScreen LinkList { height: 1fr; border: none; padding: 0;
        text-wrap: nowrap; text-overflow: ellipsis; }
    App.-small CodeScreen #code-links { display: none; }
    """
    BINDINGS = [
        BACK,
        Binding("w", "toggle_mode", "wasm/C"),
        Binding("v", "cycle_mode", "wasm/C/cleaned"),
        Binding("enter", "follow", "follow call", key_display="⏎"),
        Binding("o", "links", "callers/callees"),
        HISTORY,
        RENAME,
        Binding("x", "xrefs", "xrefs", show=False),  # issue 26: what this line references
        *KnowledgeEdits.KNOWLEDGE_BINDINGS,  # issue 27: ; comment, n local, y prototype
    ]
    at_offset: int | None = None  # open the disassembly on this instruction (file offset)
    _at_line: int | None = None  # its line, found past a huge function's first screen
    _c_split: tuple[str, list[str], int] | None = None  # a huge C's text, lines, width
    _styled_as: tuple | None = None  # the styles' inputs when it was closed (kept screen)
    _then: int | None = None  # gen of a huge function answered before the push (its rest)
    _read_at_mount = False  # read by on_mount: KbScreen.on_mount's refresh_from_kb skipped

    def __init__(self, version_id: int, index: int, mode: str = C) -> None:
        super().__init__()
        self.version_id = version_id
        self.index = index
        self.mode = mode
        self.code: dict | None = None
        self.links: dict | None = None
        self.analysis: dict | None = None
        self.listing = None  # the disassembly's records (kbtool.services.code.listing)
        self._calls: dict[int, int] = {}
        self._gen = 0
        self._shown: tuple[int, str] | None = None
        self._lifting: int | None = None  # gen whose C is being lifted (a huge function)
        self._resting: int | None = None  # gen whose disassembly by pages is being set up
        self._pages: ListingPages | None = None  # a huge function's disassembly, by pages
        self._waits: set[threading.Event] = set()  # worker threads waiting for a frame
        self._gone = False  # unmounted (closed): no frame will come

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="code-status")
        with Horizontal(id="code-body"):
            with Vertical(id="code-main"):
                yield Static(id="code-understanding")
                yield CodeView(id="code-view")
            with Vertical(id="code-links"):
                yield Static(id="callers-label", classes="links-label")
                yield LinkList(id="callers")
                yield Static(id="callees-label", classes="links-label")
                yield LinkList(id="callees")
        yield DiffFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#code-view").focus()
        # a new screen (the first, a call followed): read now if bounded (not again just after)
        self._read_at_mount = self.seen_token is None and self._answer_at_once()

    def refresh_from_kb(self) -> None:
        if self._read_at_mount:  # KbScreen.on_mount's read, just made by on_mount
            self._read_at_mount = False
            return
        super().refresh_from_kb()

    def swap(self, version_id: int, index: int, mode: str = C) -> None:
        """Another function on this (kept, closed) screen: what the last one showed is
        cleared before the screen is shown again, and its workers' late answers dropped;
        :meth:`reload` reads the new one when the screen resumes (``seen_token``)."""
        self.version_id, self.index, self.mode = version_id, index, mode
        self.code = self.links = self.analysis = self.listing = None
        self.at_offset = self._at_line = self._c_split = None
        self._calls = {}
        self._gen += 1
        self._shown = self._lifting = self._resting = self._pages = self._then = None
        self.query_one("#title", TitleBar).show(Text(f"v{version_id} #{index}"))
        self.query_one("#code-status", Static).update(Text("loading…", style="italic"))
        self.query_one("#code-understanding", Static).remove_class("-shown")
        view = self.query_one("#code-view", CodeView)
        view.set_lines(0, lambda i: Text(""), 0)
        for key in ("callers", "callees"):
            self.query_one(f"#{key}-label", Static).update(Text(f"{key} (…)", style="bold"))
            self.query_one(f"#{key}", LinkList).clear_options()
        view.focus()
        if not self._answer_at_once():
            self.seen_token = None  # resumed: refresh_from_kb reads it on a worker

    def _answer_at_once(self) -> bool:
        """A short function of a prepared version, read here on the UI thread before the
        kept screen is shown again: its first frame has the code (no "loading…" frame: one
        layout and render instead of two; the worker's read held the same interpreter lock).
        So is a huge one's first screen (its C if held or kept on disk): its links, its C if
        not kept, the rest by pages in Raw WASM come after that frame (:meth:`_then_more`).
        Anything else (not prepared, long, an import, an error): False, the worker reads it."""
        try:
            result = _load(self.kb.db_path, _short_code_of, self.version_id, self.index)
        except Exception:  # the worker says what it is
            return False
        if result is None:
            return False
        self._gen += 1
        self._loaded(self._gen, result, None)
        self.seen_token = self.kb.kb_token  # read now: not again when resumed
        if result[0].get("partial"):  # a huge one's links (and more) after its first frame
            self._then = self._gen
        return True

    def on_screen_suspend(self) -> None:
        """Closed (the kept screen is not unmounted, see :func:`open_code`): the worker
        threads waiting for a frame stop waiting (``_after_paint``). Covered by another
        screen, it is still open: they wait for its next frame as before."""
        if self not in self.app.screen_stack:
            self._styled_as = _style_inputs(self.app)
            for painted in list(self._waits):
                painted.set()

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown again: Textual's handler (after this one) restyles every widget of a
        resumed screen (~20 % of a warm open's CPU on the kept screen). Nothing its styles
        depend on changed while it was closed (the theme and CSS, the app's classes): its
        styles are as they were, not computed again."""
        if self._styled_as is not None and self._styled_as == _style_inputs(self.app):
            event.refresh_styles = False
        self._styled_as = None
        gen, self._then = self._then, None  # answered before the push: the rest after its frame
        if gen is not None and gen == self._gen:
            self._then_more(gen, self.version_id, self.index)

    def reload(self) -> None:
        self._gen += 1
        self._pages = None
        self.query_one("#code-status", Static).update(Text("loading…", style="italic"))
        self._fetch(self._gen, self.version_id, self.index)

    @work(thread=True, group="code")
    def _fetch(self, gen: int, version_id: int, index: int) -> None:
        """The code on a worker thread, never the UI's: a progress line says what runs (the
        version's first preparation, a huge body). A huge function shows its first
        ``FIRST_SCREEN`` instructions at once (in the C view too, labelled, while its C is
        lifted), then its C, then the rest of its disassembly. When its C is kept on disk
        (:mod:`kbtool.services.code_kept_c`) the first answer has it: the C view is one
        frame (split and measured in ``_show`` on the UI thread: done on this worker, it
        cost ~25 ms more CPU in the benchmark than the same work there)."""

        def say(text: str) -> None:
            self.app.call_from_thread(self._progress, gen, text)

        def both(conn, vid, idx):
            from kbtool.services import code as code_service

            return _code_of(code_service, conn, vid, idx, say)

        try:
            result, error = _load(self.kb.db_path, both, version_id, index), None
        except KBError as exc:
            result, error = None, str(exc)
        except Exception as exc:  # never take the app down for one function
            result, error = None, f"cannot show this function: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._loaded, gen, result, error)
        if result is None or not result[0].get("partial"):
            return
        self._after_first(gen, version_id, index, result[1] is None)

    @work(thread=True, group="code")
    def _then_more(self, gen: int, version_id: int, index: int) -> None:
        """:meth:`_fetch`'s part after a huge function's first frame (read before the push)."""
        self._after_first(gen, version_id, index, True)

    def _after_first(self, gen: int, version_id: int, index: int, links: bool) -> None:
        """On a worker thread, a huge function's first screen shown: its C or the rest of
        its disassembly, then (``links``: not read with it) its callers and callees."""
        # the first screen on the terminal before the lift and the links compete with its
        # paint for the interpreter (a 200,000-instruction lift held it for a second)
        if not self._after_paint():
            return
        self.app.call_from_thread(self._more, gen)  # the C or the rest, on their own workers
        # callers/callees just after the code; after the C when it is being lifted (read
        # meanwhile, they held the GIL the lift needs: ~45 ms the first time per version)
        if links and self._current(gen) and self._lifting != gen:
            self._fetch_links(gen, version_id, index)

    def _fetch_links(self, gen: int, version_id: int, index: int) -> None:
        """A huge function's callers and callees (on the calling worker thread)."""
        from kbtool.services import code as code_service

        try:
            links = _load(self.kb.db_path, code_service.neighbours, version_id, index)
        except Exception:
            links = {"callers": [], "callees": []}
        self.app.call_from_thread(self._links_loaded, gen, links)

    def _after_paint(self, timeout: float = 2.0) -> bool:
        """On a worker thread: wait for the next frame (up to ``timeout`` s), or until the
        screen is unmounted. A closed screen's refresh never comes, and the waiting thread
        held the screen (its frames, beyond the collector's sight) for the whole timeout: the
        freeze's collection at its close found it alive (issue 30). Still on screen?"""
        painted = threading.Event()
        self._waits.add(painted)
        try:
            if self._gone:  # unmounted before the event was seen by on_unmount
                return False
            self.app.call_from_thread(self.call_after_refresh, painted.set)
            painted.wait(timeout)
        finally:
            self._waits.discard(painted)
        return not self._gone and self in self.app.screen_stack

    def on_unmount(self) -> None:
        """Closed: the worker threads waiting for a frame stop waiting (``_after_paint``)."""
        self._gone = True
        for painted in list(self._waits):
            painted.set()

    def _current(self, gen: int) -> bool:
        """Whether a worker's answer for ``gen`` is still wanted (same function, on screen).
        A screen popped is off the stack at once, while its widgets are still being removed
        (it is attached a while longer, its links' labels gone: an answer then crashed)."""
        return gen == self._gen and self.is_attached and self in self.app.screen_stack

    def _more(self, gen: int | None = None) -> None:
        """What a huge function's view still lacks, made when it is shown: its C in the C
        view, the rest of its disassembly by pages in the Raw WASM view (reading one needs
        none of the other)."""
        gen = self._gen if gen is None else gen
        d = self.code
        if d is None or not self._current(gen) or not d.get("partial"):
            return
        if self.mode == C and d.get("c_pending") and self._lifting != gen:
            self._lifting = gen
            self._fetch_c(gen, self.version_id, self.index)
        elif self.mode == WASM and self._resting != gen:
            self._resting = gen
            self._fetch_rest(gen, self.version_id, self.index, self.at_offset)

    @work(thread=True, group="code-c")
    def _fetch_c(self, gen: int, version_id: int, index: int) -> None:
        from kbtool.services import code as code_service

        try:
            c = _load(self.kb.db_path, code_service.lifted_c, version_id, index)
        except Exception as exc:  # the disassembly stays; the status says why
            c = ("", True, f"cannot lift: {type(exc).__name__}: {exc}")
        lines = _lines(c[0])  # split and measured here, not on the UI thread (50,000 lines)
        width = code_width(lines, c[0])
        keep_split(c[0], lines, width)  # shown again (the screen reopened): not split again
        self.app.call_from_thread(self._c_loaded, gen, c, (c[0], lines, width))
        if self.links is None and self._current(gen):
            # after the C's first frame: read meanwhile (a huge body's ref.func scan, ~45 ms)
            # they held the GIL that frame needed
            if self._after_paint() and self.links is None and self._current(gen):
                self._fetch_links(gen, version_id, index)

    def _c_loaded(
        self, gen: int, c: tuple[str, bool, str | None], split: tuple[str, list[str], int]
    ) -> None:
        """A huge function's C, after the first screen of its disassembly: it replaces the
        disassembly in the C view (from its first line)."""
        if gen != self._gen or self.code is None:
            return
        self._c_split = split
        self.code["lifted_c"], self.code["truncated"], self.code["reason"] = c
        self.code.pop("c_pending", None)
        if self.mode != WASM:
            self._show()
        self.call_after_refresh(heap.settle)

    def _progress(self, gen: int, text: str) -> None:
        if gen == self._gen and self.code is None:  # still waiting for the first screen
            self.query_one("#code-status", Static).update(Text(text, style="italic"))

    def _loaded(self, gen: int, result, error: str | None) -> None:
        if gen != self._gen:
            return
        if error is not None:
            self.code = None
            self.query_one("#title", TitleBar).show("code")
            self.query_one("#code-status", Static).update(lit(error, "bold red"))
            self.query_one("#code-view", LinesView).set_lines(0, lambda i: Text(""), 0)
            return
        self.code, self.links, self.analysis, self.listing = result
        self._calls = {line - 1: idx for line, idx in self.code.get("call_lines", [])}
        self._show_links()
        self._show()
        self.refresh_bindings()  # rename/history need the function just loaded
        self.call_after_refresh(heap.settle)  # its listing and C stay in the code caches

    def _show(self) -> None:
        d = self.code
        if d is None:
            return
        # the name gets the title bar to itself: whole up to ~40 characters at 80 columns
        self.query_one("#title", TitleBar).show(
            Text(f"v{self.version_id} #{self.index}"),
            name_text(d["name"], d["provenance"], bold=True),
        )
        self._show_understanding()
        a = self.analysis
        hint, width = False, None
        if self.mode == CLEAN and a and a.get("clean_c"):
            lines = _lines(a["clean_c"])
        elif self.mode == CLEAN:
            hint = True
            lines = [
                "No cleaned C for this function yet. Run:",
                "",
                f"    kbtool deep {self.version_id} -f {self.index}",
            ]
        elif self.mode == C and self._c_split is not None and self._c_split[0] is d["lifted_c"]:
            lines, width = self._c_split[1], self._c_split[2]  # split on the lifting worker
        elif self.mode == C:
            lines, width = split_code(d["lifted_c"])  # kept split: a huge C shown again
        else:
            lines = _lines(d["mnemonics"])
        mode = C if self.mode == CLEAN else self.mode
        shown = (self.index, self.mode)
        if self.mode == C and d.get("c_pending"):  # a huge function: its disassembly meanwhile
            lines, mode, shown = _lines(d["mnemonics"]), WASM, (self.index, PENDING)
            width = None
        pages = self._pages if self.mode == WASM else None  # a huge function, by pages
        view = self.query_one("#code-view", CodeView)
        keep = view.cursor if self._shown == shown else 0  # a live refresh
        if self.at_offset is not None and mode == WASM and not hint:  # from the xrefs screen
            found = self._line_at(self.at_offset, None)
            if found is not None or not d.get("partial") or pages is not None:
                keep, self.at_offset = keep if found is None else found, None
        if pages is not None and self._at_line is not None:  # past the first screen
            keep, self._at_line = self._at_line, None
        self._shown = shown
        if pages is not None:
            view.show_pages(pages, cursor=keep)
        else:
            view.show_code(lines, mode, calls=self._calls, hint=hint, cursor=keep, width=width)
        self._show_status()
        self.call_after_refresh(self._show_status)  # the view's width is known after layout

    def _line_at(self, offset: int, default: int | None) -> int | None:
        """The listing line of the instruction at file ``offset`` (from the records)."""
        rec = self.listing
        if rec is None:
            return default
        head = len(head_lines(rec))
        return next((head + k for k, ins in enumerate(rec.instrs) if ins.offset == offset), default)

    def _cursor_line(self) -> str:
        """The text of the line under the cursor (a huge function's from its page)."""
        if self._pages is not None and self.mode == WASM:
            return self._pages.line(self.query_one("#code-view", CodeView).cursor) or ""
        return super()._cursor_line()

    def _shown_mode(self) -> str:
        """What the view shows: the mode, but Raw WASM while a huge function's C is lifted."""
        d = self.code
        return WASM if self.mode == C and d is not None and d.get("c_pending") else self.mode

    def cursor_instr(self):
        """The disassembly record of the line under the cursor (raw wasm), or None."""
        rec = self.listing
        if rec is None or self._shown_mode() != WASM:
            return None
        cursor = self.query_one("#code-view", CodeView).cursor
        if self._pages is not None and self.mode == WASM:
            return self._pages.instr(cursor)
        k = cursor - len(head_lines(rec))
        return rec.instrs[k] if 0 <= k < len(rec.instrs) else None

    def _show_status(self) -> None:
        """Mode, type, stable_id, what is missing; ``←→ scroll`` when lines are cut."""
        d = self.code
        if d is None:
            return
        view = self.query_one("#code-view", LinesView)
        status = Text(no_wrap=True, overflow="ellipsis")
        pending = self.mode == C and d.get("c_pending")
        status.append(f" {MODE_LABEL[WASM if pending else self.mode]} ", style="bold reverse")
        if pending:
            status.append(
                f"  lifting C… showing the first {d['mnemonics'].count(chr(10)):,} lines of"
                f" the disassembly ({d.get('instructions', 0):,} instructions) meanwhile",
                style="bold yellow",
            )
        status.append("  ")
        status.append_text(lit(d["type"], "green"))
        if self.mode == C and d.get("truncated"):
            status.append_text(lit(f"  not lifted: {d.get('reason')}", "bold yellow"))
        if self.mode == WASM and self._pages is not None:
            status.append(
                f"  {self._pages.total:,} lines ({d.get('instructions', 0):,} instructions),"
                " read by pages as you scroll",
                style="dim",
            )
        elif self.mode == WASM and d.get("partial"):
            status.append(
                f"  first {d['mnemonics'].count(chr(10)):,} lines of"
                f" {d.get('instructions', 0):,} instructions: the rest is loading…",
                style="bold yellow",
            )
        if view.wider_than_view:
            status.append("  ←→ scroll", style="bold")
        status.append(f"  stable_id {d['stable_id']}", style="dim")
        status.append("  w: Raw WASM / C  v: + Cleaned C", style="dim")
        box = self.query_one("#code-status", Static)
        if box.content != status:  # called again after each layout: mostly the same text
            box.update(status, layout=False)  # one line, the screen's width: no new layout

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_status)

    def _show_understanding(self) -> None:
        """The deep understanding (status, confidence) above the code, when there is one."""
        box = self.query_one("#code-understanding", Static)
        a = self.analysis
        if not a or not a.get("understanding"):
            box.remove_class("-shown")
            box.update("")
            return
        conf = a.get("confidence")
        box.update(
            Text.assemble(
                lit(a["understanding"]),
                (f"\n{a.get('status') or '?'}", "dim"),
                (f" · confidence {conf:.2f}" if isinstance(conf, (int, float)) else "", "dim"),
                lit(f" · {a.get('backend') or ''}", "dim"),
            )
        )
        box.add_class("-shown")

    def _links_loaded(self, gen: int, links: dict) -> None:
        if self._current(gen) and self.code is not None:  # not once the screen is closed
            self.links = links
            self._show_links()

    def _show_links(self) -> None:
        pending = self.links is None  # a huge function's: they come just after its code
        links = self.links or {"callers": [], "callees": []}
        for key in ("callers", "callees"):
            items = links[key]
            self.query_one(f"#{key}-label", Static).update(
                Text(f"{key} (…)" if pending else f"{key} ({len(items)})", style="bold")
            )
            self.query_one(f"#{key}", LinkList).set_links(
                ((f"{self.version_id}:{c['index']}", _link(c)) for c in items),
                "loading…" if pending else f"no {key}",
            )

    # ------------------------------------------------------------ actions

    def action_toggle_mode(self) -> None:
        self.mode = WASM if self.mode == C else C
        self._show()
        self._more()

    def action_cycle_mode(self) -> None:
        self.mode = MODE_CYCLE[self.mode]
        self._show()
        self._more()

    def action_follow(self) -> None:
        view = self.query_one("#code-view", LinesView)
        if not view.has_focus:
            return
        if self._shown_mode() != WASM:
            target = None
        elif self._pages is not None:
            target = self._pages.callee(view.cursor)
        else:
            target = self._calls.get(view.cursor)
        if target is None:
            self.notify(
                "no call on this line (w: Raw WASM, then ⏎ on a call; o: the callees)", timeout=3
            )
            return
        open_code(self.app, self.version_id, target, self.mode)

    def action_xrefs(self) -> None:
        """``x``: the xrefs of what the line under the cursor references (a call, a data
        label, a global, a string), on a worker thread."""
        view = self.query_one("#code-view", LinesView)
        d = self.code
        if d is None or not view.has_focus:
            return
        if self.mode == CLEAN and self.analysis and self.analysis.get("clean_c"):
            text, mode = _lines(self.analysis["clean_c"]), C
        else:
            mode = self._shown_mode()
            text = split_code(d["lifted_c"])[0] if mode == C else _lines(d["mnemonics"])
        line = text[view.cursor] if view.cursor < len(text) else ""
        if mode == WASM and self._pages is not None:
            line = self._pages.line(view.cursor) or ""
        ins = self.cursor_instr() if mode == WASM else None
        self._xrefs_of(self.version_id, line, "wasm" if mode == WASM else "c", ins)

    @work(thread=True, group="xrefs", exclusive=True)
    def _xrefs_of(self, version_id: int, line: str, mode: str, ins) -> None:
        """Raw wasm: the targets of the instruction's record; C: of the line's text."""
        from kbtool.services import code as code_service
        from kbtool.services import data as data_svc

        try:
            if mode == "wasm":
                targets = (
                    _load(self.kb.db_path, code_service.instr_targets, version_id, ins)
                    if ins is not None
                    else []
                )
            else:
                targets = data_svc.line_targets(line, mode)
            found = (
                _load(self.kb.db_path, data_svc.first_xrefs, version_id, targets)
                if targets
                else None
            )
            error = (
                None
                if found
                else "nothing on this line to cross-reference (a call, a global, a data label or a string)"
            )
        except KBError as exc:
            found, error = None, str(exc)
        self.app.call_from_thread(self._xrefs_found, found, error)

    def _xrefs_found(self, found, error: str | None) -> None:
        if found is None:
            self.notify(printable(error or "no xrefs"), timeout=4, markup=False)
            return
        from kbtool.tui.screens.xrefs import XrefsScreen

        self.app.push_screen(XrefsScreen(self.version_id, found[0], found[1]))

    def action_links(self) -> None:
        callees = self.query_one("#callees", LinkList)
        if callees.has_focus:
            self.query_one("#callers", LinkList).focus()
        elif self.query_one("#callers", LinkList).has_focus:
            self.query_one("#code-view").focus()
        else:
            callees.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id
        if oid:
            vid, idx = (int(x) for x in oid.split(":"))
            open_code(self.app, vid, idx, self.mode)

    def current_function(self) -> FunctionRef | None:
        if self.code is None:
            return None
        return FunctionRef(self.version_id, self.index, self.code["stable_id"], self.code["name"])

    def after_rename(self, ref: FunctionRef) -> None:
        self.refresh_from_kb()


def _code_of(code_service, conn, vid: int, idx: int, say: Callable[[str], None]) -> tuple:
    """One function's code as the screen shows it: (code, callers and callees or None for
    a huge function's (read just after), the deep analysis, the disassembly's records)."""
    if not code_service.is_cached(conn, vid):
        say(f"preparing version {vid} for code (once per version: module, names, data labels)…")
    n = code_service.body_instructions(conn, vid, idx) or 0
    huge = n > code_service.HUGE_INSTRUCTIONS
    if huge:
        say(f"disassembling the first {code_service.FIRST_SCREEN:,} of {n:,} instructions…")
    d, records = code_service.function_code(
        conn, vid, idx, max_lines=code_service.FIRST_SCREEN if huge else None, lift=not huge
    )
    return (
        dict(d),
        None if huge else code_service.neighbours(conn, vid, idx),  # huge: just after
        queries.get_analysis(conn, d["stable_id"]),
        records,
    )


def _short_code_of(conn, vid: int, idx: int) -> tuple | None:
    """:func:`_code_of` of a prepared version on the UI thread when bounded (a few ms, ~30 for
    a huge one): a function of at most :data:`AT_ONCE_INSTRUCTIONS`, a huge one (its first
    ``FIRST_SCREEN`` instructions; its C only if held or kept on disk, never lifted here) or
    one whose whole answer is held; None for any other (the worker reads it: a lift)."""
    code_service = sys.modules.get("kbtool.services.code")
    if code_service is None or not code_service.is_cached(conn, vid):
        return None
    n = code_service.body_instructions(conn, vid, idx)
    if n is None or (
        AT_ONCE_INSTRUCTIONS < n <= code_service.HUGE_INSTRUCTIONS
        and not code_service.answer_held(conn, vid, idx)
    ):
        return None
    return _code_of(code_service, conn, vid, idx, lambda text: None)


def open_code(app, version_id: int, index: int, mode: str = C) -> CodeScreen:
    """Push one function's code. The app keeps one code screen (installed as :data:`KEPT`):
    shown again with another function's content, its widgets are not composed, mounted and
    styled again (Textual's build of the screen was most of a warm open's CPU, issue 30).
    While that screen is open (a call followed from it) a new one is pushed over it."""
    return push_kept(app, KEPT, CodeScreen, version_id, index, mode)


def _link(entry: dict) -> Text:
    t = Text()
    if entry.get("imported"):
        t.append_text(lit(entry.get("name") or "?", "italic"))
        t.append(" import", style="dim")
        return t
    t.append(f"#{entry['index']} ", style="dim")
    t.append_text(name_text(entry.get("name"), entry.get("provenance")))
    return t
