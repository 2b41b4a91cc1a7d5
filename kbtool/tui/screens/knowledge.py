"""Knowledge edits on the code pane (issue 27): ``;`` comments the line under the cursor (an
instruction in Raw WASM; the function comment elsewhere), ``n`` on a parameter or local renames
it (elsewhere: the function), ``y`` sets the prototype. Each write goes through the gate as a
human (actor ``human:tui``) on a worker thread, is toasted, and the code is redrawn at once."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError
from kbtool.render.code import WASM
from kbtool.textutil import printable

ACTOR = "human:tui"
_C_LINE_COMMENT = re.compile(r"^\s*/\* @([0-9a-f]{6}): ")
_C_DEFAULT = re.compile(r"\b([pl])(\d+)\b")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_WASM_C = {"i32": "int", "i64": "long long", "f32": "float", "f64": "double"}


class PromptScreen(ModalScreen[tuple[str, ...] | None]):
    """A small dialog of one or two text boxes; dismisses with their values or None (Esc)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", key_display="esc")]
    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen #prompt-box { width: 80%; max-width: 100; height: auto; padding: 1 2;
        background: $panel; border: round $accent; }
    """

    def __init__(self, title: str, fields: list[tuple[str, str]], hint: str) -> None:
        super().__init__()
        self.title_text, self.fields, self.hint = title, fields, hint

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Static(Text(printable(self.title_text), style="bold"), id="prompt-title")
            for k, (placeholder, value) in enumerate(self.fields):
                yield Input(value=value, placeholder=placeholder, id=f"prompt-{k}")
            yield Static(Text(self.hint, style="dim"), id="prompt-hint")

    def on_mount(self) -> None:
        boxes = list(self.query(Input))
        for b in boxes:
            b.cursor_blink = getattr(self.app, "blink", True)
        boxes[-1].focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(tuple(b.value for b in self.query(Input)))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _current(db_path: str, stable_id: str) -> dict[str, Any]:
    from kbtool.services import knowledge as ks

    conn = open_ro(db_path)
    try:
        return ks.function_knowledge(conn, stable_id)
    finally:
        conn.close()


def local_names_of(listing: Any) -> dict[str, int]:
    """C name -> wasm local index, from the disassembly records' named locals."""
    out: dict[str, int] = {}
    for ins in listing.instrs if listing is not None else ():
        ref = ins.ref
        if ref is not None and ref.kind == "local" and ref.name:
            out.setdefault(ref.name, ref.index)
    return out


def locals_on_line(line: str, mode: str, listing: Any, ins: Any = None) -> list[int]:
    """The wasm local indices the line under the cursor mentions, in order (``ins``: the
    instruction record of that line in the disassembly)."""
    found: list[int] = []
    if mode == WASM:
        ref = ins.ref if ins is not None else None
        found = [ref.index] if ref is not None and ref.kind == "local" else []
    else:
        named = local_names_of(listing)
        text = re.sub(r"/\*.*?\*/", "", line)
        for m in _IDENT.finditer(text):
            tok = m.group()
            d = _C_DEFAULT.fullmatch(tok)
            if tok in named:
                found.append(named[tok])
            elif d:
                found.append(int(d.group(2)))
    return list(dict.fromkeys(found))


def suggested_prototype(name: str | None, wasm_type: str) -> str:
    m = re.fullmatch(r"\((.*)\)\s*->\s*(.*)", wasm_type or "")
    if m is None:
        return ""
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    res = m.group(2).strip().strip("()")
    ret = _WASM_C.get(res, "void") if res and "," not in res else "void"
    fname = re.sub(r"[^A-Za-z0-9_]", "_", name or "f") or "f"
    args = ", ".join(f"{_WASM_C.get(p, 'int')} p{k}" for k, p in enumerate(params)) or "void"
    return f"{ret} {fname}({args})"


class KnowledgeEdits:
    """Mixin of :class:`kbtool.tui.screens.code.CodeScreen`: the ``;``, ``n`` and ``y`` keys."""

    KNOWLEDGE_BINDINGS = [
        Binding("semicolon", "comment", "comment", show=False),
        Binding("y", "prototype", "prototype", show=False),
    ]

    # what the host screen provides
    code: dict | None
    listing: Any  # the disassembly's records
    cursor_instr: Any  # () -> the instruction record under the cursor (wasm), or None
    mode: str
    version_id: int
    index: int

    def _cursor_line(self) -> str:
        from kbtool.tui.screens.code import CLEAN, C, LinesView, _lines
        from kbtool.tui.widgets.code_view import split_code

        d = self.code
        view = self.query_one("#code-view", LinesView)  # type: ignore[attr-defined]
        if d is None:
            return ""
        if self.mode == CLEAN:
            return ""
        text = split_code(d["lifted_c"])[0] if self.mode == C else _lines(d["mnemonics"])
        return text[view.cursor] if view.cursor < len(text) else ""

    def _editable(self) -> bool:
        if self.code is None or self.kb.read_only:  # type: ignore[attr-defined]
            if self.code is not None:
                self.notify("read-only: nothing can be written", timeout=3)  # type: ignore[attr-defined]
            return False
        return True

    def action_comment(self) -> None:
        if not self._editable():
            return
        d = self.code
        assert d is not None
        line = self._cursor_line()
        ins = self.cursor_instr() if self.mode == WASM else None
        m = None if self.mode == WASM else _C_LINE_COMMENT.match(line)
        cur = _current(self.kb.db_path, d["stable_id"])  # type: ignore[attr-defined]
        if ins is not None or m:
            off = ins.offset if ins is not None else int(m.group(1), 16)
            old = next((c["text"] for c in cur["line_comments"] if c.get("address") == off), "")
            if not old:
                cur = self._knowledge_at_version(d["stable_id"])
                old = next((c["text"] for c in cur["line_comments"] if c.get("address") == off), "")
            title, field = f"Comment the line {off:06x}", ("comment (empty: remove it)", old)
        else:
            off = None
            old = (cur["comment"] or {}).get("text", "")
            title, field = "Comment the function", ("comment (empty: remove it)", old)

        def done(values: tuple[str, ...] | None) -> None:
            if values is not None:
                self._write("comment", d["stable_id"], values[0], off)

        self.app.push_screen(
            PromptScreen(
                title,
                [field],
                "⏎ saves it as yours (human, locked) · esc cancels"
                + (
                    ""
                    if off is not None or self.mode != WASM
                    else " · on an instruction: a line comment"
                ),
            ),
            done,
        )  # type: ignore[attr-defined]

    def _knowledge_at_version(self, stable_id: str) -> dict[str, Any]:
        from kbtool.services import knowledge as ks

        conn = open_ro(self.kb.db_path)  # type: ignore[attr-defined]
        try:
            return ks.function_knowledge(conn, stable_id, self.version_id)
        finally:
            conn.close()

    def action_prototype(self) -> None:
        if not self._editable():
            return
        d = self.code
        assert d is not None
        cur = _current(self.kb.db_path, d["stable_id"])  # type: ignore[attr-defined]
        old = (cur["prototype"] or {}).get("text") or suggested_prototype(d.get("name"), d["type"])

        def done(values: tuple[str, ...] | None) -> None:
            if values is not None and values[0].strip():
                self._write("prototype", d["stable_id"], values[0], None)

        self.app.push_screen(
            PromptScreen(
                f"Prototype of #{self.index} {d['type']}",  # type: ignore[attr-defined]
                [("C prototype, e.g. int f(char *s)", old)],
                "⏎ saves it (checked against the wasm signature) · esc cancels",
            ),
            done,
        )

    def action_rename(self) -> None:
        """``n``: a parameter or local on the line under the cursor, else the function."""
        d = self.code
        line = self._cursor_line()
        ins = self.cursor_instr() if self.mode == WASM else None
        found = locals_on_line(line, self.mode, self.listing, ins) if d else []
        sig = (
            bool(d)
            and self.mode != WASM
            and line.rstrip().endswith("{")
            and not line.startswith(" ")
        )
        if not found or sig or self.kb.read_only:  # type: ignore[attr-defined]
            super().action_rename()  # type: ignore[misc]
            return
        names = {v: k for k, v in local_names_of(self.listing).items()}
        first = found[0]
        others = ", ".join(f"{x}" + (f" ({names[x]})" if x in names else "") for x in found)

        def done(values: tuple[str, ...] | None) -> None:
            if values is not None and values[1].strip():
                self._write("local", d["stable_id"], values[1].strip(), values[0].strip())

        self.app.push_screen(
            PromptScreen(  # type: ignore[attr-defined]
                f"Rename a local of #{self.index} (on this line: {others})",
                [
                    ("local: index (3, l3, p0) or current name", str(first)),
                    ("new name (C identifier)", names.get(first, "")),
                ],
                "⏎ saves it as yours (human, locked) · tab: the other box · esc cancels",
            ),
            done,
        )

    @work(thread=True, exclusive=True, group="knowledge")
    def _write(self, kind: str, stable_id: str, value: str, where: Any) -> None:
        from kbtool.services import knowledge as ks

        target = f"{self.version_id}:{self.index}"
        try:
            conn = open_rw(self.kb.db_path, create=False)  # type: ignore[attr-defined]
            try:
                if kind == "comment":
                    d = ks.set_comment(conn, target, value or None, line=where, actor=ACTOR)
                elif kind == "prototype":
                    d = ks.set_prototype(conn, target, value, actor=ACTOR)
                else:
                    d = ks.rename_local(conn, target, where, value, actor=ACTOR)
            finally:
                conn.close()
        except KBError as exc:
            d = {"written": False, "reason": str(exc).splitlines()[0]}
        self.app.call_from_thread(self._written, kind, d)  # type: ignore[attr-defined]

    def _written(self, kind: str, d: dict[str, Any]) -> None:
        what = {"comment": "comment", "prototype": "prototype", "local": "local name"}[kind]
        if d["written"]:
            self.notify(f"{what} saved (human, locked)", title="saved", timeout=3)  # type: ignore[attr-defined]
            self.refresh_from_kb()  # type: ignore[attr-defined]
        elif d["reason"] == "no change":
            self.notify(f"{what} unchanged: nothing written", timeout=3)  # type: ignore[attr-defined]
        else:
            self.notify(
                printable(f"{what} not written: {d['reason']}"),
                severity="error",  # type: ignore[attr-defined]
                timeout=5,
                markup=False,
            )
