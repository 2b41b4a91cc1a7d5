"""A table row as segments or as one string (what :class:`kbtool.render.terminal.DiffRows`
writes), and whether a console writes styles at all."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.cells import cell_len, set_cell_size
from rich.console import COLOR_SYSTEMS
from rich.segment import Segment

__all__ = ["ansi_writer", "plain_console", "row_segments", "row_text"]


def plain_console(console) -> bool:
    """The console writes text only (no colour system, not recording): a segment's style
    changes nothing it writes, so a renderable may write whole lines as one segment."""
    return console.color_system is None and not console.record


def ansi_writer(console) -> Callable[[Iterable[Segment]], str] | None:
    """For a console that writes colour: the characters it writes for some segments (each
    styled one wrapped in its escape codes, as ``Console._render_buffer`` writes them), so
    that a renderable may write a whole line as one pre-rendered segment; None when the
    console does more than that (recording, no colour, legacy Windows, ``NO_COLOR``).
    Not for a ``console.pager(styles=False)``: it strips styles, not written escape codes
    (kbtool pages with ``styles=True``)."""
    name = console.color_system
    if name is None or console.record or console.legacy_windows or console.no_color:
        return None
    system = COLOR_SYSTEMS[name]

    def write(segments: Iterable[Segment]) -> str:
        return "".join(
            style.render(text, color_system=system) if style else text
            for text, style, _ in segments
        )

    return write


def row_segments(cells, style_of) -> list[Segment]:
    """One table row's segments: each cell padded to its width (an over-long single-piece
    cell cut with an ellipsis), two spaces between cells; unstyled runs merged."""
    out: list[Segment] = []
    plain = ""
    for i, (pieces, w, right) in enumerate(cells):
        if i:
            plain += "  "
        if len(pieces) == 1:
            first = pieces[0][0]
            used = len(first) if first.isascii() else cell_len(first)
            if used > w:
                pieces = [(set_cell_size(first, w - 1) + "…", pieces[0][1])]
                used = cell_len(pieces[0][0])
        else:
            used = sum(cell_len(t) for t, _ in pieces)
        pad = " " * (w - used)
        if right:
            plain += pad
        for text, style in pieces:
            if not text:
                continue
            if not style:
                plain += text
                continue
            if plain:
                out.append(Segment(plain))
                plain = ""
            out.append(Segment(text, style_of(style)))
        if not right:
            plain += pad
    if plain:
        out.append(Segment(plain))
    return out


def row_text(cells) -> str:
    """The characters :func:`row_segments` writes for the same cells, as one string."""
    parts: list[str] = []
    for i, (pieces, w, right) in enumerate(cells):
        if i:
            parts.append("  ")
        if len(pieces) == 1:
            body = pieces[0][0]
            used = len(body) if body.isascii() else cell_len(body)
            if used > w:
                body = set_cell_size(body, w - 1) + "…"
                used = cell_len(body)
        else:
            body = "".join(t for t, _ in pieces)
            used = sum(cell_len(t) for t, _ in pieces)
        pad = " " * (w - used)
        parts.append(pad + body if right else body + pad)
    return "".join(parts)
