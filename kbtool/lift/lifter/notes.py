"""Line comments (the KB's knowledge at an instruction offset) in the lifted C: each stands
on its own line above the statement its instruction's value ends up in (the first statement
emitted at or after the instruction), indented like it. Comments only: the C compiles
exactly as without them."""

from __future__ import annotations

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one, read_local_decls

from ..context import LiftModule
from ..names import comment_text
from .core import _Core
from .linetext import _note_ids, _unmark


def note_line(offset: int, text: str) -> str:
    """One line comment as C: ``/* @00012a: text */`` (the text escaped, bounded)."""
    if offset < 0:
        return f"/* @{offset:06x}: {comment_text(text, 200)} */"
    h = hex(offset)[2:]  # f"{offset:06x}" without str.format (mypyc)
    return f"/* @{'0' * (6 - len(h))}{h}: {comment_text(text, 200)} */"


def function_notes(lm: LiftModule, fi: int) -> dict[int, str]:
    """The line comments of function ``fi``: instruction offset (in the module) -> text."""
    notes = lm.names.line_comments.get(fi)
    return dict(notes) if notes else {}


def setup_notes(lf: _Core, notes: dict[int, str], data: bytes, start: int, end: int) -> list[str]:
    """Give ``lf`` the notes whose offset starts an instruction of the body ``start..end``
    (by instruction index, see :meth:`_Core.emit`); returns the lines of the others (shown
    at the top of the body)."""
    at: dict[int, int] = {}  # offset -> instruction index
    want = set(notes)
    _decls, p = read_local_decls(data, start, end)
    k = 0
    last = max(want)
    try:
        while p < end and p <= last:
            if p in want:
                at[p] = k
            _op, p, _imms = decode_one(data, p, end)
            k += 1
    except WasmFormatError:
        pass
    loose: list[str] = []
    for off in sorted(notes):
        i = at.get(off)
        if i is None:
            loose.append(note_line(off, notes[off]))
            continue
        lf.note_at.setdefault(i, []).append(len(lf.notes))
        lf.notes.append(note_line(off, notes[off]))
    return loose


def place_notes(lines: list[str], notes: list[str]) -> list[str]:
    """``lines`` with each note marker turned into a comment line above its line."""
    out: list[str] = []
    for ln in lines:
        if "\x01" not in ln:
            out.append(ln)
            continue
        ind = ln[: len(ln) - len(ln.lstrip(" "))]
        out += [ind + notes[k] for k in _note_ids(ln)]
        out.append(_unmark(ln))
    return out
