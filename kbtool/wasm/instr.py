"""Careful, bounds-checked decoding of single instructions and value types.

This is the slow path: constant expressions in the reader, ``iter_instructions`` for
disassembly views, and the precise diagnosis of a body that the fast decode loop in
:mod:`kbtool.wasm.facts` rejected. It uses the same opcode table.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .errors import WasmFormatError
from .leb import read_sleb, read_uleb
from .opcodes import (
    BYTE_KIND,
    K_BAD,
    K_BLOCK,
    K_BR_ON_CAST,
    K_BR_TABLE,
    K_BYTE,
    K_CALL,
    K_CALL_INDIRECT,
    K_F32,
    K_F64,
    K_GLOBAL,
    K_I32,
    K_I64,
    K_LANE,
    K_MEM,
    K_MEM_LANE,
    K_NONE,
    K_ORD_U32,
    K_ORD_U32X2,
    K_PREFIX,
    K_REF_FUNC,
    K_SELECT_T,
    K_TABLE,
    K_TABLE2,
    K_TRY_TABLE,
    K_TYPE,
    K_U32,
    K_U32X2,
    K_V128,
    KIND,
    MNEMONICS,
    PREFIX_BASE,
    PREFIX_SLOTS,
)

NUM_TYPES = {0x7F: "i32", 0x7E: "i64", 0x7D: "f32", 0x7C: "f64", 0x7B: "v128"}
PACKED_TYPES = {0x78: "i8", 0x77: "i16"}
HEAP_TYPES = {
    0x70: "func",
    0x6F: "extern",
    0x6E: "any",
    0x6D: "eq",
    0x6C: "i31",
    0x6B: "struct",
    0x6A: "array",
    0x69: "exn",
    0x71: "none",
    0x72: "noextern",
    0x73: "nofunc",
    0x74: "noexn",
}
# single-byte reference type shorthands: funcref, externref, ...
REF_SHORT = {b: f"{h}ref" for b, h in HEAP_TYPES.items()}
REF_SHORT[0x71] = "nullref"
REF_SHORT[0x72] = "nullexternref"
REF_SHORT[0x73] = "nullfuncref"
REF_SHORT[0x74] = "nullexnref"

MAX_LOCALS = 50_000  # declared locals per function: the engines' (and wasm-tools') limit
_OP_PREFIX_ATOMIC = PREFIX_BASE[0xFE]
_REF_NULL = 0xD0
_HEAPTYPE_OPS = {_REF_NULL} | {PREFIX_BASE[0xFB] + i for i in (0x14, 0x15, 0x16, 0x17)}


def read_heaptype(data, p: int, end: int) -> tuple[str, int]:
    """A heap type: an abstract one (one byte), ``0x65`` + an abstract one (shared,
    shared-everything-threads; the prefix appears exactly once), ``0x62`` + a type index
    (exact, custom-descriptors) or a type index (s33 >= 0)."""
    if p >= end:
        raise WasmFormatError(p, "heap type", "unexpected end of data")
    b = data[p]
    if b in HEAP_TYPES:
        return HEAP_TYPES[b], p + 1
    if b == 0x65:
        if p + 1 >= end:
            raise WasmFormatError(
                p + 1, "abstract heap type after 'shared' (0x65)", "unexpected end of data"
            )
        b2 = data[p + 1]
        if b2 not in HEAP_TYPES:
            raise WasmFormatError(
                p + 1, "abstract heap type after 'shared' (0x65)", f"got 0x{b2:02x}"
            )
        return f"shared {HEAP_TYPES[b2]}", p + 2
    if b == 0x62:  # (exact $t), custom-descriptors
        v, p2 = read_uleb(data, p + 1, end, 32, "exact type index")
        return f"exact {v}", p2
    v, p2 = read_sleb(data, p, end, 33, "heap type")
    if v < 0:
        hint = ""
        if b in (0x68, 0x75):
            hint = " (stack-switching proposal continuation types are not supported)"
        raise WasmFormatError(p, "heap type", f"unknown heap type 0x{b:02x}{hint}")
    return str(v), p2


def read_valtype(data, p: int, end: int, what: str = "value type") -> tuple[str, int]:
    if p >= end:
        raise WasmFormatError(p, what, "unexpected end of data")
    b = data[p]
    t = NUM_TYPES.get(b) or REF_SHORT.get(b)
    if t is not None:
        return t, p + 1
    if b in (0x63, 0x64):
        if b == 0x63 and p + 1 < end and data[p + 1] in REF_SHORT:
            return REF_SHORT[data[p + 1]], p + 2  # (ref null func) is funcref
        h, p2 = read_heaptype(data, p + 1, end)
        return (f"(ref null {h})" if b == 0x63 else f"(ref {h})"), p2
    if b == 0x65:  # (ref null (shared ht)) shorthand
        h, p2 = read_heaptype(data, p, end)
        return f"(ref null {h})", p2
    raise WasmFormatError(p, what, f"unknown value type 0x{b:02x}")


def read_blocktype(data, p: int, end: int):
    """Returns (blocktype, new_p): "" (empty), a value type text, or an int type index."""
    if p >= end:
        raise WasmFormatError(p, "block type", "unexpected end of data")
    b = data[p]
    if b == 0x40:
        return "", p + 1
    if b in NUM_TYPES or b in REF_SHORT or b in (0x63, 0x64, 0x65):
        return read_valtype(data, p, end, "block type")
    v, p2 = read_sleb(data, p, end, 33, "block type")
    if v < 0:
        raise WasmFormatError(p, "block type", f"unknown block type 0x{b:02x}")
    return v, p2


def _memarg(data, p, end):
    at = p
    align, p = read_uleb(data, p, end, 32, "memarg alignment")
    if align >= 0x80:  # bit 6: a memory index follows; larger values are malformed
        raise WasmFormatError(at, "memarg alignment below 128", f"got {align}")
    mem = 0
    if align & 0x40:
        align &= ~0x40
        mem, p = read_uleb(data, p, end, 32, "memarg memory index")
    offset, p = read_uleb(data, p, end, 64, "memarg offset")
    return align, offset, mem, p


def unsupported_hint(b: int, sub: int | None = None) -> str:
    """Name the proposal an unknown opcode belongs to, when it is a known unsupported one."""
    if b == 0xFB and sub is not None and 0x20 <= sub <= 0x26:
        return " (custom-descriptors proposal instructions are not supported)"
    if 0xE0 <= b <= 0xE6:
        return " (stack-switching proposal instructions are not supported)"
    return ""


def decode_one(data, p: int, end: int):
    """Decode one instruction at ``p`` (bounded by ``end``).

    Returns ``(op_id, new_p, imms)`` where ``imms`` is a tuple of decoded immediates.
    Raises :class:`WasmFormatError` on truncation, LEB overflow or an unknown opcode.
    """
    if p >= end:
        raise WasmFormatError(p, "opcode", "unexpected end of function body")
    start = p
    b = data[p]
    p += 1
    k = BYTE_KIND[b]
    op = b
    if k == K_PREFIX:
        sub, p = read_uleb(data, p, end, 32, f"sub-opcode after prefix 0x{b:02x}")
        if sub >= PREFIX_SLOTS[b] or KIND[PREFIX_BASE[b] + sub] == K_BAD:
            raise WasmFormatError(
                start, "opcode", f"unknown opcode 0x{b:02x} 0x{sub:x}" + unsupported_hint(b, sub)
            )
        op = PREFIX_BASE[b] + sub
        k = KIND[op]
    elif k == K_BAD:
        raise WasmFormatError(start, "opcode", f"unknown opcode 0x{b:02x}" + unsupported_hint(b))
    if k == K_NONE:
        return op, p, ()
    if k == K_U32:
        if op in _HEAPTYPE_OPS:
            h, p = read_heaptype(data, p, end)
            return op, p, (h,)
        v, p = read_uleb(data, p, end, 32, "index")
        return op, p, (v,)
    if k == K_MEM:
        align, offset, mem, p = _memarg(data, p, end)
        return op, p, (align, offset, mem)
    if k == K_I32:
        v, p = read_sleb(data, p, end, 32, "i32 constant")
        return op, p, (v,)
    if k == K_I64:
        v, p = read_sleb(data, p, end, 64, "i64 constant")
        return op, p, (v,)
    if k in (K_GLOBAL, K_CALL, K_REF_FUNC, K_TYPE, K_TABLE):
        v, p = read_uleb(data, p, end, 32, "index")
        return op, p, (v,)
    if k == K_BLOCK:
        bt, p = read_blocktype(data, p, end)
        return op, p, (bt,)
    if k == K_F32:
        if p + 4 > end:
            raise WasmFormatError(p, "f32 constant", "unexpected end of data")
        return op, p + 4, (struct.unpack_from("<f", data, p)[0],)
    if k == K_F64:
        if p + 8 > end:
            raise WasmFormatError(p, "f64 constant", "unexpected end of data")
        return op, p + 8, (struct.unpack_from("<d", data, p)[0],)
    if k == K_BR_TABLE:
        n, p = read_uleb(data, p, end, 32, "br_table label count")
        if n > end - p:
            raise WasmFormatError(p, "br_table labels", "count larger than the body")
        labels = []
        for _ in range(n):
            v, p = read_uleb(data, p, end, 32, "br_table label")
            labels.append(v)
        d, p = read_uleb(data, p, end, 32, "br_table default label")
        return op, p, (labels, d)
    if k == K_CALL_INDIRECT:
        t, p = read_uleb(data, p, end, 32, "type index")
        tab, p = read_uleb(data, p, end, 32, "table index")
        return op, p, (t, tab)
    if k in (K_TABLE2, K_U32X2):
        a, p = read_uleb(data, p, end, 32, "index")
        c, p = read_uleb(data, p, end, 32, "index")
        return op, p, (a, c)
    if k == K_SELECT_T:
        n, p = read_uleb(data, p, end, 32, "select type count")
        if n > end - p:
            raise WasmFormatError(p, "select types", "count larger than the body")
        ts = []
        for _ in range(n):
            t, p = read_valtype(data, p, end)
            ts.append(t)
        return op, p, (ts,)
    if k == K_TRY_TABLE:
        bt, p = read_blocktype(data, p, end)
        n, p = read_uleb(data, p, end, 32, "catch clause count")
        if n > end - p:
            raise WasmFormatError(p, "catch clauses", "count larger than the body")
        catches = []
        for _ in range(n):
            if p >= end:
                raise WasmFormatError(p, "catch clause kind", "unexpected end of data")
            ck = data[p]
            p += 1
            if ck > 3:
                raise WasmFormatError(p - 1, "catch clause kind 0..3", f"got {ck}")
            tag = None
            if ck in (0, 1):
                tag, p = read_uleb(data, p, end, 32, "tag index")
            lab, p = read_uleb(data, p, end, 32, "label")
            catches.append((ck, tag, lab))
        return op, p, (bt, catches)
    if k in (K_LANE, K_BYTE):
        if p >= end:
            raise WasmFormatError(p, "immediate byte", "unexpected end of data")
        return op, p + 1, (data[p],)
    if k == K_MEM_LANE:
        align, offset, mem, p = _memarg(data, p, end)
        if p >= end:
            raise WasmFormatError(p, "lane index", "unexpected end of data")
        return op, p + 1, (align, offset, mem, data[p])
    if k == K_V128:
        if p + 16 > end:
            raise WasmFormatError(p, "16 immediate bytes", "unexpected end of data")
        return op, p + 16, (bytes(data[p : p + 16]),)
    if k == K_ORD_U32 or k == K_ORD_U32X2:
        if p >= end:
            raise WasmFormatError(p, "memory ordering", "unexpected end of data")
        order = data[p]
        if order > 1:
            raise WasmFormatError(p, "memory ordering 0 (seqcst) or 1 (acqrel)", f"got {order}")
        a, p = read_uleb(data, p + 1, end, 32, "index")
        if k == K_ORD_U32:
            return op, p, (order, a)
        c, p = read_uleb(data, p, end, 32, "field index")
        return op, p, (order, a, c)
    if k == K_BR_ON_CAST:
        if p >= end:
            raise WasmFormatError(p, "cast flags", "unexpected end of data")
        flags = data[p]
        lab, p = read_uleb(data, p + 1, end, 32, "label")
        h1, p = read_heaptype(data, p, end)
        h2, p = read_heaptype(data, p, end)
        return op, p, (flags, lab, h1, h2)
    raise AssertionError(f"unhandled kind {k}")  # pragma: no cover


def format_imms(op: int, imms: tuple, type_text=None) -> str:
    """Text of the immediates, close to ``wasm-objdump -d`` (e.g. ``"2 16796224"``)."""
    if not imms:
        return ""
    k = KIND[op]
    if k == K_BLOCK:
        bt = imms[0]
        if isinstance(bt, int):
            return f"type[{bt}]" + (f" {type_text(bt)}" if type_text else "")
        return bt
    if k in (K_MEM, K_MEM_LANE):
        align, offset, mem = imms[:3]
        s = f"{align} {offset}" if not mem else f"{align} {offset} mem[{mem}]"
        return s + (f" {imms[3]}" if k == K_MEM_LANE else "")
    if k == K_BR_TABLE:
        labels, d = imms
        return " ".join(str(x) for x in [*labels, d])
    if k == K_CALL_INDIRECT:
        t, tab = imms
        return f"{tab} (type {t})" if not type_text else f"{tab} (type {t}) {type_text(t)}"
    if k == K_SELECT_T:
        return " ".join(imms[0])
    if k == K_TRY_TABLE:
        bt, catches = imms
        names = ("catch", "catch_ref", "catch_all", "catch_all_ref")
        parts = [bt if isinstance(bt, str) else f"type[{bt}]"] if bt != "" else []
        for ck, tag, lab in catches:
            parts.append(f"{names[ck]}{'' if tag is None else ' ' + str(tag)} {lab}")
        return " ".join(parts)
    if k == K_V128:
        return "0x" + " 0x".join(
            f"{int.from_bytes(imms[0][i : i + 4], 'little'):08x}" for i in range(0, 16, 4)
        )
    if k in (K_F32, K_F64):
        return repr(imms[0])
    return " ".join(str(x) for x in imms)


def iter_instructions(
    data, body_start: int, body_end: int, skip_locals: bool = True
) -> Iterator[tuple[int, int, str]]:
    """Yield ``(file_offset, op_id, immediates_text)`` for each instruction of one body.

    ``body_start``/``body_end`` are the file offsets of ``Module.code[i]``. The local
    declarations at the start of the body are skipped (``skip_locals=False`` when
    ``body_start`` already points at the first instruction). Raises WasmFormatError.
    """
    p = skip_local_decls(data, body_start, body_end) if skip_locals else body_start
    while p < body_end:
        op, p2, imms = decode_one(data, p, body_end)
        yield p, op, format_imms(op, imms)
        p = p2


def disassemble(data, body_start: int, body_end: int) -> list[str]:
    """Lines ``"mnemonic imms"`` of one body (convenience for views and tests)."""
    out = []
    for _off, op, imm in iter_instructions(data, body_start, body_end):
        out.append(f"{MNEMONICS[op]} {imm}" if imm else MNEMONICS[op])
    return out


def read_local_decls(data, p: int, end: int) -> tuple[list[tuple[int, str]], int]:
    """Local declarations of a body: ``([(count, valtype_text)], p_after)``."""
    n, p = read_uleb(data, p, end, 32, "local declaration count")
    if n > end - p:
        raise WasmFormatError(p, "local declarations", "count larger than the body")
    out = []
    total = 0
    for _ in range(n):
        at = p
        c, p = read_uleb(data, p, end, 32, "local count")
        total += c
        if total > MAX_LOCALS:
            raise WasmFormatError(
                at, f"at most {MAX_LOCALS} locals per function", f"{total} declared (engine limit)"
            )
        t, p = read_valtype(data, p, end, "local type")
        out.append((c, t))
    return out, p


def skip_local_decls(data, p: int, end: int) -> int:
    return read_local_decls(data, p, end)[1]


def check_body(data, body_start: int, body_end: int) -> None:
    """Decode one body carefully and raise WasmFormatError at the first problem
    (used to diagnose a body the fast decoder rejected). The function's final ``end``
    must close the body: nothing may follow it, and blocks must balance."""
    p = skip_local_decls(data, body_start, body_end)
    last = -1
    depth = 1
    while p < body_end:
        op, p2, _ = decode_one(data, p, body_end)
        if op in (0x02, 0x03, 0x04, 0x06, 0x1F):
            depth += 1
        elif op == 0x0B or op == 0x18:  # end; delegate closes a try
            depth -= 1
            if depth == 0 and p2 != body_end:
                raise WasmFormatError(
                    p2, "end of function body", "instructions after the function's final 'end'"
                )
        last = op
        p = p2
    if p != body_end:
        raise WasmFormatError(body_end, "end of function body", "instruction overruns the body")
    if last != 0x0B:
        raise WasmFormatError(body_end, "'end' opcode at the end of the function body")
    if depth != 0:
        raise WasmFormatError(
            body_end, "'end' opcode at the end of the function body", "unbalanced blocks"
        )
