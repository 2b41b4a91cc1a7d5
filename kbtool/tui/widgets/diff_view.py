"""The per-function diff's view: aligned listings side by side or unified (changed tokens
marked), or the unified diff of the lifted C; it knows where each change starts."""

from __future__ import annotations

from rich.text import Text

from kbtool.render.code import DIFF_STYLE, C, highlight_line, wasm_line
from kbtool.textutil import printable
from kbtool.tui.widgets.lines_view import LinesView

_MARKER = {"equal": " ", "changed": "~", "delete": "<", "insert": ">", "replace": "|"}


def _width(lines: list[str]) -> int:
    return max((len(printable(x)) for x in lines), default=0)


class FunctionDiffView(LinesView):
    """A :class:`LinesView` of one function's diff (``kbtool.services.code.function_diff``'s
    ``rows`` or ``c_diff``); ``changes`` are the lines where a run of changes starts."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, gutter=False)
        self.changes: list[int] = []

    def show_c_diff(self, c_diff: str) -> None:
        lines = (c_diff or "the lifted C is identical").splitlines() or [""]
        self.changes = [i for i, x in enumerate(lines) if x.startswith("@@")]
        self.set_lines(len(lines), lambda i: _c_diff_line(lines[i]), _width(lines))

    def show_rows(self, rows: list[dict], *, unified: bool, width: int) -> None:
        """The aligned listing rows, unified (``-``/``+`` lines) or side by side in
        ``width`` columns."""
        if unified:
            lines_u: list[tuple[str, dict]] = []
            for r in rows:
                if r["op"] == "equal":
                    lines_u.append((" ", r))
                    continue
                if r["a"] is not None:
                    lines_u.append(("-", r))
                if r["b"] is not None:
                    lines_u.append(("+", r))
            self.changes = [
                i
                for i, (s, _) in enumerate(lines_u)
                if s != " " and (i == 0 or lines_u[i - 1][0] == " ")
            ]
            w = max((len(r["a"] or r["b"] or "") for _, r in lines_u), default=0) + 2
            self.set_lines(len(lines_u), lambda i: _unified_line(*lines_u[i]), w)
            return
        self.changes = [
            i
            for i, r in enumerate(rows)
            if r["op"] != "equal" and (i == 0 or rows[i - 1]["op"] == "equal")
        ]
        half = max(20, (width - 3) // 2)  # 2 columns for the scrollbar
        self.set_lines(len(rows), lambda i: _side_line(rows[i], half), half * 2 + 1)

    def next_change(self, step: int) -> bool:
        """Move the cursor to the next (``step`` > 0) or previous change, wrapping; False
        when there is none."""
        if not self.changes:
            return False
        if step > 0:
            nxt = next((i for i in self.changes if i > self.cursor), self.changes[0])
        else:
            nxt = next((i for i in reversed(self.changes) if i < self.cursor), self.changes[-1])
        self._move(nxt)
        self.scroll_to(y=max(0, nxt - 3), animate=False)
        return True


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
    t.append(_MARKER[op], style="bold yellow" if op == "changed" else "dim")
    t.append_text(_cell(row["b"], row["b_spans"], b_style, half))
    return t


def _unified_line(sign: str, row: dict) -> Text:
    if sign == " ":
        return Text("  ").append_text(wasm_line(row["b"]))
    changed = row["op"] == "changed"
    text = row["a"] if sign == "-" else row["b"]
    spans = row["a_spans"] if sign == "-" else row["b_spans"]
    if changed:
        return Text(f"{sign} ", style="bold yellow").append_text(
            _cell(text, spans, "", len(text) + 2)
        )
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
