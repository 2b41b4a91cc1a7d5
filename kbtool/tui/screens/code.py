"""Code: one function's raw wasm, lifted C or cleaned C (``kbtool deep``); and one function's diff across two releases.

Both views draw with Textual's line API (:class:`LinesView`): only the visible lines are
highlighted (and cached), so a 10,000-instruction function scrolls as fast as a short one.
The code is fetched on a worker thread with its own read-only connection
(:mod:`kbtool.services.code`, which keeps prepared modules in an LRU). Every string from
the binary is shown literally (:func:`kbtool.render.code.wasm_line` escapes controls).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, OptionList, Static

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import KBError
from kbtool.render.code import DIFF_STYLE, WASM, C, diff_summary_text, highlight_line, wasm_line
from kbtool.render.text import lit
from kbtool.textutil import printable
from kbtool.tui.screens.base import BACK, HISTORY, RENAME, FunctionRef, KbScreen
from kbtool.tui.screens.knowledge import KnowledgeEdits
from kbtool.tui.widgets.lists import LinkList, TitleBar
from kbtool.tui.widgets.palette import name_text

CACHE_LINES = 4_000  # highlighted lines kept per view
CURSOR = Style(bgcolor="grey27")
GUTTER = Style(dim=True)
CLEAN = "clean"  # the cleaned C of `kbtool deep` (queries.get_analysis)
MODE_LABEL = {WASM: "Raw WASM", C: "C", CLEAN: "Cleaned C"}
MODE_CYCLE = {WASM: C, C: CLEAN, CLEAN: WASM}


class LinesView(ScrollView, can_focus=True):
    """A scrollable list of lines drawn on demand: ``render(i) -> Text`` for line ``i``.

    Long lines scroll sideways (left/right, shift for bigger steps); the line numbers stay put.
    """

    DEFAULT_CSS = """
    LinesView { background: $surface; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown,space", "page(1)", "page down", show=False),
        Binding("home,g", "cursor_to(0)", "top", show=False),
        Binding("end,G", "cursor_to(-1)", "bottom", show=False),
        Binding("left", "columns(-1)", "scroll left", show=False),
        Binding("right", "columns(1)", "scroll right", show=False),
        Binding("shift+left", "columns(-8)", "scroll far left", show=False),
        Binding("shift+right", "columns(8)", "scroll far right", show=False),
    ]
    COLUMNS_STEP = 4  # columns per left/right press (shift: 8 steps)

    def __init__(self, *, id: str | None = None, gutter: bool = True) -> None:
        super().__init__(id=id)
        self.count = 0
        self.render_fn: Callable[[int], Text] = lambda i: Text("")
        self.line_numbers = gutter
        self.cursor = 0
        self._cache: dict[int, Strip] = {}
        self._gutter_width = 0

    def set_lines(
        self, count: int, render: Callable[[int], Text], width: int, *, cursor: int = 0
    ) -> None:
        """Show ``count`` lines; ``width`` is the longest line's cell width (for scrolling)."""
        self.count = count
        self.render_fn = render
        self._cache.clear()
        self._gutter_width = len(str(count)) + 1 if self.line_numbers else 0
        self.virtual_size = Size(width + self._gutter_width + 1, count)
        self.cursor = max(0, min(cursor, count - 1))
        self.scroll_to(0, max(0, self.cursor - 3), animate=False)
        self.refresh()

    def _strip(self, i: int) -> Strip:
        """Line ``i`` without its number (the gutter is drawn apart: it never scrolls)."""
        strip = self._cache.get(i)
        if strip is None:
            text = self.render_fn(i)
            strip = Strip(list(text.render(self.app.console)))
            if len(self._cache) >= CACHE_LINES:
                self._cache.clear()
            self._cache[i] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if i >= self.count:
            return Strip.blank(width, base)
        gw = min(self._gutter_width, width)
        strip = self._strip(i).crop_extend(scroll_x, scroll_x + width - gw, base)
        if gw:
            number = f"{i + 1:>{gw - 1}} "[:gw]
            strip = Strip.join([Strip([Segment(number, GUTTER)], gw), strip])
        strip = strip.apply_style(base)
        if i == self.cursor and self.has_focus:  # over the line's own background
            strip = Strip(Segment.apply_style(list(strip), post_style=CURSOR), strip.cell_length)
        return strip

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def _move(self, line: int) -> None:
        if not self.count:
            return
        self.cursor = max(0, min(line, self.count - 1))
        top = int(self.scroll_offset.y)
        height = max(1, self.size.height)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    @property
    def wider_than_view(self) -> bool:
        """Whether some line is cut at the right edge (sideways scrolling has work to do)."""
        return self.virtual_size.width > self.size.width

    def action_columns(self, steps: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + steps * self.COLUMNS_STEP), animate=False)

    def action_cursor(self, step: int) -> None:
        self._move(self.cursor + step)

    def action_cursor_to(self, line: int) -> None:
        self._move(self.count - 1 if line < 0 else line)

    def action_page(self, step: int) -> None:
        self._move(self.cursor + step * max(1, self.size.height - 1))


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


def _width(lines: list[str]) -> int:
    return max((len(printable(x)) for x in lines), default=0)


def _load(db_path, fn: Callable, *args):
    conn = open_ro(db_path)
    try:
        return fn(conn, *args)
    finally:
        conn.close()


# ---------------------------------------------------------------- one function


class CodeScreen(KnowledgeEdits, KbScreen):
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

    def __init__(self, version_id: int, index: int, mode: str = C) -> None:
        super().__init__()
        self.version_id = version_id
        self.index = index
        self.mode = mode
        self.code: dict | None = None
        self.links: dict | None = None
        self.analysis: dict | None = None
        self._calls: dict[int, int] = {}
        self._gen = 0
        self._shown: tuple[int, str] | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="code-status")
        with Horizontal(id="code-body"):
            with Vertical(id="code-main"):
                yield Static(id="code-understanding")
                yield LinesView(id="code-view")
            with Vertical(id="code-links"):
                yield Static(id="callers-label", classes="links-label")
                yield LinkList(id="callers")
                yield Static(id="callees-label", classes="links-label")
                yield LinkList(id="callees")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#code-view").focus()

    def reload(self) -> None:
        self._gen += 1
        self.query_one("#code-status", Static).update(Text("loading…", style="italic"))
        self._fetch(self._gen, self.version_id, self.index)

    @work(thread=True, group="code")
    def _fetch(self, gen: int, version_id: int, index: int) -> None:
        """The code on a worker thread, never the UI's: a progress line says what runs (the
        version's first preparation, a huge body), a huge function shows its first
        ``FIRST_SCREEN`` instructions at once and the rest when disassembled."""
        from kbtool.services import code as code_service

        def say(text: str) -> None:
            self.app.call_from_thread(self._progress, gen, text)

        def both(conn, vid, idx):
            if not code_service.is_cached(conn, vid):
                say(f"preparing version {vid} for code (once per version: module, names, data labels)…")
            n = code_service.body_instructions(conn, vid, idx) or 0
            huge = n > code_service.HUGE_INSTRUCTIONS
            if huge:
                say(f"disassembling the first {code_service.FIRST_SCREEN:,} of {n:,} instructions…")
            d = code_service.disassembly(
                conn, vid, idx, max_lines=code_service.FIRST_SCREEN if huge else None)
            return (
                d,
                code_service.neighbours(conn, vid, idx),
                queries.get_analysis(conn, d["stable_id"]),
            )

        try:
            result, error = _load(self.kb.db_path, both, version_id, index), None
        except KBError as exc:
            result, error = None, str(exc)
        except Exception as exc:  # never take the app down for one function
            result, error = None, f"cannot show this function: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._loaded, gen, result, error)
        if result is not None and result[0].get("partial"):
            try:
                full = _load(self.kb.db_path, code_service.disassembly, version_id, index)
            except Exception:  # the first screen stays; the status says it is partial
                return
            self.app.call_from_thread(self._rest_loaded, gen, full)

    def _progress(self, gen: int, text: str) -> None:
        if gen == self._gen and self.code is None:  # still waiting for the first screen
            self.query_one("#code-status", Static).update(Text(text, style="italic"))

    def _rest_loaded(self, gen: int, full: dict) -> None:
        """The whole disassembly of a huge function, after its first screen: the view keeps
        its cursor."""
        if gen != self._gen or self.code is None:
            return
        self.code = full
        self._calls = {line - 1: idx for line, idx in full.get("call_lines", [])}
        self._show()

    def _loaded(self, gen: int, result, error: str | None) -> None:
        if gen != self._gen:
            return
        if error is not None:
            self.code = None
            self.query_one("#title", TitleBar).show("code")
            self.query_one("#code-status", Static).update(lit(error, "bold red"))
            self.query_one("#code-view", LinesView).set_lines(0, lambda i: Text(""), 0)
            return
        self.code, self.links, self.analysis = result
        self._calls = {line - 1: idx for line, idx in self.code.get("call_lines", [])}
        self._show_links()
        self._show()
        self.refresh_bindings()  # rename/history need the function just loaded

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
        hint = False
        if self.mode == CLEAN and a and a.get("clean_c"):
            lines = _lines(a["clean_c"])
        elif self.mode == CLEAN:
            hint = True
            lines = [
                "No cleaned C for this function yet. Run:",
                "",
                f"    kbtool deep {self.version_id} -f {self.index}",
            ]
        else:
            lines = _lines(d["lifted_c"] if self.mode == C else d["mnemonics"])
        mode = C if self.mode == CLEAN else self.mode
        view = self.query_one("#code-view", LinesView)

        def render(i: int) -> Text:
            if hint:
                return lit(lines[i], "italic")
            t = highlight_line(lines[i], mode)
            if mode == WASM and i in self._calls:
                t.stylize("underline")
            return t

        keep = view.cursor if self._shown == (self.index, self.mode) else 0  # a live refresh
        if self.at_offset is not None and mode == WASM and not hint:  # from the xrefs screen
            keep = next((k for k, x in enumerate(lines) if x.lstrip().startswith(f"{self.at_offset:06x}:")), keep)
            self.at_offset = None
        self._shown = (self.index, self.mode)
        view.set_lines(len(lines), render, _width(lines), cursor=keep)
        self._show_status()
        self.call_after_refresh(self._show_status)  # the view's width is known after layout

    def _show_status(self) -> None:
        """Mode, type, stable_id, what is missing; ``←→ scroll`` when lines are cut."""
        d = self.code
        if d is None:
            return
        view = self.query_one("#code-view", LinesView)
        status = Text(no_wrap=True, overflow="ellipsis")
        status.append(f" {MODE_LABEL[self.mode]} ", style="bold reverse")
        status.append("  ")
        status.append_text(lit(d["type"], "green"))
        if self.mode == C and d.get("truncated"):
            status.append_text(lit(f"  not lifted: {d.get('reason')}", "bold yellow"))
        if self.mode == WASM and d.get("partial"):
            status.append(f"  first {d['mnemonics'].count(chr(10)):,} lines of"
                          f" {d.get('instructions', 0):,} instructions: the rest is loading…",
                          style="bold yellow")
        if view.wider_than_view:
            status.append("  ←→ scroll", style="bold")
        status.append(f"  stable_id {d['stable_id']}", style="dim")
        status.append("  w: Raw WASM / C  v: + Cleaned C", style="dim")
        self.query_one("#code-status", Static).update(status)

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

    def _show_links(self) -> None:
        links = self.links or {"callers": [], "callees": []}
        for key in ("callers", "callees"):
            items = links[key]
            self.query_one(f"#{key}-label", Static).update(
                Text(f"{key} ({len(items)})", style="bold")
            )
            self.query_one(f"#{key}", LinkList).set_links(
                ((f"{self.version_id}:{c['index']}", _link(c)) for c in items), f"no {key}"
            )

    # ------------------------------------------------------------ actions

    def action_toggle_mode(self) -> None:
        self.mode = WASM if self.mode == C else C
        self._show()

    def action_cycle_mode(self) -> None:
        self.mode = MODE_CYCLE[self.mode]
        self._show()

    def action_follow(self) -> None:
        view = self.query_one("#code-view", LinesView)
        if not view.has_focus:
            return
        target = self._calls.get(view.cursor) if self.mode == WASM else None
        if target is None:
            self.notify(
                "no call on this line (w: Raw WASM, then ⏎ on a call; o: the callees)", timeout=3
            )
            return
        self.app.push_screen(CodeScreen(self.version_id, target, self.mode))

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
            text, mode = _lines(d["lifted_c"] if self.mode == C else d["mnemonics"]), self.mode
        line = text[view.cursor] if view.cursor < len(text) else ""
        call = self._calls.get(view.cursor) if mode == WASM else None
        self._xrefs_of(self.version_id, line, "wasm" if mode == WASM else "c", call)

    @work(thread=True, group="xrefs", exclusive=True)
    def _xrefs_of(self, version_id: int, line: str, mode: str, call: int | None) -> None:
        from kbtool.services import data as data_svc

        targets = data_svc.line_targets(line, mode, call_target=call)
        try:
            found = _load(self.kb.db_path, data_svc.first_xrefs, version_id, targets) if targets else None
            error = None if found else "nothing on this line to cross-reference (a call, a global, a data label or a string)"
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
            self.app.push_screen(CodeScreen(vid, idx, self.mode))

    def current_function(self) -> FunctionRef | None:
        if self.code is None:
            return None
        return FunctionRef(self.version_id, self.index, self.code["stable_id"], self.code["name"])

    def after_rename(self, ref: FunctionRef) -> None:
        self.refresh_from_kb()


def _link(entry: dict) -> Text:
    t = Text()
    if entry.get("imported"):
        t.append_text(lit(entry.get("name") or "?", "italic"))
        t.append(" import", style="dim")
        return t
    t.append(f"#{entry['index']} ", style="dim")
    t.append_text(name_text(entry.get("name"), entry.get("provenance")))
    return t


# ---------------------------------------------------------------- one function, two releases


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
        self.pair = (from_version, from_index, to_version, to_index)
        self.diff: dict | None = None
        self.unified = False
        self.mode = WASM
        self._rows: list = []
        self._changes: list[int] = []
        self._gen = 0

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield Static(id="fdiff-status")
        yield LinesView(id="fdiff-view", gutter=False)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#fdiff-view").focus()

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
        view = self.query_one("#fdiff-view", LinesView)
        if self.mode == C:
            lines = _lines(d["c_diff"] or "the lifted C is identical")
            self._changes = [i for i, x in enumerate(lines) if x.startswith("@@")]
            view.set_lines(len(lines), lambda i: _c_diff_line(lines[i]), _width(lines))
            return
        rows = d["rows"]
        self._changes = [
            i
            for i, r in enumerate(rows)
            if r["op"] != "equal" and (i == 0 or rows[i - 1]["op"] == "equal")
        ]
        if self.unified:
            lines_u: list[tuple[str, dict]] = []
            for r in rows:
                if r["op"] == "equal":
                    lines_u.append((" ", r))
                    continue
                if r["a"] is not None:
                    lines_u.append(("-", r))
                if r["b"] is not None:
                    lines_u.append(("+", r))
            self._changes = [
                i
                for i, (s, _) in enumerate(lines_u)
                if s != " " and (i == 0 or lines_u[i - 1][0] == " ")
            ]
            width = max((len(r["a"] or r["b"] or "") for _, r in lines_u), default=0) + 2
            view.set_lines(len(lines_u), lambda i: _unified_line(*lines_u[i]), width)
            return
        half = max(20, (self.size.width - 3) // 2)  # 2 columns for the scrollbar
        view.set_lines(len(rows), lambda i: _side_line(rows[i], half), half * 2 + 1)

    def action_toggle_unified(self) -> None:
        self.unified = not self.unified
        self._show()

    def action_toggle_mode(self) -> None:
        self.mode = WASM if self.mode == C else C
        self._show()

    def action_next_change(self, step: int) -> None:
        view = self.query_one("#fdiff-view", LinesView)
        if not self._changes:
            self.notify("no changes", timeout=2)
            return
        if step > 0:
            nxt = next((i for i in self._changes if i > view.cursor), self._changes[0])
        else:
            nxt = next((i for i in reversed(self._changes) if i < view.cursor), self._changes[-1])
        view._move(nxt)
        view.scroll_to(y=max(0, nxt - 3), animate=False)

    def on_resize(self) -> None:
        if self.diff is not None and self.mode == WASM and not self.unified:
            self._show()

    def current_function(self) -> FunctionRef | None:
        if self.diff is not None:
            b = self.diff["to"]
            return FunctionRef(b["version_id"], b["func_index"], b["stable_id"], b["name"])
        try:  # no code to compare (e.g. bytes not stored): the function itself still is
            fn = queries.get_function(self.kb.conn, self.pair[2], self.pair[3])
        except KBError:
            return None
        return FunctionRef(self.pair[2], self.pair[3], fn["stable_id"], fn["name"])


def _cell(text: str | None, spans, style: str, width: int) -> Text:
    if text is None:
        t = Text("")
    elif style:
        t = Text(printable(text), style=style)
    else:
        t = wasm_line(text)
        for s, e in spans:
            t.stylize(DIFF_STYLE["mark"], s, e)
    t.truncate(width - 1, overflow="ellipsis", pad=True)
    return t


def _side_line(row: dict, half: int) -> Text:
    op = row["op"]
    a_style = "" if op in ("equal", "changed") else DIFF_STYLE["del_line"]
    b_style = "" if op in ("equal", "changed") else DIFF_STYLE["ins_line"]
    t = _cell(row["a"], row["a_spans"], a_style, half)
    marker = {"equal": " ", "changed": "~", "delete": "<", "insert": ">", "replace": "|"}[op]
    t.append(marker, style="bold yellow" if op == "changed" else "dim")
    t.append_text(_cell(row["b"], row["b_spans"], b_style, half))
    return t


def _unified_line(sign: str, row: dict) -> Text:
    if sign == " ":
        return Text("  ").append_text(wasm_line(row["b"]))
    changed = row["op"] == "changed"
    text = row["a"] if sign == "-" else row["b"]
    spans = row["a_spans"] if sign == "-" else row["b_spans"]
    if changed:
        t = Text(f"{sign} ", style="bold yellow").append_text(_cell(text, spans, "", len(text) + 2))
        return t
    style = DIFF_STYLE["del_line"] if sign == "-" else DIFF_STYLE["ins_line"]
    return Text(f"{sign} {printable(text)}", style=style)


def _c_diff_line(line: str) -> Text:
    style = (
        "bold"
        if line.startswith(("---", "+++"))
        else DIFF_STYLE["del_line"]
        if line.startswith("-")
        else DIFF_STYLE["ins_line"]
        if line.startswith("+")
        else "cyan"
        if line.startswith("@@")
        else ""
    )
    if style:
        return Text(printable(line), style=style)
    return highlight_line(line, C)
