"""Rich renderings of code: a function's disassembly or lifted C, and a per-function diff.

Highlighting is per line (``wasm_line``/``c_line`` return a :class:`rich.text.Text` for one
line), so a screen can highlight only the lines it shows. Every line is first made
printable (:func:`kbtool.textutil.printable`): control characters and bidi overrides from
a binary are shown as escapes, and nothing is parsed as Rich markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kbtool.textutil import printable

WASM = "wasm"
C = "c"

_W_LINE = re.compile(r"^( [0-9a-f]+:)( *)(\S+)(.*)$")
_W_TOKENS = re.compile(
    r"(?P<note>;;.*)|(?P<name>\$\S+|func\[\d+\] <[^>]*>)"
    r"|(?P<num>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b)|(?P<type>\b(?:i32|i64|f32|f64|v128)\b)"
)
_C_TOKENS = re.compile(
    r"(?P<comment>/\*.*?(?:\*/|$)|//.*)|(?P<string>\"(?:[^\"\\]|\\.)*\"?|'(?:[^'\\]|\\.)*'?)"
    r"|(?P<pre>^\s*#.*)"
    r"|(?P<kw>\b(?:if|else|while|do|for|switch|case|default|break|continue|return|goto|"
    r"typedef|struct|union|extern|static|const|sizeof|volatile)\b)"
    r"|(?P<type>\b(?:void|u?int(?:8|16|32|64)_t|float|double|v128|wasm_ref|char|int|unsigned"
    r"|long|short|size_t|R_\w+|fn_\w+)\b)"
    r"|(?P<num>\b(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)[uUlLfF]*\b)"
    r"|(?P<label>\bL\d+\b)"
)

STYLE = {
    "offset": "dim",
    "block": "bold magenta",
    "control": "bold magenta",
    "call": "bold yellow",
    "memory": "cyan",
    "const": "blue",
    "local": "",
    "global": "green",
    "op": "",
    "note": "dim italic",
    "name": "yellow",
    "num": "bright_blue",
    "type": "green",
    "comment": "dim italic",
    "string": "green",
    "pre": "magenta",
    "kw": "bold magenta",
    "label": "bold red",
}
DIFF_STYLE = {
    "equal": "",
    "changed": "",
    "delete": "red",
    "insert": "green",
    "replace": "",
    "mark": "bold black on yellow",
    "del_line": "red",
    "ins_line": "green",
    "gutter": "dim",
}
_BLOCK = {
    "block",
    "loop",
    "if",
    "else",
    "end",
    "try",
    "try_table",
    "catch",
    "catch_all",
    "delegate",
}
_CONTROL = {"br", "br_if", "br_table", "return", "unreachable", "throw", "rethrow", "throw_ref"}


def _w_class(mnemonic: str) -> str:
    if mnemonic in _BLOCK:
        return "block"
    if mnemonic in _CONTROL or mnemonic.startswith("br_on"):
        return "control"
    if mnemonic.startswith(("call", "return_call")):
        return "call"
    if ".load" in mnemonic or ".store" in mnemonic or mnemonic.startswith("memory."):
        return "memory"
    if mnemonic.endswith(".const"):
        return "const"
    if mnemonic.startswith("global."):
        return "global"
    if mnemonic.startswith("local."):
        return "local"
    return "op"


def wasm_line(line: str) -> Text:
    """One disassembly line, highlighted (offset, mnemonic class, names, numbers, notes)."""
    line = printable(line)
    m = _W_LINE.match(line)
    if m is None:  # header / locals
        t = Text(line)
        for tm in _W_TOKENS.finditer(line):
            t.stylize(STYLE[tm.lastgroup or "op"], tm.start(), tm.end())
        if line.startswith("func["):
            t.stylize("bold", 0, line.find(":") + 1 if ":" in line else len(line))
        return t
    offset, indent, mnemonic, rest = m.groups()
    t = Text(offset, style=STYLE["offset"])
    t.append(indent)
    t.append(mnemonic, style=STYLE[_w_class(mnemonic)])
    start = len(t)
    t.append(rest)
    for tm in _W_TOKENS.finditer(rest):
        t.stylize(STYLE[tm.lastgroup or "op"], start + tm.start(), start + tm.end())
    return t


def c_line(line: str) -> Text:
    """One line of lifted C, highlighted (keywords, types, numbers, strings, comments)."""
    line = printable(line)
    t = Text(line)
    for tm in _C_TOKENS.finditer(line):
        t.stylize(STYLE[tm.lastgroup or "op"], tm.start(), tm.end())
    return t


def highlight_line(line: str, lang: str) -> Text:
    return c_line(line) if lang == C else wasm_line(line)


def code_text(text: str, lang: str, *, line_numbers: bool = False) -> Text:
    """A whole listing as one highlighted Text (for the CLI; screens highlight per line)."""
    lines = text.splitlines()
    width = len(str(len(lines)))
    out = Text()
    for n, line in enumerate(lines, 1):
        if line_numbers:
            out.append(f"{n:>{width}} ", style="dim")
        out.append_text(highlight_line(line, lang))
        out.append("\n")
    return out


def c_syntax(text: str, *, line_numbers: bool = False, theme: str = "monokai") -> RenderableType:
    """Lifted C through Rich's Syntax (Pygments' C lexer); controls shown as escapes."""
    from rich.syntax import Syntax

    return Syntax(
        printable(text, keep_newlines=True),
        "c",
        theme=theme,
        line_numbers=line_numbers,
        word_wrap=False,
        background_color="default",
    )


# ---------------------------------------------------------------- per-function diff


def diff_summary_text(summary: dict) -> Text:
    """``12 changed lines (const 4, offset 3, callee 1) · 30 deleted · 28 inserted``."""
    kinds = [
        (k, summary.get(k, 0))
        for k in ("const", "offset", "callee", "global", "type", "string", "operand")
    ]
    t = Text()
    t.append(f"{summary.get('changed', 0)} changed", style="bold yellow")
    detail = ", ".join(f"{k} {n}" for k, n in kinds if n)
    if detail:
        t.append(f" ({detail})", style="yellow")
    t.append(" · ")
    t.append(f"{summary.get('deleted', 0)} deleted", style="red")
    t.append(" · ")
    t.append(f"{summary.get('inserted', 0)} inserted", style="green")
    t.append(f" · {summary.get('equal', 0)} equal", style="dim")
    return t


def _marked(text: str | None, spans: Iterable) -> Text:
    """A listing line with the given character spans marked (listing lines hold no controls,
    so spans of the raw text are spans of the printable text)."""
    if text is None:
        return Text("")
    t = wasm_line(text)
    for s, e in spans:
        t.stylize(DIFF_STYLE["mark"], s, e)
    return t


def _row_cells(row: dict) -> tuple[Text, Text]:
    op = row["op"]
    if op == "equal":
        return wasm_line(row["a"]), wasm_line(row["b"])
    if op == "changed":
        return _marked(row["a"], row["a_spans"]), _marked(row["b"], row["b_spans"])
    a = (
        Text(printable(row["a"]), style=DIFF_STYLE["del_line"])
        if row["a"] is not None
        else Text("")
    )
    b = (
        Text(printable(row["b"]), style=DIFF_STYLE["ins_line"])
        if row["b"] is not None
        else Text("")
    )
    return a, b


def fold_rows(rows: list[dict], context: int | None) -> list[dict | int]:
    """Rows with runs of more than ``2 * context`` equal rows replaced by their count."""
    if context is None:
        return list(rows)
    out: list[dict | int] = []
    i, n = 0, len(rows)
    while i < n:
        if rows[i]["op"] != "equal":
            out.append(rows[i])
            i += 1
            continue
        j = i
        while j < n and rows[j]["op"] == "equal":
            j += 1
        head = context if i > 0 else 0
        tail = context if j < n else 0
        if j - i > head + tail + 1:
            out.extend(rows[i : i + head])
            out.append(j - i - head - tail)
            out.extend(rows[j - tail : j])
        else:
            out.extend(rows[i:j])
        i = j
    return out


def _gutter(n: int | None) -> Text:
    return Text("" if n is None else str(n), style=DIFF_STYLE["gutter"], justify="right")


def side_by_side(diff: dict, *, context: int | None = 3) -> Table:
    """The aligned listings of both versions in two columns, changed tokens marked."""
    a, b = diff["from"], diff["to"]
    t = Table(box=None, expand=True, padding=(0, 1), show_edge=False, pad_edge=False)
    t.add_column("", no_wrap=True, width=5)
    t.add_column(
        Text.assemble(f"version {a['version_id']} · #{a['func_index']}", style="bold"),
        ratio=1,
        no_wrap=True,
        overflow="ellipsis",
    )
    t.add_column("", no_wrap=True, width=5)
    t.add_column(
        Text.assemble(f"version {b['version_id']} · #{b['func_index']}", style="bold"),
        ratio=1,
        no_wrap=True,
        overflow="ellipsis",
    )
    for row in fold_rows(diff["rows"], context):
        if isinstance(row, int):
            gap = Text(f"… {row} equal lines …", style="dim italic")
            t.add_row("", gap, "", gap)
            continue
        ca, cb = _row_cells(row)
        t.add_row(_gutter(row["a_line"]), ca, _gutter(row["b_line"]), cb)
    return t


def unified(diff: dict, *, context: int | None = 3) -> Text:
    """The listing diff one column wide: ``-`` from, ``+`` to, ``~`` a changed pair."""
    out = Text()
    for row in fold_rows(diff["rows"], context):
        if isinstance(row, int):
            out.append(f"  … {row} equal lines …\n", style="dim italic")
            continue
        op = row["op"]
        if op == "equal":
            out.append("  ")
            out.append_text(wasm_line(row["b"]))
            out.append("\n")
            continue
        ca, cb = _row_cells(row)
        if row["a"] is not None:
            out.append(
                "~ " if op == "changed" else "- ", style="yellow" if op == "changed" else "red"
            )
            out.append_text(ca)
            out.append("\n")
        if row["b"] is not None:
            out.append(
                "~ " if op == "changed" else "+ ", style="yellow" if op == "changed" else "green"
            )
            out.append_text(cb)
            out.append("\n")
    return out


def function_diff_view(
    diff: dict, *, side: bool = True, context: int | None = 3, c_diff: bool = True
) -> Group:
    """Title, summary, the listing diff (side by side or unified) and the C diff."""
    a, b = diff["from"], diff["to"]
    name = b.get("name") or a.get("name")
    title = Text.assemble(
        ("function ", "bold"),
        (printable(name) if name else "unnamed", "bold cyan"),
        (f"  {diff.get('stable_id') or ''}", "dim"),
    )
    parts: list[RenderableType] = [title, diff_summary_text(diff["summary"]), Text("")]
    parts.append(side_by_side(diff, context=context) if side else unified(diff, context=context))
    if c_diff and diff.get("c_diff"):
        parts += [
            Text(""),
            Text("lifted C (unified diff)", style="bold underline"),
            c_diff_text(diff["c_diff"]),
        ]
    return Group(*parts)


def c_diff_text(text: str) -> Text:
    out = Text()
    for line in text.splitlines():
        style = (
            "bold"
            if line.startswith(("---", "+++"))
            else "red"
            if line.startswith("-")
            else "green"
            if line.startswith("+")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        out.append(printable(line), style=style)
        out.append("\n")
    return out
