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
from typing import Any

from kbtool.lift.context import LiftModule
from kbtool.lift.disasm import (
    _BRANCH,
    _CALL_INDIRECT,
    _CLOSE,
    _LOCAL_OPS,
    _MID,
    _OPEN,
    MAX_LINES,
    DataRef,
    Instr,
    Ref,
    _func_ref,
    _local_name,
    disassemble_function,
)
from kbtool.lift.names import display_name, escape_text
from kbtool.render.disasm import head_lines, instr_line
from kbtool.wasm import WasmFormatError
from kbtool.wasm.instr import decode_one, format_imms, read_local_decls
from kbtool.wasm.opcodes import K_CALL, K_GLOBAL, K_MEM, K_REF_FUNC, KIND, MNEMONICS

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
    ctx = _Ctx(lm, func_index)
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


class _Ctx:
    """What one instruction's record reads of the module (names, types, data labels)."""

    def __init__(self, lm: LiftModule, func_index: int) -> None:
        self.lm, self.fi = lm, func_index
        self.types = lm.type_texts
        self.has_data = bool(lm.data_starts)
        self.notes = lm.names.line_comments.get(func_index) or {}

    def type_text(self, t: int) -> str:
        return self.types[t] if 0 <= t < len(self.types) else f"<bad type {t}>"

    def record(self, p: int, depth: int, op: int, imms: Any, prev_const: int | None) -> Instr:
        lm, types = self.lm, self.types
        k = KIND[op]
        ref = data_ref = string = None
        if k == K_CALL or k == K_REF_FUNC:
            ref = _func_ref(lm, imms[0])
            operands = str(imms[0])
        elif k == K_GLOBAL:
            ref = Ref("global", imms[0], lm.global_display(imms[0]) or None)
            operands = str(imms[0])
        elif op in _CALL_INDIRECT:
            operands = format_imms(op, imms, self.type_text)
            ref = Ref("type", imms[0], self.type_text(imms[0]), 0 <= imms[0] < len(types))
        elif op in _LOCAL_OPS:
            ref = Ref("local", imms[0], _local_name(lm, self.fi, imms[0]))
            operands = str(imms[0])
        else:
            operands = format_imms(op, imms, self.type_text)
            if op in _BRANCH:
                pass  # targets: not shown on a line
            elif self.has_data:
                if k == K_MEM and prev_const is not None:
                    d = lm.data_label((prev_const + imms[1]) & 0xFFFFFFFF)
                    if d is not None:
                        data_ref = DataRef(d[0], d[2], None)
                elif op == 0x41:
                    d = lm.data_label(imms[0] & 0xFFFFFFFF)
                    if d is not None and d[2] == 0:
                        data_ref = DataRef(d[0], 0, escape_text(d[3], 80) if d[3] else None)
            if op == 0x41 and data_ref is None and imms[0] >= 256:
                s = lm.string_at(imms[0] & 0xFFFFFFFF)
                if s:
                    string = escape_text(s, 80)
        lc = self.notes.get(p) if self.notes else None
        return Instr(
            p,
            depth,
            op,
            MNEMONICS[op],
            imms,
            operands,
            ref,
            (),
            data_ref,
            string,
            display_name(" ".join(lc.split()), 200) if lc else None,
        )


__all__ = ["EVERY", "Skim", "skim", "window_lines"]
