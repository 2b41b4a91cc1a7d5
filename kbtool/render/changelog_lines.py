"""The diff's changelog as a renderable that writes its segments directly (what ``kbtool diff``
prints after the change table): the same characters and styles as
:func:`kbtool.render.terminal.changelog_from_data` printed through Rich, several times faster
for thousands of entries.

Each line of the changelog is kept as its pieces (text, style), in the order the reference
builds its Text spans. A line that fits the console's width, and holds only printable
characters, is written as one segment per styled piece (Rich's Text writes one per span: in
a colour terminal the escape codes are the same) with the indent and padding
:class:`rich.padding.Padding` gives it; any other line (one Rich would wrap, the section
headings) is rendered by Rich itself from the same pieces. Print it with ``crop=False``: no
line is wider than the console.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from typing import Any

from rich._wrap import divide_line
from rich.cells import cell_len
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from kbtool.render.rows import ansi_writer, plain_console
from kbtool.render.terminal_summary import CLASS_STYLE, _delta
from kbtool.textutil import printable

__all__ = ["ChangelogLines", "Line", "changelog_pieces", "changelog_sections"]

Pieces = list[tuple[str, str]]
#: a line: (indent, pieces), or (-1, a Rich renderable printed as is)
Line = tuple[int, object]

_ORDER_WORDS = {
    "triage": "patch-like first (triage)",
    "index": "by index",
    "weight": "most changed first",
}
_SHOWN = ("calls added", "calls removed", "strings added", "strings removed")


def _lit(value: object, style: str) -> tuple[str, str]:
    """A piece of ``value`` shown literally (as :func:`kbtool.render.text.lit`)."""
    if value is None:
        return ("—", "dim")
    return (printable(value), style)


def _names(values: list[str], style: str) -> Pieces:
    out: Pieces = []
    for i, v in enumerate(values):
        if i:
            out.append((", ", "dim"))
        out.append(_lit(v, style))
    return out


def _strings(values: list[str], style: str) -> Pieces:
    out: Pieces = []
    for i, v in enumerate(values):
        if i:
            out.append(("  ", ""))
        out.append(_lit(repr(v), style))
    return out


def _heading(cls: str, count: int) -> Line:
    return (-1, Text.assemble((f"\n{cls}", CLASS_STYLE[cls]), f" ({count})"))


def _title(cl: dict) -> list[Line]:
    return [
        (
            -1,
            Text.assemble(
                "\n",
                ("changelog", "bold underline"),
                " ",
                _lit(cl["from"], "bold"),
                " → ",
                _lit(cl["to"], "bold"),
            ),
        )
    ]


def _modified_heading(cl: dict) -> list[Line]:
    mods = cl["modified"]
    named = sum(1 for m in mods if m["name"])
    order = _ORDER_WORDS.get(cl.get("order", "weight"), "most changed first")
    return [
        (
            -1,
            Text.assemble(
                ("\nmodified", CLASS_STYLE["modified"]),
                f" ({len(mods)}: {named} named, {len(mods) - named} unnamed; {order})",
            ),
        )
    ]


def _modified_entry(m: dict) -> list[Line]:
    """The lines of one modified function."""
    head: Pieces = [("  ", "")]
    if m["name"]:
        head.append(_lit(m["name"], "bold"))
    else:
        head.append((f"func[{m['to_index']}]", "bold dim"))
    head.append((f"  #{m['from_index']}→#{m['to_index']}  ", "dim"))
    head.append(
        (
            f"{_delta(m['instr_from'], m['instr_to'], 'instr')}, "
            f"{_delta(m['size_from'], m['size_to'], 'B')}",
            "",
        )
    )
    if m["runtime"]:
        head.append(("  runtime", "magenta"))
    if m["review"]:
        head.append(("  review", "bold red"))
    if "triage" in m:
        head.append((f"  triage {m['triage']:.1f}", "cyan"))
    out: list[Line] = [(0, head)]
    for r in m.get("reasons", [])[:3]:
        out.append((4, [_lit("why: " + r, "cyan")]))
    if m.get("hint"):
        out.append((4, [("refs ", "dim"), _lit(m["hint"], "dim")]))
    if m["calls_added"]:
        out.append((4, [("+ calls ", "green"), *_names(m["calls_added"], "green")]))
    if m["calls_removed"]:
        out.append((4, [("- calls ", "red"), *_names(m["calls_removed"], "red")]))
    if m["strings_added"]:
        out.append((4, [("+ strings ", "green"), *_strings(m["strings_added"], "green")]))
    if m["strings_removed"]:
        out.append((4, [("- strings ", "red"), *_strings(m["strings_removed"], "red")]))
    for item in m.get("items", []):
        if not item.startswith(_SHOWN) and not item.endswith(" instructions"):
            out.append((4, [("~ ", "yellow"), _lit(item, "yellow")]))
    return out


def _modified_count(m: dict) -> int:
    """How many lines :func:`_modified_entry` makes of ``m``, without making them."""
    n = 1 + len(m.get("reasons", [])[:3]) + bool(m.get("hint"))
    n += bool(m["calls_added"]) + bool(m["calls_removed"])
    n += bool(m["strings_added"]) + bool(m["strings_removed"])
    for item in m.get("items", []):
        if not item.startswith(_SHOWN) and not item.endswith(" instructions"):
            n += 1
    return n


def _function_head(f: dict, index: int) -> Line:
    head: Pieces = [
        (f"  #{index} ", ""),
        _lit(f["name"] or "unnamed", "bold" if f["name"] else "dim"),
    ]
    head.append((f"  {f['instr']:,} instr, {f['size']:,} B", "dim"))
    if f["runtime"]:
        head.append(("  runtime", "magenta"))
    return (0, head)


def _new_entry(f: dict) -> list[Line]:
    """The lines of one new function."""
    out = [_function_head(f, f["to_index"])]
    if f["strings"]:
        more = (
            f" (+{f['string_count'] - len(f['strings'])} more)"
            if f["string_count"] > len(f["strings"])
            else ""
        )
        out.append((4, [("strings ", "dim"), *_strings(f["strings"], ""), (more, "dim")]))
    if f["calls"]:
        out.append((4, [("calls ", "dim"), *_names(f["calls"], "")]))
    return out


def _new_count(f: dict) -> int:
    """How many lines :func:`_new_entry` makes of ``f``."""
    return 1 + bool(f["strings"]) + bool(f["calls"])


def _deleted_entry(f: dict) -> list[Line]:
    """The lines of one deleted function."""
    out = [_function_head(f, f["from_index"])]
    if f["strings"]:
        out.append((4, [("strings ", "dim"), *_strings(f["strings"], "")]))
    return out


def _deleted_count(f: dict) -> int:
    """How many lines :func:`_deleted_entry` makes of ``f``."""
    return 1 + bool(f["strings"])


def _imports(cl: dict) -> list[Line]:
    out: list[Line] = [(-1, Text("\nimports", style="bold"))]
    if cl["imports_added"]:
        out.append((0, [("  ", ""), ("+ ", "green"), *_names(cl["imports_added"], "green")]))
    if cl["imports_removed"]:
        out.append((0, [("  ", ""), ("- ", "red"), *_names(cl["imports_removed"], "red")]))
    return out


#: a section of the changelog: (the lines of one unit, its units, how many lines a unit has
#: when every one is a single row (indent >= 0) and counting is cheaper than making them, or
#: None)
Section = tuple[Callable[[Any], list[Line]], Sequence[Any], Callable[[Any], int] | None]


def changelog_sections(cl: dict, keep: frozenset[str] | None) -> list[Section]:
    """The changelog as sections of units (its title, a heading, one function's entry, the
    imports), each unit's lines made only when asked: :func:`changelog_pieces` is every
    unit's lines in order; the TUI's pane makes only the units on screen (and counts the
    others' lines)."""
    out: list[Section] = [(_title, (cl,), None)]
    if keep is None or "modified" in keep:
        out += [
            (_modified_heading, (cl,), None),
            (_modified_entry, cl["modified"], _modified_count),
        ]
    if keep is None or "new" in keep:
        out += [
            (lambda n: [_heading("new", n)], (len(cl["new"]),), None),
            (_new_entry, cl["new"], _new_count),
        ]
    if keep is None or "deleted" in keep:
        out += [
            (lambda n: [_heading("deleted", n)], (len(cl["deleted"]),), None),
            (_deleted_entry, cl["deleted"], _deleted_count),
        ]
    if cl["imports_added"] or cl["imports_removed"]:
        out.append((_imports, (cl,), None))
    return out


def changelog_pieces(cl: dict, keep: frozenset[str] | None) -> list[Line]:
    """The changelog's lines as pieces, in the reference renderer's order and spans."""
    return [
        line
        for lines, units, _count in changelog_sections(cl, keep)
        for u in units
        for line in lines(u)
    ]


_TRAILING_SPACE = re.compile(r"\s+$")  # what Text.rstrip_end strips


def _fitting(plain: str, room: int) -> list[tuple[int, int]] | None:
    """The one line of ``plain`` (which fits ``room`` cells) as Rich's Text keeps it: its
    trailing whitespace beyond ``room`` *characters* cut (``Text.rstrip_end`` counts
    characters: a line with combining marks can lose a trailing space)."""
    b = len(plain)
    if b > room:
        m = _TRAILING_SPACE.search(plain)
        if m is not None:
            b -= min(m.end() - m.start(), b - room)
    return [(0, b)] if b else None


def _wrapped(plain: str, room: int) -> list[tuple[int, int]] | None:
    """The character ranges of the lines Rich's Text wraps ``plain`` into at ``room``
    cells (``divide_line``, then each line's whitespace beyond ``room`` characters cut, as
    ``Text.rstrip_end``); None when a line would still be wider (Rich folds it itself)."""
    bounds = [0, *divide_line(plain, room, fold=True), len(plain)]
    out = []
    for a, b in pairwise(bounds):
        if b - a > room:
            m = _TRAILING_SPACE.search(plain, a, b)
            if m is not None:
                b -= min(m.end() - m.start(), b - a - room)
        if b <= a or cell_len(plain[a:b]) > room:
            return None
        out.append((a, b))
    return out


class ChangelogLines:
    """:func:`kbtool.render.terminal.changelog_from_data` as segments (see the module)."""

    def __init__(self, cl: dict, *, only: frozenset[str] | None = None) -> None:
        self.cl, self.only = cl, only

    def __rich_console__(self, console, options):
        width = options.max_width
        styles: dict[str, Style | None] = {"": None}

        def style_of(name: str) -> Style | None:
            if name not in styles:
                styles[name] = console.get_style(name)
            return styles[name]

        text_only = plain_console(console)
        ansi = None if text_only else ansi_writer(console)  # colour: lines pre-rendered
        done: list[str] = []  # text_only: the lines written so far, one segment

        for indent, body in changelog_pieces(self.cl, self.only):
            if indent < 0:
                if done:
                    yield Segment("".join(done))
                    done.clear()
                yield from console.render(body, options)
                continue
            pieces: Pieces = body  # type: ignore[assignment]
            plain = "".join(t for t, _ in pieces)
            room = width - indent
            used = len(plain) if plain.isascii() else cell_len(plain)
            ranges = _fitting(plain, room) if used <= room else None
            if plain and room > 0 and plain.isprintable() and ranges is None:
                ranges = _wrapped(plain, room)
            if not plain or not ranges or not plain.isprintable():  # Rich renders it
                if done:
                    yield Segment("".join(done))
                    done.clear()
                text = Text.assemble(*pieces)
                yield from console.render(
                    Padding(text, (0, 0, 0, indent)) if indent else text, options
                )
                continue
            if text_only:
                done.extend(_text_lines(plain, ranges, indent, room))
            elif ansi is not None:
                done.append(ansi(_segments(pieces, plain, ranges, indent, room, style_of)))
            else:
                yield from _segments(pieces, plain, ranges, indent, room, style_of)
        if done:
            yield Segment("".join(done))


def _text_lines(plain: str, ranges: list[tuple[int, int]], indent: int, room: int) -> list[str]:
    """The characters :func:`_segments` writes for the same line, each line with its newline."""
    out = []
    for a, b in ranges:
        shown = plain[a:b]
        if indent:
            used = len(shown) if shown.isascii() else cell_len(shown)
            shown = " " * indent + shown + " " * (room - used)
        out.append(shown + "\n")
    return out


def _segments(
    pieces: Pieces, plain: str, ranges: list[tuple[int, int]], indent: int, room: int, style_of
) -> Iterator[Segment]:
    """The segments of ``pieces`` cut into lines at ``ranges`` (character offsets of
    ``plain``): one segment per styled piece of a line, unstyled runs joined (as Text writes
    them), the indent before and the padding after each line (as Padding gives them)."""
    line = Segment.line()
    for a, b in ranges:
        if indent:
            yield Segment(" " * indent)
        run = ""
        pos = 0
        for text, style in pieces:
            start, pos = pos, pos + len(text)
            if pos <= a or start >= b:
                continue
            part = (
                text if a <= start and pos <= b else text[max(a - start, 0) : min(b, pos) - start]
            )
            if not style:
                run += part
                continue
            if run:
                yield Segment(run)
                run = ""
            yield Segment(part, style_of(style))
        if run:
            yield Segment(run)
        if indent:
            shown = plain[a:b]
            used = len(shown) if shown.isascii() else cell_len(shown)
            if used < room:
                yield Segment(" " * (room - used))
        yield line
