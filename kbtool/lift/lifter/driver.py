"""The entry point :func:`lift_function`: decode, scan, walk, then the function's header,
signature, declarations (locals, temporaries, frame struct) and body; a stub when it fails.
"""

from __future__ import annotations

import time

from kbtool.wasm.errors import WasmFormatError

from ..context import LiftModule, prepare
from ..names import comment_text
from .base import (
    DEFAULT_SECONDS,
    MAX_INSTRUCTIONS,
    MAX_LOCALS,
    MAX_OUTPUT_CHARS,
    LiftError,
    LiftResult,
    LiftStats,
    _Budget,
    c_type,
    type_code,
)
from .decode import _decode
from .localvars import _local_names
from .memory import _data_decls, _frame_struct, _setup_frame
from .notes import function_notes, note_line, place_notes, setup_notes
from .prepass import _prepass
from .structure import _scan
from .views import lift_views
from .walk import _Lifter


def _pack_decl(lines: list[str], cur: str, stmt: str, ind: str = "  ") -> str:
    """Append declaration ``stmt`` to the pending line ``cur`` (flushed to ``lines``,
    indented by ``ind``, when the two would pass ~96 characters); returns the new pending
    line."""
    if not cur:
        return stmt
    if len(cur) + len(stmt) < 96:
        return f"{cur} {stmt}"
    lines.append(ind + cur)
    return stmt


def _signature(lm: LiftModule, fi: int, param_names: list[str] | None) -> str:
    t = lm.module.func_type(fi)
    ret = "void"
    if len(t.results) == 1:
        ret = c_type(t.results[0])
    elif t.results:
        ret = "struct R_" + type_code(t.results)
    if param_names is None:
        ps = ", ".join(c_type(p) for p in t.params) or "void"
    else:
        ps = ", ".join(f"{c_type(p)} {n}" for p, n in zip(t.params, param_names, strict=True))
        ps = ps or "void"
    return f"{ret} {lm.func_c[fi]}({ps})"


def _header(lm: LiftModule, fi: int) -> str:
    name = lm.func_display(fi)
    sig = lm.module.func_type(fi).text()
    label = f"func[{fi}] <{comment_text(name)}>" if name else f"func[{fi}]"
    return f"/* {label} {sig} */"


def _stub(lm: LiftModule, fi: int, reason: str) -> str:
    t = lm.module.func_type(fi)
    decls = []
    if len(t.results) > 1:
        name = "R_" + type_code(t.results)
        fields = " ".join(f"{c_type(r)} v{k};" for k, r in enumerate(t.results))
        decls.append(f"#ifndef KB_{name}\n#define KB_{name}\nstruct {name} {{ {fields} }};\n#endif")
    names = [f"p{k}" for k in range(len(t.params))]
    notes = function_notes(lm, fi)
    return "\n".join(
        [
            _header(lm, fi),
            *decls,
            _signature(lm, fi, names) + " {",
            *[f"  {note_line(off, notes[off])}" for off in sorted(notes)],
            f"  /* kbtool: not lifted: {comment_text(reason)} */",
            "  wasm_unreachable();",
            "}",
            "",
        ]
    )


def lift_function(
    lm: LiftModule,
    func_index: int,
    *,
    max_seconds: float | None = DEFAULT_SECONDS,
    max_instructions: int = MAX_INSTRUCTIONS,
    max_chars: int = MAX_OUTPUT_CHARS,
) -> LiftResult:
    """Lift one function of a prepared module (see :func:`kbtool.lift.prepare`; raw wasm
    bytes are prepared on the fly) to C.

    Imports give a prototype only. Never raises for a bad body: the result then carries a
    stub with a placeholder comment and ``truncated=True``.
    """
    if not isinstance(lm, LiftModule):
        lm = prepare(lm)
    m = lm.module
    if func_index < 0 or func_index >= m.num_functions:
        raise IndexError(f"function {func_index} out of range")
    t0 = time.perf_counter()
    if func_index < m.num_func_imports:
        text = f"{_header(lm, func_index)}\n{_signature(lm, func_index, None)};\n"
        return LiftResult(func_index, text, stats=LiftStats(lines=2))
    deadline = None if max_seconds is None else t0 + max_seconds
    budget = _Budget(max_instructions * 100, deadline)
    start, end = m.code[func_index - m.num_func_imports]
    try:
        t = m.func_type(func_index)
        decls, ops, args, ctrl, seen = _decode(lm.data, start, end, budget)
        if len(ops) > max_instructions:
            raise LiftError(f"more than {max_instructions} instructions")
        n_locals = len(t.params) + sum(c for c, _ in decls)
        if n_locals > MAX_LOCALS:
            raise LiftError(f"{n_locals} locals")
        local_types = list(t.params)
        for c, ty in decls:
            local_types.extend([ty] * c)
        locals_c = _local_names(lm, func_index, len(t.params), n_locals)
        blocks, open_at, switches = _scan(ops, args, ctrl, budget)
        lf = _Lifter(lm, func_index, budget, max_chars)
        notes = function_notes(lm, func_index)
        loose = setup_notes(lf, notes, lm.data, start, end) if notes else []
        lf.switches = switches
        sp_hint = -1  # the module's first mutable i32 global (a shadow-stack frame's SP)
        # a frame's prologue needs an i32.sub / i32.add of a global.get's value (the decoder
        # says whether both occur; most leaf functions of C code read no global)
        arith = seen == 3
        if arith:
            for g, gl in enumerate(m.globals):
                if gl.mutable and gl.valtype == "i32":
                    sp_hint = g
                    break
        lf.lsign, regions = _prepass(
            ops, args, local_types, len(t.params), lm.func_types, sp_hint, arith
        )
        if regions:
            _setup_frame(lf, lm, regions, locals_c)
        lf.run(ops, args, blocks, open_at, locals_c, local_types, t)
        lf.ret_type(t.results)  # the signature names it even when no return was lifted
    except (LiftError, WasmFormatError, IndexError, KeyError, ValueError, OverflowError) as e:
        # a malformed body (or a lifter defect) must not take the caller down
        text = _stub(
            lm,
            func_index,
            str(e)
            if isinstance(e, LiftError | WasmFormatError)
            else f"internal error {type(e).__name__}: {e}",
        )
        st = LiftStats(instructions=0, lines=text.count("\n"), seconds=time.perf_counter() - t0)
        return LiftResult(func_index, text, True, str(e), st)
    lines = [_header(lm, func_index)]
    lines += list(lf.decl_types.values())
    dbefore, dafter = _data_decls(lf) if lf.dobj else ([], [])
    vbefore, vafter = lift_views(lf)  # `P0->field_8` (.views)
    lines += dbefore + vbefore
    # what the body uses, for the compiler: several declarations per line
    dline = ""
    for g in lf.decl_globals:
        ext = f"extern {c_type(m.globals[g].valtype)} {lm.global_c[g]};"
        gt = lf.dhook.global_type(g) if lf.dhook is not None else None
        if gt:  # the applied type, beside the wasm value the global holds
            ext += f" /* {comment_text(gt)} */"
        dline = _pack_decl(lines, dline, ext, "")
    protos = lm.protos
    for f in lf.decl_funcs:
        pr = protos.get(f)
        if pr is None:
            pr = protos[f] = _signature(lm, f, None) + ";"
        dline = _pack_decl(lines, dline, pr, "")
    if dline:
        lines.append(dline)
    lines.append(_signature(lm, func_index, locals_c[: len(t.params)]) + " {")
    head = len(lines)
    decl: dict[str, list[str]] = {}  # one declaration list per C type: locals, then temps
    lsign = lf.lsign
    for x in range(len(t.params), n_locals):
        ct = c_type(local_types[x])
        init = "{0}" if ct == "v128" else "0"
        if lsign[x] == 1:
            ct = "uint32_t" if ct == "int32_t" else "uint64_t"
        elif lsign[x] == 2:
            ct, init = "bool", "false"
        decl.setdefault(ct, []).append(f"{locals_c[x]} = {init}")
    for ct, n in lf.temps:
        decl.setdefault(ct, []).append(n)
    if not lf.fslots and not lf.fesc:
        for k in lf.fused:  # no slot is named: the frame pointer is noise
            lf.out[k] = None
    else:
        lines.insert(head - 1, _frame_struct(lf))
        head += 1
        lines.append(f"  struct {lf.fstruct} *{lf.fptr} = 0;")
    # declarations: several per line (one C type per declaration), up to ~96 characters
    dline = ""
    for ct, items in decl.items():
        cur = f"{ct} "
        for k, item in enumerate(items):
            if k and len(cur) + len(item) > 94:
                dline = _pack_decl(lines, dline, cur[:-2] + ";")
                cur = f"{ct} "
            cur += item + ", "
        dline = _pack_decl(lines, dline, cur[:-2] + ";")
    if dline:
        lines.append("  " + dline)
    if lf.notes:  # line comments above their statements, the rest at the top
        lf.rescue_notes(len(lf.out))
        lines += ["  " + x for x in loose]
        lines += place_notes([ln for ln in lf.out if ln is not None], lf.notes)
        lines += ["  " + lf.notes[k] for k in lf.pending_notes]  # after the last statement
    else:
        lines += ["  " + x for x in loose]
        lines += [ln for ln in lf.out if ln is not None]
    lines.append("}")
    lines += dafter + vafter
    text = "\n".join(lines) + "\n"
    st = lf.stats
    st.instructions = len(ops)
    st.lines = len(lines)
    st.body_lines = len(lines) - head - 1 - len(dafter) - len(vafter)  # not the `#undef`s
    st.temps = len(lf.temps)
    st.seconds = time.perf_counter() - t0
    return LiftResult(func_index, text, False, "", st)
