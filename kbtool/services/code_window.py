"""Windows of a huge function's disassembly past its first screen, rendered from the
instructions of the window alone (issue 30 point 2).

One pass over the body (:func:`_skim`: decode only, no records, about a quarter of a whole
disassembly) keeps where every ``EVERY``-th instruction starts and the decoder's state there
(block depth, the previous ``i32.const``); a window then decodes from the resume point
before it to its last line and renders only those lines. No whole listing (records, lines
or text) is built or kept for a window: the resume points are a few hundred small tuples.

The lines are exactly those of the whole listing (:func:`kbtool.render.disasm.listing_lines`
of :func:`kbtool.lift.disasm.disassemble_function`): each instruction's record is made as
:mod:`kbtool.lift.disasm` makes it (its ``targets`` aside, which no line shows).
A body the decoder rejects, or one longer than the listing's instruction limit, has no
resume points (None): the caller renders its whole listing as before.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from kbtool.lift.context import LiftModule
from kbtool.lift.disasm import (
    _CLOSE,
    _MID,
    _OPEN,
    MAX_LINES,
    Instr,
    RecordMaker,
    disassemble_function,
)
from kbtool.render.disasm import head_lines, instr_line
from kbtool.wasm import WasmFormatError
from kbtool.wasm.instr import decode_one, read_local_decls

EVERY = 256  # instructions between two resume points (a window decodes at most this many more)
KEPT = 16  # functions whose resume points are kept per process


@dataclass(frozen=True, slots=True)
class Skim:
    """A body's resume points: ``points[k]`` is ``(byte offset, depth, previous i32.const
    value or None)`` before instruction ``k * EVERY``; ``head`` the lines above the first
    instruction; ``count`` the instructions in the body."""

    head: tuple[str, ...]
    points: tuple[tuple[int, int, int | None], ...]
    count: int
    end: int


_DOWN = frozenset(_CLOSE | _MID)  # before the instruction: one level up
_UP = frozenset(_OPEN | _MID)  # after it: one level down
_LOCK = threading.Lock()
_KEPT: dict[tuple[int, int], tuple[weakref.ref, Skim | None]] = {}  # (id(lm), index) -> skim
_MAKING: dict[tuple[int, int], threading.Lock] = {}  # held while one thread skims a body


def skim(lm: LiftModule, func_index: int) -> Skim | None:
    """The body's resume points (kept per prepared module; made once per body, a second
    thread asking meanwhile waits for it), or None when a window cannot resume in it."""
    key = (id(lm), func_index)
    with _LOCK:
        hit = _KEPT.get(key)
        if hit is not None and hit[0]() is lm:
            return hit[1]
        making = _MAKING.setdefault(key, threading.Lock())
    try:
        with making:
            with _LOCK:
                hit = _KEPT.get(key)
            if hit is not None and hit[0]() is lm:
                return hit[1]
            made = _skim(lm, func_index)
            with _LOCK:
                _KEPT[key] = (weakref.ref(lm), made)
                while len(_KEPT) > KEPT:
                    del _KEPT[next(iter(_KEPT))]
            return made
    finally:
        with _LOCK:
            if _MAKING.get(key) is making:
                del _MAKING[key]


def _skim(lm: LiftModule, func_index: int) -> Skim | None:
    m = lm.module
    if func_index < m.num_func_imports:
        return None
    start, end = m.code[func_index - m.num_func_imports]
    data = lm.data
    try:
        _decls, p = read_local_decls(data, start, end)
        points: list[tuple[int, int, int | None]] = []
        depth, prev, n, nxt = 1, None, 0, 0
        down, up, decode = _DOWN, _UP, decode_one
        while p < end:
            op, p2, imms = decode(data, p, end)
            if n == nxt:
                points.append((p, depth, prev))
                nxt += EVERY
            if op in down:
                depth = max(depth - 1, 0)
                if op in up:
                    depth += 1
            elif op in up:
                depth += 1
            prev = imms[0] if op == 0x41 else None
            n += 1
            p = p2
    except WasmFormatError:
        return None
    if depth != 0 or n > MAX_LINES:  # the whole listing is an error line or a cut
        return None
    head = head_lines(disassemble_function(lm, func_index, max_lines=0))
    return Skim(tuple(head), tuple(points), n, end)


def window_lines(lm: LiftModule, func_index: int, sk: Skim, offset: int, limit: int) -> list[str]:
    """Lines ``offset..offset+limit`` of the whole listing, decoded from the resume point
    before them."""
    n_head = len(sk.head)
    lines = list(sk.head[offset : offset + limit])
    first = max(0, offset - n_head)
    last = min(sk.count, offset + limit - n_head)
    if first >= last:
        return lines
    k = first // EVERY
    p, depth, prev = sk.points[k]
    lines += [
        instr_line(ins)
        for ins in _records(lm, func_index, sk, p, depth, prev, k * EVERY, first, last)
    ]
    return lines


def window_records(lm: LiftModule, func_index: int, sk: Skim, first: int, last: int) -> list[Instr]:
    """The records of the body's instructions ``first..last`` (0-based), decoded from the
    resume point before ``first`` (a view that pages the listing keeps them per window)."""
    k = first // EVERY
    p, depth, prev = sk.points[k]
    return _records(lm, func_index, sk, p, depth, prev, k * EVERY, first, last)


def _records(
    lm: LiftModule,
    func_index: int,
    sk: Skim,
    p: int,
    depth: int,
    prev: int | None,
    n: int,
    first: int,
    last: int,
) -> list[Instr]:
    """The records of instructions ``first..last`` decoding from instruction ``n`` at ``p``
    (with the decoder's ``depth`` and previous constant there), as
    :func:`kbtool.lift.disasm.disassemble_function` makes them (without ``targets``)."""
    data, end = lm.data, sk.end
    ctx = RecordMaker(lm, func_index)
    out: list[Instr] = []
    while n < last:
        op, p2, imms = decode_one(data, p, end)
        if op in _CLOSE or op in _MID:
            depth = max(depth - 1, 0)
        if n >= first:
            out.append(ctx.record(p, depth, op, imms, prev))
        prev = imms[0] if op == 0x41 else None
        if op in _OPEN or op in _MID:
            depth += 1
        p = p2
        n += 1
    return out


__all__ = ["EVERY", "Skim", "skim", "window_lines", "window_records"]
