"""One function's disassembly as instruction records (the studio's ``mnemonics`` data).

:func:`disassemble_function` decodes a body into a :class:`Listing`: the header facts
(index, display name, signature, import, the KB's comment and prototype, local
declarations) and one :class:`Instr` per instruction with its file offset, nesting depth,
opcode, mnemonic, decoded immediates and what they resolve to: the callee, global or local
(:class:`Ref`, with its display name), the blocks a branch names (``targets``), the data
item a constant or a static access points at (:class:`DataRef`), the string a pointer
constant points at, and the KB's line comment. Names and strings in a record are already
display-safe (escaped); a record holds no layout. The text (``func[3] <f>: ...`` then
``<offset>: <indent><mnemonic> <operands>[  ;; note]`` lines) is made by
:mod:`kbtool.render.disasm` only, so every surface and the per-function diff read these
fields instead of parsing text. Deterministic for equal input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one, format_imms, read_local_decls
from kbtool.wasm.opcodes import K_CALL, K_GLOBAL, K_MEM, K_REF_FUNC, KIND, MNEMONICS

from .context import LiftModule, prepare
from .names import display_name, escape_text

MAX_LINES = 1_000_000

_OPEN = {0x02, 0x03, 0x04, 0x06, 0x1F}  # block loop if try try_table
_MID = {0x05, 0x07, 0x19}  # else catch catch_all
_CLOSE = {0x0B, 0x18}  # end delegate
_BRANCH = {0x0C, 0x0D, 0x0E}  # br br_if br_table
_LOCAL_OPS = {0x20, 0x21, 0x22}
_CALL_INDIRECT = {0x11, 0x13}


class Ref(NamedTuple):
    """What an instruction's index immediate resolves to.

    ``kind``: ``func`` (call, return_call, ref.func), ``global``, ``local`` or ``type``
    (call_indirect: ``name`` is the signature text); ``name``: the display name (None when
    unnamed); ``valid``: False for a function index past the module's functions."""

    kind: str
    index: int
    name: str | None
    valid: bool = True


class DataRef(NamedTuple):
    """A labelled data item: ``i32.const`` at its start (``text``: its string, escaped) or a
    static access ``i32.const C; <load/store> offset=O`` at ``label + delta``."""

    label: str
    delta: int
    text: str | None


class Instr(NamedTuple):
    """One decoded instruction and what its immediates resolve to."""

    offset: int  # file offset of the opcode
    depth: int  # block nesting depth at this instruction (1 = function body)
    opcode: int  # the opcode table's id (kbtool.wasm.opcodes)
    mnemonic: str
    imms: tuple  # decoded immediates, as kbtool.wasm.instr.decode_one gives them
    operands: str  # canonical text of the immediates (wasm.instr.format_imms); "" for none
    ref: Ref | None = None  # callee / global / local / call_indirect type
    targets: tuple[int, ...] = ()  # br/br_if/br_table: index in ``instrs`` of each label's
    #                                opener (block, loop, if, ...), -1 for the function body
    data: DataRef | None = None  # data item a constant or a static access points at
    string: str | None = None  # the string a pointer constant points at (escaped)
    line_comment: str | None = None  # the KB's line comment (display-safe, one line)


@dataclass(frozen=True, slots=True)
class Listing:
    """One function's disassembly: header facts and its instructions.

    ``imported``: ``(module, field)`` (escaped) for an import, which has no body;
    ``locals``: ``(first index, count, type)`` per non-empty declaration; ``truncated``:
    the instruction limit when the body was cut there, else None; ``error``: why a body
    the decoder rejects has no listing (from :func:`kbtool.lift.disassemble_module`)."""

    func_index: int
    name: str | None
    signature: str
    imported: tuple[str, str] | None = None
    comment: tuple[str, ...] = ()
    prototype: str | None = None
    locals: tuple[tuple[int, int, str], ...] = ()
    instrs: tuple[Instr, ...] = ()
    truncated: int | None = None
    error: str | None = None


def _func_ref(lm: LiftModule, idx: int) -> Ref:
    if idx < 0 or idx >= lm.module.num_functions:
        return Ref("func", idx, None, False)
    return Ref("func", idx, lm.func_display(idx) or None)


def _local_name(lm: LiftModule, fi: int, x: int) -> str | None:
    d = lm.names.locals.get(fi)
    n = d.get(x) if d else None
    return display_name(n) if n else None


def disassemble_function(lm: LiftModule, func_index: int, max_lines: int = MAX_LINES) -> Listing:
    """The :class:`Listing` of ``func_index`` of a prepared module (or raw wasm bytes; an
    import has a header only). At most ``max_lines`` instructions (``truncated`` says so).
    Raises IndexError for an index out of range and WasmFormatError for a malformed body."""
    if not isinstance(lm, LiftModule):
        lm = prepare(lm)
    m = lm.module
    if func_index < 0 or func_index >= m.num_functions:
        raise IndexError(f"function {func_index} out of range")
    name = lm.func_display(func_index) or None
    ft = m.func_type(func_index)
    if func_index < m.num_func_imports:
        imp = m.func_imports[func_index]
        return Listing(
            func_index, name, ft.text(), imported=(escape_text(imp.module), escape_text(imp.field))
        )
    start, end = m.code[func_index - m.num_func_imports]
    data = lm.data
    decls, p = read_local_decls(data, start, end)
    comment = lm.names.comments.get(func_index)
    comment_lines = (
        tuple(display_name(row, 200) for row in comment.splitlines()[:40]) if comment else ()
    )
    proto = lm.names.prototypes.get(func_index)
    local_decls = []
    x = len(ft.params)
    for count, ty in decls:
        if count:
            local_decls.append((x, count, ty))
        x += count
    make = RecordMaker(lm, func_index).record
    instrs: list[Instr] = []
    append = instrs.append
    stack: list[int] = []  # index in ``instrs`` of each open block's opener
    depth = 1
    prev_const: int | None = None  # the previous instruction's i32.const value
    truncated = None
    while p < end:
        op, p2, imms = decode_one(data, p, end)
        if len(instrs) >= max_lines:
            truncated = max_lines
            break
        if op in _CLOSE or op in _MID:
            depth = max(depth - 1, 0)
        if op in _CLOSE and stack:
            stack.pop()
        targets: tuple[int, ...] = ()
        if op in _BRANCH:
            labels = (*imms[0], imms[1]) if op == 0x0E else (imms[0],)
            n = len(stack)
            targets = tuple(stack[-1 - d] if d < n else -1 for d in labels)
        append(make(p, depth, op, imms, prev_const, targets))
        prev_const = imms[0] if op == 0x41 else None
        if op in _OPEN:
            stack.append(len(instrs) - 1)
        if op in _OPEN or op in _MID:
            depth += 1
        p = p2
    else:
        if depth != 0:
            raise WasmFormatError(
                end, "'end' opcode at the end of the function body", "unbalanced blocks"
            )
    return Listing(
        func_index,
        name,
        ft.text(),
        None,
        comment_lines,
        display_name(proto, 400) if proto else None,
        tuple(local_decls),
        tuple(instrs),
        truncated,
    )


class RecordMaker:
    """One instruction's :class:`Instr` of function ``func_index``: what it reads of the
    module (names, types, data labels, strings, the KB's line comments). Shared by
    :func:`disassemble_function` and the windows of a huge function
    (:mod:`kbtool.services.code_window`), so both make the same records."""

    def __init__(self, lm: LiftModule, func_index: int) -> None:
        self.lm, self.fi = lm, func_index
        self.types = lm.type_texts
        self.has_data = bool(lm.data_starts)
        self.notes = lm.names.line_comments.get(func_index) or {}

    def type_text(self, t: int) -> str:
        return self.types[t] if 0 <= t < len(self.types) else f"<bad type {t}>"

    def record(
        self,
        p: int,
        depth: int,
        op: int,
        imms: Any,
        prev_const: int | None,
        targets: tuple[int, ...] = (),
    ) -> Instr:
        """The record of the instruction at ``p`` (``prev_const``: the previous
        instruction's ``i32.const`` value; ``targets``: a branch's blocks)."""
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
                pass  # its blocks are the caller's ``targets``
            elif self.has_data:
                if k == K_MEM and prev_const is not None:
                    # i32.const C; i32.load offset=O: a static variable at C + O
                    d = lm.data_label((prev_const + imms[1]) & 0xFFFFFFFF)
                    if d is not None:
                        data_ref = DataRef(d[0], d[2], None)
                elif op == 0x41:
                    d = lm.data_label(imms[0] & 0xFFFFFFFF)
                    if d is not None and d[2] == 0:  # the start of a labelled data item
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
            targets,
            data_ref,
            string,
            display_name(" ".join(lc.split()), 200) if lc else None,
        )
