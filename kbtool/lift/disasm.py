"""Annotated disassembly of one function (the studio's ``mnemonics``), objdump-like.

One instruction per line: ``<file offset>: <indent><mnemonic> <immediates>[  ;; note]``,
indented by block structure. Calls show the callee (``call $sqlite3_free`` /
``call func[812] <unnamed>``), globals their names, ``call_indirect`` its signature,
constants that point into data the text there; the KB's function comment and prototype as
``;;`` lines under the header, a line comment as ``;; // text`` after its instruction.
Deterministic for equal input.
"""

from __future__ import annotations

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one, format_imms, read_local_decls
from kbtool.wasm.opcodes import K_CALL, K_GLOBAL, K_MEM, K_REF_FUNC, KIND, MNEMONICS

from .context import LiftModule, prepare
from .names import display_name, escape_text

MAX_LINES = 1_000_000

_OPEN = {0x02, 0x03, 0x04, 0x06, 0x1F}
_MID = {0x05, 0x07, 0x19}
_LOCAL_OPS = {0x20, 0x21, 0x22}


def _func_ref(lm: LiftModule, idx: int) -> str:
    if idx < 0 or idx >= lm.module.num_functions:
        return f"func[{idx}] <out of range>"
    name = lm.func_display(idx)
    return f"${name}" if name else f"func[{idx}] <unnamed>"


def _local_name(lm: LiftModule, fi: int, x: int) -> str | None:
    d = lm.names.locals.get(fi)
    n = d.get(x) if d else None
    if not n:
        return None

    return display_name(n)


def disassemble_function(lm: LiftModule, func_index: int, max_lines: int = MAX_LINES) -> str:
    """Listing of ``func_index`` of a prepared module (or raw wasm bytes; imports give a
    one-line header). Raises IndexError for
    an index out of range and WasmFormatError for a malformed body."""
    if not isinstance(lm, LiftModule):

        lm = prepare(lm)
    m = lm.module
    if func_index < 0 or func_index >= m.num_functions:
        raise IndexError(f"function {func_index} out of range")
    name = lm.func_display(func_index)
    ft = m.func_type(func_index)
    head = f"func[{func_index}] <{name or 'unnamed'}>: {ft.text()}"
    if func_index < m.num_func_imports:
        imp = m.func_imports[func_index]
        return head + f"  ;; import {escape_text(imp.module)}.{escape_text(imp.field)}\n"
    start, end = m.code[func_index - m.num_func_imports]
    data = lm.data
    decls, p = read_local_decls(data, start, end)
    lines = [head]
    comment = lm.names.comments.get(func_index)
    if comment:
        lines += [f" ;; {display_name(row, 200)}" for row in comment.splitlines()[:40]]
    proto = lm.names.prototypes.get(func_index)
    if proto:
        lines.append(f" ;; prototype: {display_name(proto, 400)}")
    line_notes = lm.names.line_comments.get(func_index) or {}
    x = len(ft.params)
    for count, ty in decls:
        if count:
            rng = f"{x}" if count == 1 else f"{x}..{x + count - 1}"
            lines.append(f" local[{rng}]: {ty}")
        x += count
    types = lm.type_texts
    depth = 1
    n = 0
    prev_const: int | None = None  # the previous instruction's i32.const value

    def type_text(t: int) -> str:
        return types[t] if 0 <= t < len(types) else f"<bad type {t}>"

    while p < end:
        op, p2, imms = decode_one(data, p, end)
        n += 1
        if n > max_lines:
            lines.append(f" ;; ... truncated after {max_lines} instructions")
            break
        mn = MNEMONICS[op]
        k = KIND[op]
        note = ""
        if op == 0x0B or op == 0x18 or op in _MID:
            depth = max(depth - 1, 0)
        if k == K_CALL or k == K_REF_FUNC:
            text = f"{mn} {_func_ref(lm, imms[0])}"
        elif k == K_GLOBAL:
            g = lm.global_display(imms[0])
            text = f"{mn} ${g}" if g else f"{mn} {imms[0]}"
        elif op in (0x11, 0x13):
            text = f"{mn} {format_imms(op, imms, type_text)}"
        elif op in _LOCAL_OPS:
            ln = _local_name(lm, func_index, imms[0])
            text = f"{mn} {imms[0]}" + (f" <{ln}>" if ln else "")
        else:
            imm = format_imms(op, imms, type_text)
            text = f"{mn} {imm}" if imm else mn
            if k == K_MEM and prev_const is not None and lm.data_starts:
                # i32.const C; i32.load offset=O: a static variable at C + O
                d = lm.data_label((prev_const + imms[1]) & 0xFFFFFFFF)
                if d is not None:
                    note = f"  ;; {d[0]}" + (f"+{d[2]}" if d[2] else "")
            d = lm.data_label(imms[0] & 0xFFFFFFFF) if op == 0x41 and lm.data_starts else None
            if d is not None and d[2] == 0:  # the start of a labelled data item
                note = f"  ;; {d[0]}" + (f' "{escape_text(d[3], 80)}"' if d[3] else "")
            elif op == 0x41 and imms[0] >= 256:
                s = lm.string_at(imms[0] & 0xFFFFFFFF)
                if s:
                    note = f'  ;; "{escape_text(s, 80)}"'
        lc = line_notes.get(p) if line_notes else None
        if lc:
            note += f"  ;; // {display_name(' '.join(lc.split()), 200)}"
        lines.append(f" {p:06x}: {'  ' * min(depth, 40)}{text}{note}")
        prev_const = imms[0] if op == 0x41 else None
        if op in _OPEN or op in _MID:
            depth += 1
        p = p2
    else:
        if depth != 0:
            raise WasmFormatError(
                end, "'end' opcode at the end of the function body", "unbalanced blocks"
            )
    return "\n".join(lines) + "\n"
