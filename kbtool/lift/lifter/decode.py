"""The body decoder (the lifter's hot loop) and the per-op stack effects the lookahead
passes use.
"""

from __future__ import annotations

import struct
from typing import Final

from kbtool.wasm.instr import MAX_LOCALS, NUM_TYPES, decode_one, read_local_decls
from kbtool.wasm.opcodes import (
    BYTE_KIND,
    K_BYTE,
    K_LANE,
    K_MEM,
    K_MEM_LANE,
    K_NONE,
    K_TABLE,
    K_TABLE2,
    K_U32,
    K_U32X2,
    K_V128,
    KIND,
    MNEMONICS,
    PREFIX_BASE,
    PREFIX_SLOTS,
)

from ..ctable import CTABLE
from .base import MAX_INSTRUCTIONS, LiftError, _Budget, i64
from .opnames import (
    OP_BLOCK,
    OP_BR,
    OP_BR_IF,
    OP_BR_ON_NON_NULL,
    OP_BR_ON_NULL,
    OP_BR_TABLE,
    OP_CALL,
    OP_CALL_INDIRECT,
    OP_CATCH,
    OP_CATCH_ALL,
    OP_DELEGATE,
    OP_DROP,
    OP_ELSE,
    OP_END,
    OP_F32_CONST,
    OP_F64_CONST,
    OP_GLOBAL_GET,
    OP_GLOBAL_SET,
    OP_I32_ADD,
    OP_I32_CONST,
    OP_I32_LOAD,
    OP_I32_STORE,
    OP_I32_SUB,
    OP_I64_CONST,
    OP_IF,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
    OP_LOOP,
    OP_MEMORY_GROW,
    OP_MEMORY_SIZE,
    OP_RETURN,
    OP_RETURN_CALL,
    OP_SELECT,
    OP_TRY,
    OP_TRY_TABLE,
    OP_UNREACHABLE,
)

# ----------------------------------------------------------------------------- entry


def _local_decls(data: bytes, start: i64, end: i64) -> tuple[list[tuple[int, str]], int]:
    """``read_local_decls(data, start, end)``: a count and entries of one-byte LEBs with
    numeric types are read here (no call into the interpreted reader); anything else,
    and any doubt, goes through that reader (its values and its errors)."""
    if start < end:
        n: i64 = data[start]
        p: i64 = start + 1
        if n < 0x80 and n <= end - p and p + 2 * n <= end:
            out: list[tuple[int, str]] = []
            for _ in range(n):
                c: i64 = data[p]
                t = _NUM_TYPES.get(data[p + 1]) if c < 0x80 else None
                if t is None:
                    return read_local_decls(data, start, end)
                out.append((c, t))
                p += 2
            return out, p  # (at most 127 x 127 locals: under MAX_LOCALS)
    return read_local_decls(data, start, end)


def _decode(data: bytes, start: int, end: i64, budget: _Budget) -> tuple:
    """Decode a body into two parallel lists, opcodes and immediates (a tuple each; ``()``
    when none; an ``f32.const`` carries ``(value, raw bits)``), plus the indices of the
    control instructions and what occurs, as bits: 1 an ``i32.add`` or ``i32.sub``, 2 a
    ``global.get`` (a shadow-stack frame's prologue needs both; found here, no scan of the
    opcodes after). No offsets and no per-instruction tuple: they cost allocations
    in the hottest loop and no later pass needs them.

    Inline fast paths cover the common shapes with short LEBs (no immediate;
    local/global/label/call index; ``i32.const``; memarg; empty block type); anything else
    (and any shape near ``end``) goes through the shared careful decoder.
    """
    p: i64  # i64 here and below: native ints in the loop (mypyc), no tag checks
    decls, p = _local_decls(data, start, end)
    arith = False  # an i32.add / i32.sub seen (a shadow-stack frame needs one)
    gget = False  # a global.get seen (... and one)
    ops: list[int] = []
    args: list[tuple] = []
    ctrl: list[int] = []
    fast = _FAST_BYTES
    is_ctrl = _CTRL_BYTES
    one_u = _ONE_U
    one_s = _ONE_S
    mem = _MEMARG
    n: i64 = 0
    lim: i64 = end - 3  # fast paths read at most three bytes after the opcode
    while p < end:
        b: i64 = data[p]
        k: i64 = fast[b]
        imms: tuple | None = None  # set by a fast path, else the careful decoder runs
        q: i64 = p
        if k == 1:
            imms = ()
            q = p + 1
            if b == OP_I32_ADD or b == OP_I32_SUB:
                arith = True
        elif k and p < lim:
            b1: i64 = data[p + 1]
            b2: i64 = data[p + 2]
            if k == 2:  # one uleb
                if b == OP_GLOBAL_GET:
                    gget = True
                if b1 < 0x80:
                    imms = one_u[b1]  # shared one-value tuples: no allocation
                    q = p + 2
                elif b2 < 0x80:
                    imms = ((b1 & 0x7F) | (b2 << 7),)
                    q = p + 3
                elif data[p + 3] < 0x80:  # three bytes: 21 bits
                    imms = ((b1 & 0x7F) | ((b2 & 0x7F) << 7) | (data[p + 3] << 14),)
                    q = p + 4
            elif k == 3:  # i32.const, i64.const (a short signed LEB)
                if b1 < 0x80:
                    imms = one_s[b1]  # (b1 - 0x80 if b1 & 0x40 else b1,), shared
                    q = p + 2
                elif b2 < 0x80:
                    v: i64 = (b1 & 0x7F) | (b2 << 7)
                    imms = (v - 0x4000 if v & 0x2000 else v,)
                    q = p + 3
                elif data[p + 3] < 0x80:
                    v = (b1 & 0x7F) | ((b2 & 0x7F) << 7) | (data[p + 3] << 14)
                    imms = (v - 0x200000 if v & 0x100000 else v,)
                    q = p + 4
                elif p + 4 < end and data[p + 4] < 0x80:  # four bytes: 28 bits
                    v = (
                        (b1 & 0x7F)
                        | ((b2 & 0x7F) << 7)
                        | ((data[p + 3] & 0x7F) << 14)
                        | (data[p + 4] << 21)
                    )
                    imms = (v - 0x10000000 if v & 0x8000000 else v,)
                    q = p + 5
                elif p + 5 < end and (data[p + 5] < 8 or 0x78 <= data[p + 5] < 0x80):
                    # five bytes whose last one only extends the sign (valid for i32 and i64)
                    v = (
                        (b1 & 0x7F)
                        | ((b2 & 0x7F) << 7)
                        | ((data[p + 3] & 0x7F) << 14)
                        | ((data[p + 4] & 0x7F) << 21)
                        | (data[p + 5] << 28)
                    )
                    imms = (v - 0x800000000 if v & 0x400000000 else v,)
                    q = p + 6
            elif k == 4:  # memarg: align < 0x40 (no memory index), offset
                if b1 < 0x40:
                    if b2 < 0x80:
                        imms = mem[b1 * 128 + b2] if b1 < 4 else (b1, b2, 0)
                        q = p + 3
                    elif data[p + 3] < 0x80:
                        imms = (b1, (b2 & 0x7F) | (data[p + 3] << 7), 0)
                        q = p + 4
                    elif p + 4 < end and data[p + 4] < 0x80:  # a three-byte offset
                        v = (b2 & 0x7F) | ((data[p + 3] & 0x7F) << 7) | (data[p + 4] << 14)
                        imms = (b1, v, 0)
                        q = p + 5
            elif b1 == 0x40:  # block / loop / if with an empty block type
                imms = _EMPTY_BT
                q = p + 2
            elif 0x7C <= b1 <= 0x7F:  # ... or one numeric result
                imms = _RESULT_BT[b1 - 0x7C]
                q = p + 2
        if imms is None:
            if b == OP_F32_CONST and p + 5 <= end:  # the value and its raw bits (a NaN payload)
                imms = (
                    _F32.unpack_from(data, p + 1)[0],
                    int.from_bytes(data[p + 1 : p + 5], "little"),
                )
                q = p + 5
                ops.append(b)
            else:
                if b >= 0xFC:  # a prefixed op (misc, SIMD, atomics): its id is not b
                    op, imms, q = _prefixed(data, p, end)
                else:
                    op = b
                    imms, q = _rare(data, p, end)
                if q >= 0:
                    ops.append(op)
                else:
                    op, q, imms = decode_one(data, p, end)
                    if op == OP_F32_CONST:  # f32.const: keep the raw bits (a NaN payload)
                        imms = (imms[0], int.from_bytes(data[p + 1 : p + 5], "little"))
                    ops.append(op)
                if op == OP_GLOBAL_GET:
                    gget = True
        else:
            ops.append(b)
        args.append(imms)
        p = q
        if is_ctrl[b]:
            ctrl.append(n)
        n += 1
        if not n & 0xFFF:
            if n > MAX_INSTRUCTIONS:
                raise LiftError(f"more than {MAX_INSTRUCTIONS} instructions")
            budget.spend(0)
    return decls, ops, args, ctrl, (1 if arith else 0) | (2 if gget else 0)


def _short_u(data: bytes, q: int, end: int) -> tuple[int, int]:
    """A one- or two-byte unsigned LEB at ``q`` and the offset after it; (0, -1): another
    shape (the careful decoder reads it)."""
    if q < end:
        c = data[q]
        if c < 0x80:
            return c, q + 1
        if q + 1 < end and data[q + 1] < 0x80:
            return (c & 0x7F) | (data[q + 1] << 7), q + 2
    return 0, -1


def _rare(data: bytes, p: int, end: int) -> tuple[tuple, int]:
    """The immediates of a ``br_table`` (labels of one or two bytes), ``call_indirect``,
    long ``i64.const`` (nine bytes at most) or ``f64.const`` at ``p`` and the offset after
    it, as the careful decoder (``kbtool.wasm.instr.decode_one``, plain Python, ~20 k
    instructions a call) reads them; ((), -1): another shape, and it reads them."""
    b = data[p]
    q = p + 1
    if b == OP_BR_TABLE:
        n, q = _short_u(data, q, end)
        if q < 0 or n > end - q:
            return (), -1
        labels: list[int] = []
        for _ in range(n):
            v, q = _short_u(data, q, end)
            if q < 0:
                return (), -1
            labels.append(v)
        d, q = _short_u(data, q, end)
        if q < 0:
            return (), -1
        return (labels, d), q
    if b == OP_CALL_INDIRECT:
        t, q = _short_u(data, q, end)
        if q < 0:
            return (), -1
        tab, q = _short_u(data, q, end)
        if q < 0:
            return (), -1
        return (t, tab), q
    if b == OP_I64_CONST:  # a signed LEB of nine bytes at most: 63 bits, no overflow check
        v = 0
        shift = 0
        while q < end and shift < 63:
            c = data[q]
            q += 1
            v = v | ((c & 0x7F) << shift)
            shift += 7
            if c < 0x80:
                if v & (1 << (shift - 1)):
                    v = v - (1 << shift)
                return (v,), q
        return (), -1
    if b == OP_F64_CONST and q + 8 <= end:
        return (_F64.unpack_from(data, q)[0],), q + 8
    return (), -1


def _prefixed(data: bytes, p: int, end: int) -> tuple[int, tuple, int]:
    """A ``0xFC``/``0xFD``/``0xFE`` op at ``p`` whose sub-opcode and index immediates are
    one- or two-byte LEBs (memargs: alignment below 0x40, no memory index): its op id, its
    immediates and the offset after it, as the careful decoder reads them; (0, (), -1):
    another shape, and the careful decoder reads it (and raises where it must)."""
    b = data[p] - 0xFC
    if b < 0 or b > 2:
        return 0, (), -1
    sub, q = _short_u(data, p + 1, end)
    if q < 0 or sub >= _PSLOTS[b]:
        return 0, (), -1
    op = _PBASE[b] + sub
    k = _PSHAPE[op]
    if k == 1:
        return op, (), q
    if k == 2:
        v, q = _short_u(data, q, end)
        return (op, (v,), q) if q >= 0 else (0, (), -1)
    if k == 3:
        v, q = _short_u(data, q, end)
        if q < 0:
            return 0, (), -1
        c, q = _short_u(data, q, end)
        return (op, (v, c), q) if q >= 0 else (0, (), -1)
    if k == 4 or k == 6:  # memarg (+ lane byte)
        if q >= end or data[q] >= 0x40:
            return 0, (), -1
        align = data[q]
        off, q = _short_u(data, q + 1, end)
        if q < 0:
            return 0, (), -1
        if k == 4:
            return op, (align, off, 0), q
        if q >= end:
            return 0, (), -1
        return op, (align, off, 0, data[q]), q + 1
    if k == 5:  # lane / reserved byte
        if q >= end:
            return 0, (), -1
        return op, (data[q],), q + 1
    if k == 7:  # 16 bytes
        if q + 16 > end:
            return 0, (), -1
        raw = data[q : q + 16]
        return op, (raw if type(raw) is bytes else bytes(raw),), q + 16
    return 0, (), -1


def _prefix_shapes() -> bytes:
    """Per op id, the shape :func:`_prefixed` reads for the ``0xFC``/``0xFD``/``0xFE`` ops:
    1 none, 2 one index, 3 two indices, 4 memarg, 5 one byte, 6 memarg + lane, 7 16 bytes;
    0 the careful decoder (other kinds, other prefixes)."""
    shape = {K_NONE: 1, K_U32: 2, K_TABLE: 2, K_U32X2: 3, K_TABLE2: 3, K_MEM: 4}
    shape.update({K_LANE: 5, K_BYTE: 5, K_MEM_LANE: 6, K_V128: 7})
    out = bytearray(len(KIND))
    for pb in (0xFC, 0xFD, 0xFE):
        for op in range(PREFIX_BASE[pb], PREFIX_BASE[pb] + PREFIX_SLOTS[pb]):
            out[op] = shape.get(KIND[op], 0)
    return bytes(out)


def _stack_effects() -> list:
    """(pops, pushes) per op for the tee-folding lookahead; pushes -1: control flow that
    leaves values behind (no fold), -2: control flow consuming its operand as a condition;
    None: unknown (no fold). Calls (OP_CALL) are looked up by type."""
    eff: list = [None] * len(MNEMONICS)
    for op, ent in enumerate(CTABLE):
        if ent is not None:
            eff[op] = (len(ent[1]), len(ent[2]))
    for op in range(OP_I32_LOAD, OP_I32_STORE):
        eff[op] = (1, 1)
    for op in range(OP_I32_STORE, OP_MEMORY_SIZE):
        eff[op] = (2, 0)
    for op in (
        OP_GLOBAL_GET,
        OP_MEMORY_SIZE,
        OP_I32_CONST,
        OP_I64_CONST,
        OP_F32_CONST,
        OP_F64_CONST,
    ):
        eff[op] = (0, 1)
    eff[OP_GLOBAL_SET] = (1, 0)
    eff[OP_LOCAL_SET] = (1, 0)
    eff[OP_LOCAL_TEE] = (1, 1)
    eff[OP_MEMORY_GROW] = (1, 1)
    eff[OP_DROP] = (1, 0)
    eff[OP_SELECT] = (3, 1)  # select: C evaluates one arm only, never fold into it
    for op in (OP_BR_IF, OP_IF, OP_BR_TABLE):
        eff[op] = (1, -2)
    for op in (OP_UNREACHABLE, OP_BLOCK, OP_LOOP, OP_ELSE, OP_END, OP_BR, OP_RETURN):
        eff[op] = (0, -1)
    return eff


_STACK_EFFECT: Final = _stack_effects()
#: the numeric value types by their byte (the careful reader's own table) for
#: :func:`_local_decls`, whose fast path declares at most 127 x 127 locals
_NUM_TYPES: Final[dict[int, str]] = NUM_TYPES
if 127 * 127 > MAX_LOCALS:
    raise RuntimeError("decode: the local declarations' fast path could pass MAX_LOCALS")


def _effect_bytes(col: int, none: int, add: int) -> bytes:
    """One column of :data:`_STACK_EFFECT` as a byte per op (plus ``add``; ``none`` for an
    unknown op): read natively by the tee-folding lookahead (no tuple, no boxed int)."""
    return bytes(none if e is None else e[col] + add for e in _STACK_EFFECT)


#: pops per op, 255 unknown; pushes per op plus 2 (so -2 and -1 fit a byte)
_EFF_POPS: Final = _effect_bytes(0, 255, 0)
_EFF_PUSHES: Final = _effect_bytes(1, 0, 2)

#: single-byte opcodes without immediates
_NO_IMM: Final = frozenset(b for b in range(0xFB) if BYTE_KIND[b] == K_NONE)
#: control instructions the structurer looks at (openers, else/catch, ends, branches)
#: (by first byte; 0xD5/0xD6 br_on_null/non_null, 0xFB GC ops incl. br_on_cast)
_CTRL: Final = frozenset(
    {
        OP_BLOCK,
        OP_LOOP,
        OP_IF,
        OP_ELSE,
        OP_TRY,
        OP_CATCH,
        OP_END,
        OP_BR,
        OP_BR_IF,
        OP_BR_TABLE,
        OP_DELEGATE,
        OP_CATCH_ALL,
        OP_TRY_TABLE,
        OP_BR_ON_NULL,
        OP_BR_ON_NON_NULL,
        0xFB,  # the GC prefix byte (br_on_cast)
    }
)
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
#: a block type's one numeric result, by its byte less 0x7C
_RESULT: Final = ("f64", "f32", "i64", "i32")
# Immediates the fast paths share instead of making a tuple per instruction (a tuple is
# immutable; nothing compares immediates by identity): an empty block type or one result,
# a one-byte index, a one-byte i32/i64.const, a memarg of alignment < 4 and a one-byte
# offset.
_EMPTY_BT: Final[tuple] = ("",)
_RESULT_BT: Final[tuple[tuple, ...]] = tuple((r,) for r in _RESULT)
_ONE_U: Final[tuple[tuple, ...]] = tuple((v,) for v in range(128))
_ONE_S: Final[tuple[tuple, ...]] = tuple((v - 0x80 if v & 0x40 else v,) for v in range(128))
_MEMARG: Final[tuple[tuple, ...]] = tuple((a, o, 0) for a in range(4) for o in range(128))
#: fast decode shape per first byte: 1 none, 2 one uleb, 3 i32/i64.const, 4 memarg, 5 block
_FAST: Final = [0] * 256
for _b in _NO_IMM:
    _FAST[_b] = 1
for _b in (
    OP_BR,
    OP_BR_IF,
    OP_CALL,
    OP_RETURN_CALL,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
    OP_GLOBAL_GET,
    OP_GLOBAL_SET,
):
    _FAST[_b] = 2
_FAST[OP_I32_CONST] = 3
_FAST[OP_I64_CONST] = 3
for _b in range(OP_I32_LOAD, OP_MEMORY_SIZE):
    _FAST[_b] = 4
for _b in (OP_BLOCK, OP_LOOP, OP_IF):
    _FAST[_b] = 5
_FAST_BYTES: Final = bytes(_FAST)
_CTRL_BYTES: Final = bytes(1 if _b in _CTRL else 0 for _b in range(256))
_PSHAPE: Final = _prefix_shapes()
#: 0xFC, 0xFD, 0xFE: each prefix's first op id and its number of sub-opcodes
_PBASE: Final[tuple[int, int, int]] = (PREFIX_BASE[0xFC], PREFIX_BASE[0xFD], PREFIX_BASE[0xFE])
_PSLOTS: Final[tuple[int, int, int]] = (
    PREFIX_SLOTS[0xFC],
    PREFIX_SLOTS[0xFD],
    PREFIX_SLOTS[0xFE],
)
