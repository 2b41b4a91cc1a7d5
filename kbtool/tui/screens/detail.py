"""Detail: one function's annotation record, facts, its callers and callees as links, and the
other functions that reference the same strings (string xrefs)."""

from __future__ import annotations

import json
import weakref
from collections import Counter

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import OptionList, Static

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import KBError
from kbtool.render.text import lit
from kbtool.services import nav
from kbtool.textutil import clip, printable
from kbtool.tui.screen_css import ScreenCss
from kbtool.tui.screens.base import (
    BACK,
    HISTORY,
    RENAME,
    FunctionRef,
    KbScreen,
    push_kept,
    style_inputs,
)
from kbtool.tui.widgets.diff_footer import DiffFooter
from kbtool.tui.widgets.lists import LinkList, TitleBar
from kbtool.tui.widgets.palette import name_text, prov_text

MAX_STRINGS = 40
MAX_STRUCTS = 8
MAX_FIELDS = 12
XREF_STRINGS = 6  # strings of this function looked up for cross-references
XREFS_PER_STRING = 8  # other functions listed per string


def link_text(entry: dict) -> Text:
    """``#12 name`` for a defined function, ``env.read (import)`` for an import; literal."""
    t = Text()
    if entry.get("imported"):
        t.append_text(lit(entry.get("import") or "?", "italic"))
        t.append(" import", style="dim")
        return t
    t.append(f"#{entry['index']} ", style="dim")
    t.append_text(name_text(entry.get("name"), entry.get("provenance")))
    return t


class DrawnOnce:
    """Text and tables drawn once per width (and other console options), then replayed.

    A detail open measures the record (its height) at each of its two layouts (Textual lays
    a new screen out again once its widgets know their sizes) and draws it in between: three
    renders of the same tables at the same width. The segments replayed are the ones Rich made
    the first time. The height asked for is not part of the key: text and tables are drawn
    whole whatever it is (Textual crops the lines to it)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._drawn: dict[tuple, list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key = (
            options.size,
            options.min_width,
            options.max_width,
            options.justify,
            options.overflow,
            options.no_wrap,
            options.highlight,
            options.markup,
            options.legacy_windows,
            options.is_terminal,
            options.encoding,
        )
        segments = self._drawn.get(key)
        if segments is None:
            segments = self._drawn[key] = list(console.render(self.renderable, options))
        return segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


# the apps that showed a detail screen already (its rules are in their stylesheet): see
# DetailScreen._on_screen_resume
_STYLED: weakref.WeakSet = weakref.WeakSet()

KEPT = "kbtool-detail"  # the name the app's kept detail screen is installed under (open_detail)


class DetailScreen(ScreenCss, KbScreen):
    """Everything the KB knows about one function of one version."""

    TCSS = "detail"  # its rules: kbtool/tui/detail.tcss, added when first registered

    BINDINGS = [
        BACK,
        HISTORY,
        RENAME,
        Binding("[", "other_version(-1)", "prev version", show=False),
        Binding("]", "other_version(1)", "next version", show=False),
        Binding("c", "code", "code"),
    ]

    def __init__(self, version_id: int, index: int) -> None:
        super().__init__()
        self.version_id = version_id
        self.index = index
        self._fn: dict | None = None
        self._xref_gen = 0  # the reload whose string xrefs are wanted

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Horizontal(id="detail-body"):
            with VerticalScroll(id="detail-main"):
                # the record, the facts and the threads in one widget: one to mount, lay out
                # and draw per frame instead of three (a detail open draws each several times)
                yield Static(id="record")
            with Vertical(id="links"):
                yield Static(id="callers-label", classes="links-label")
                yield LinkList(id="callers")
                yield Static(id="callees-label", classes="links-label")
                yield LinkList(id="callees")
                yield Static(id="xrefs-label", classes="links-label")
                yield LinkList(id="xrefs")
        yield DiffFooter(compact=True, show_command_palette=False)

    _suspended = False  # covered or closed once: shown again, restyled as Textual does
    _styled_as: tuple | None = None  # the styles' inputs when it was closed (kept screen)

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """First shown just after its mount: Textual's handler (after this one) restyles
        every widget of a resumed screen, all styled a moment ago as they were registered
        (~10 % of a warm detail open's profile). The app's first detail screen is restyled
        as Textual does (its rules join the stylesheet as it is first registered), and so is
        one shown again (a theme may have changed meanwhile) unless it is the kept screen
        closed with what its styles depend on unchanged since (:func:`open_detail`)."""
        app = self.app
        if not self._suspended and app in _STYLED:
            event.refresh_styles = False
        elif self._styled_as is not None and self._styled_as == style_inputs(app):
            event.refresh_styles = False
        self._styled_as = None
        _STYLED.add(app)

    def on_screen_suspend(self) -> None:
        self._suspended = True
        if self not in self.app.screen_stack:  # closed (the kept one is not unmounted)
            self._styled_as = style_inputs(self.app)

    def swap(self, version_id: int, index: int) -> None:
        """Another function on this (kept, closed) screen, read here before it is shown
        again (the reads :meth:`reload` made on its resume anyway): its first frame has the
        new record, links and title; nothing of the last one is left (scroll at the top,
        the last one's string xrefs dropped by their generation)."""
        self.version_id, self.index = version_id, index
        self._fn = None
        self.query_one("#detail-main").scroll_home(animate=False)
        self.seen_token = self.kb.kb_token
        self.reload()
        self.query_one("#detail-main").focus()
        self.call_after_refresh(self.kb.prepare_code, version_id)

    def on_mount(self) -> None:
        self.query_one("#detail-main").focus()
        # once drawn, the version is prepared for the code views in the background (`c`)
        self.call_after_refresh(self.kb.prepare_code, self.version_id)

    def reload(self) -> None:
        conn = self.kb.conn
        try:
            fn = queries.get_function(conn, self.version_id, self.index)
            label = queries.get_version(conn, self.version_id)["label"]
        except KBError as exc:
            self._fn = None
            self.query_one("#record", Static).update(lit(str(exc), "bold red"))
            return
        self._fn = fn
        self.kb.version_id = self.version_id
        self.query_one("#title", TitleBar).show(
            lit(label, "bold"),
            Text(f"#{self.index} "),
            name_text(fn["name"], fn["provenance"], bold=True),
        )
        facts = (
            None
            if fn["imported"]
            else queries.get_function_facts(conn, self.version_id, self.index)
        )
        analysis = None if fn["imported"] else self._analysis(conn)
        parts = [self._record(fn, label), self._facts(fn, facts)]
        if analysis is not None:
            parts.append(analysis)
        self.query_one("#record", Static).update(DrawnOnce(Group(*parts)))
        if fn["imported"]:
            callers_, callees_ = queries.callers(conn, self.version_id, self.index), []
        else:
            callers_ = queries.callers(conn, self.version_id, self.index)
            callees_ = queries.callees(conn, self.version_id, self.index)
        self.query_one("#callers-label", Static).update(
            Text(f"callers ({len(callers_)})", style="bold")
        )
        self.query_one("#callees-label", Static).update(
            Text(f"callees ({len(callees_)})", style="bold")
        )
        self.query_one("#callers", LinkList).set_links(
            ((f"{self.version_id}:{c['index']}", c) for c in callers_), "no callers", link_text
        )
        self.query_one("#callees", LinkList).set_links(
            ((f"{self.version_id}:{c['index']}", c) for c in callees_), "no callees", link_text
        )
        strings = facts["referenced_strings"] if facts else []
        self._xref_gen += 1
        label, links = self.query_one("#xrefs-label", Static), self.query_one("#xrefs", LinkList)
        label.display = links.display = bool(strings)
        if strings:  # each string is a scan of the version's facts: on a worker, not here,
            # and once the detail is drawn (the worker would hold the GIL the frame needs)
            label.update(Text("string xrefs (…)", style="bold"))
            links.set_links([], "loading…")
            self.call_after_refresh(
                self._fetch_xrefs, self._xref_gen, self.version_id, self.index, strings
            )

    @work(thread=True, group="detail-xrefs", exclusive=True)
    def _fetch_xrefs(self, gen: int, version_id: int, index: int, strings: list[str]) -> None:
        """The string xrefs on a worker thread with its own read-only connection (a scan of
        the version's facts per string: hundreds of ms on a big module)."""
        conn = open_ro(self.kb.db_path)
        try:
            xrefs = nav.string_xrefs(
                conn,
                version_id,
                index,
                strings,
                per_string=XREFS_PER_STRING,
                max_strings=XREF_STRINGS,
            )
        except Exception:  # the detail stays; the section is hidden
            xrefs = []
        finally:
            conn.close()
        self.app.call_from_thread(self._show_xrefs, gen, xrefs)

    def _show_xrefs(self, gen: int, xrefs: list) -> None:
        """Other functions of this version referencing the same strings (bounded); hidden if none."""
        if gen != self._xref_gen or not self.is_attached:
            return
        try:  # the screen may be closing (its widgets removed first)
            label = self.query_one("#xrefs-label", Static)
            links = self.query_one("#xrefs", LinkList)
        except NoMatches:
            return
        label.display = links.display = bool(xrefs)
        if not xrefs:
            return
        count = sum(len(others) for _s, others, _cut in xrefs)
        label.update(Text(f"string xrefs ({count})", style="bold"))
        items: list[tuple[str, Text]] = []
        for k, (text, others, cut) in enumerate(xrefs):
            head = Text("“", style="dim")
            head.append_text(lit(clip(printable(text), 26), "green"))
            head.append("”", style="dim")
            if cut:
                head.append(" (more)", style="dim italic")
            items.append((f"s:{k}", head))
            items += [
                (f"{o['version_id']}:{o['index']}:{k}", Text("  ").append_text(link_text(o)))
                for o in others
            ]
        links.set_links(items)  # the string lines (ids "s:k") are headings: Enter ignores them

    # ------------------------------------------------------------ rendering

    @staticmethod
    def _grid() -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True, min_width=9)
        grid.add_column(overflow="fold")
        return grid

    def _record(self, fn: dict, label: str) -> Group:
        sym = fn["symbol"]
        g = self._grid()
        g.add_row("name", name_text(fn["name"], fn["provenance"], bold=True))
        prov = prov_text(fn["provenance"])
        if sym:
            prov.append(f"  confidence {sym['confidence']:.2f}")
            if sym["locked"]:
                prov.append("  locked", style="bold")
        g.add_row("provenance", prov)
        g.add_row("summary", lit(sym["summary"] if sym else None))
        g.add_row("type", lit((sym or {}).get("type_signature") or fn["type"]))
        g.add_row("stable_id", Text(fn["stable_id"]))
        g.add_row("version", Text.assemble(lit(label), f"  index {fn['index']}"))
        if fn["imported"]:
            g.add_row("import", lit(f"{fn['import_module']}.{fn['import_field']}"))
        if fn["export_names"]:
            g.add_row("exports", lit(", ".join(fn["export_names"])))
        g.add_row("raw name", lit(fn["raw_name"]))
        ident = fn["match_method"] or "new"
        if fn["match_score"] is not None:
            ident += f" (score {fn['match_score']:.2f}"
            ident += f", was #{fn['prev_index']})" if fn["prev_index"] is not None else ")"
        if fn["body_changed"]:
            ident += ", body changed"
        g.add_row("identity", lit(ident))
        g.add_row("size", Text(f"{fn['body_size']:,} bytes, {fn['instr_count']:,} instructions"))
        if sym:
            g.add_row("updated", lit(sym["updated_at"]))
        parts: list = [Text("annotation", style="bold underline"), g]
        evidence = sym["evidence"] if sym else []
        if evidence:
            ev = self._grid()
            for i, item in enumerate(evidence, 1):
                ev.add_row(f"  {i}", lit(json.dumps(item, ensure_ascii=False, sort_keys=True)))
            parts += [Text("evidence", style="bold"), ev]
        return Group(*parts)

    def _facts(self, fn: dict, facts: dict | None) -> Group:
        if facts is None:
            return Group(
                Text(""),
                Text("facts", style="bold underline"),
                Text(
                    "imported function: no body" if fn["imported"] else "no facts recorded",
                    style="dim italic",
                ),
            )
        g = self._grid()
        calls = facts["call_targets"]
        imports = [c for c in calls if c != "<indirect>"]
        g.add_row("imports", lit(", ".join(imports)) if imports else Text("none", style="dim"))
        g.add_row("indirect", Text(str(facts["indirect_call_sites"])))
        g.add_row("callees", Text(str(len(facts["callees"]))))
        strings = facts["referenced_strings"]
        if strings:
            st = Text()
            for i, s in enumerate(strings[:MAX_STRINGS]):
                if i:
                    st.append("\n")
                st.append_text(lit(clip(printable(s), 120), "green"))
            if len(strings) > MAX_STRINGS:
                st.append(f"\n… {len(strings) - MAX_STRINGS} more", style="dim")
            g.add_row("strings", st)
        else:
            g.add_row("strings", Text("none", style="dim"))
        g.add_row("loops", Text(str(facts["loops"])))
        if facts["atomic_sites"]:
            g.add_row("atomics", Text(str(facts["atomic_sites"])))
        if facts["globals_used"]:
            g.add_row("globals", Text(", ".join(str(x) for x in facts["globals_used"][:30])))
        g.add_row("memory", Text(f"{len(facts['memory_accesses'])} loads/stores"))
        return Group(Text(""), Text("facts", style="bold underline"), g)

    def _analysis(self, conn) -> Group | None:
        """Thread facts of this function and the structs it accesses (`kbtool analyze`);
        None when the version was never analysed."""
        if queries.last_analysis_run(conn, self.version_id) is None:
            return None
        facts = queries.thread_facts(conn, self.version_id, self.index)
        structs = queries.structs_for_function(conn, self.version_id, self.index)
        g = self._grid()
        sites = [f for f in facts if f["kind"] == "atomic_site"]
        if sites:
            ops = Counter(f["op"] for f in sites)
            g.add_row(
                "atomics",
                Text(
                    f"{len(sites)} sites: "
                    + ", ".join(
                        f"{op} x{n}"
                        for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
                    )
                ),
            )
        for f in facts:
            if f["kind"] == "lock":
                g.add_row(
                    "lock", Text(f"{f['pattern']} ({', '.join(f['evidence']['atomic_classes'])})")
                )
            elif f["kind"] == "worker_entry":
                g.add_row("worker", Text.assemble("thread entry (export ", lit(f["export"]), ")"))
            elif f["kind"] == "worker_only":
                g.add_row(
                    "worker", Text("runs only on worker threads (reached only from thread entries)")
                )
        if not g.rows:
            g.add_row("", Text("no atomics, locks or worker-only facts", style="dim"))
        parts: list = [Text(""), Text("threads", style="bold underline"), g]
        sg = self._grid()
        for st in structs[:MAX_STRUCTS]:
            fields = ", ".join(f"+{f['offset']} {f['type']}" for f in st["fields"][:MAX_FIELDS])
            if len(st["fields"]) > MAX_FIELDS:
                fields += f", … {len(st['fields']) - MAX_FIELDS} more"
            via = ", ".join(b for b in st["bases"] if b)
            sg.add_row(
                lit(st["name"]),
                Text(f"{via}: {{{fields}}}  first seen in #{st['source_function']}"),
            )
        if len(structs) > MAX_STRUCTS:
            sg.add_row("", Text(f"… {len(structs) - MAX_STRUCTS} more", style="dim"))
        if not structs:
            sg.add_row("", Text("no recovered struct accessed here", style="dim"))
        parts += [Text("structs", style="bold underline"), sg]
        return Group(*parts)

    # ------------------------------------------------------------ actions

    def current_function(self) -> FunctionRef | None:
        if self._fn is None:
            return None
        return FunctionRef(self.version_id, self.index, self._fn["stable_id"], self._fn["name"])

    def after_rename(self, ref: FunctionRef) -> None:
        self.refresh_from_kb()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id
        if oid and not oid.startswith("s:"):
            vid, idx = (int(x) for x in oid.split(":")[:2])
            self.kb.open_detail(vid, idx)

    def action_other_version(self, step: int) -> None:
        if self._fn is None:
            return
        where = queries.functions_by_stable_id(self.kb.conn, self._fn["stable_id"])
        ids = [w["version_id"] for w in where]
        if self.version_id not in ids:
            return
        i = ids.index(self.version_id) + step
        if 0 <= i < len(ids):
            self.version_id, self.index = where[i]["version_id"], where[i]["index"]
            self.refresh_from_kb()
        else:
            self.notify(
                "the function appears in no " + ("earlier" if step < 0 else "later") + " version",
                timeout=3,
            )

    def action_code(self) -> None:
        """The function's code (Raw WASM / C), on its own screen."""
        if self._fn is None or self._fn["imported"]:
            self.notify("an imported function has no code", timeout=3)
            return
        from kbtool.tui.screens.code import open_code

        open_code(self.app, self.version_id, self.index)


def open_detail(app, version_id: int, index: int) -> DetailScreen:
    """Push one function's detail. The app keeps one detail screen (installed as
    :data:`KEPT`): shown again with another function's content, its widgets are not composed,
    mounted and styled again (most of a warm open's CPU, issue 30). While that screen is open
    (a caller followed from it) a new one is pushed over it."""
    return push_kept(app, KEPT, DetailScreen, version_id, index)
