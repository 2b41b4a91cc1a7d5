"""Pass 2: :class:`_Lifter`, the walk over the instructions: inline fast paths for the
commonest ops, then one dispatch to the handlers of the other parts.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from kbtool.wasm.opcodes import MNEMONICS

from ..ctable import CTABLE
from .base import (
    _E,
    _GC_OPS,
    _LOAD_CT,
    _OPENERS,
    _STORE_CT,
    F_CALL,
    F_GLOB,
    F_MEM,
    LiftError,
    _f32_text,
    _f64_text,
    _i64_text,
    _merge,
    _p,
)
from .caseplace import place_cases
from .core import STACK_FLOOR, _Frame
from .gc import _Gc
from .gotoless import tidy_gotos
from .opnames import (
    OP_BLOCK,
    OP_BR,
    OP_BR_IF,
    OP_BR_TABLE,
    OP_CALL,
    OP_CALL_INDIRECT,
    OP_CALL_REF,
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
    OP_I8X16_SHUFFLE,
    OP_I32_CONST,
    OP_I32_STORE,
    OP_I64_CONST,
    OP_IF,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
    OP_LOOP,
    OP_MEMORY_GROW,
    OP_MEMORY_SIZE,
    OP_NOP,
    OP_REF_AS_NON_NULL,
    OP_REF_EQ,
    OP_REF_FUNC,
    OP_REF_IS_NULL,
    OP_REF_NULL,
    OP_RETHROW,
    OP_RETURN,
    OP_RETURN_CALL,
    OP_RETURN_CALL_INDIRECT,
    OP_RETURN_CALL_REF,
    OP_SELECT,
    OP_SELECT_T,
    OP_TABLE_GET,
    OP_TABLE_SET,
    OP_THROW,
    OP_THROW_REF,
    OP_UNREACHABLE,
    OP_V128_CONST,
)
from .structure import _Blk

_MEMOPS: Final = frozenset(i for i, n in enumerate(MNEMONICS) if n in _LOAD_CT or n in _STORE_CT)
#: per op: (C type, wasm result type, widened to int64_t) for plain loads, else None (typed:
#: the walk unpacks a native tuple, mypyc's generic iteration otherwise)
_LOAD_INFO: Final[list[tuple[str, str, bool] | None]] = [None] * len(MNEMONICS)
for _op, _n in enumerate(MNEMONICS):
    if _n in _LOAD_CT:
        _LOAD_INFO[_op] = (_LOAD_CT[_n], _n[:3], _n[:3] == "i64" and _LOAD_CT[_n] != "int64_t")

#: per op, the inline path of :meth:`_Lifter.run`: 1 local.get, 2 table op, 3 plain load,
#: 4 i32.const, 0 a handler
_RUN_KIND: Final = [0] * len(MNEMONICS)
_RUN_KIND[OP_LOCAL_GET] = 1
_RUN_KIND[OP_I32_CONST] = 4
for _op in range(len(MNEMONICS)):
    if CTABLE[_op] is not None:
        _RUN_KIND[_op] = 2
    elif _LOAD_INFO[_op] is not None:
        _RUN_KIND[_op] = 3
#: ... and the direct calls after it: 5 local.set/tee, 6 call, 7 block/loop/if, 8 end,
#: 9 else, 10 br, 11 drop, 12 select, 13 global.get, 14 br_if, 15 store; 0 :meth:`step`
for _k, _ops in (
    (5, (OP_LOCAL_SET, OP_LOCAL_TEE)),
    (6, (OP_CALL,)),
    (7, (OP_BLOCK, OP_LOOP, OP_IF)),
    (8, (OP_END,)),
    (9, (OP_ELSE,)),
    (10, (OP_BR,)),
    (11, (OP_DROP,)),
    (12, (OP_SELECT,)),
    (13, (OP_GLOBAL_GET,)),
    (14, (OP_BR_IF,)),
    (15, tuple(range(OP_I32_STORE, OP_MEMORY_SIZE))),
):
    for _op in _ops:
        assert _RUN_KIND[_op] == 0
        _RUN_KIND[_op] = _k
_RUN_KINDS: Final = bytes(_RUN_KIND)
#: the constants 0..255 (the walk's fast path for a small ``i32.const``): one shared
#: expression each, as ``lget`` shares a local's (no pass changes an expression it did not
#: make: every attribute write in the lifter is on a new ``_E``)
_SMALL_E: Final[list[_E]] = [_E(str(_v), 0, "i32", 0, (), None, _v) for _v in range(256)]


def _v128_text(raw: bytes) -> str:
    """``v128_const(...)`` of 16 immediate bytes: four little-endian 32-bit words, each as
    ``0x%08xu`` (the bytes reversed in hex are the words from the last one, no per-word
    format call)."""
    text = _V128_TEXT.get(raw)
    if text is None:
        h = raw[::-1].hex()
        text = f"v128_const(0x{h[24:]}u, 0x{h[16:24]}u, 0x{h[8:16]}u, 0x{h[:8]}u)"
        if len(_V128_TEXT) < 65536:  # constants and shuffle masks repeat: one text each
            _V128_TEXT[raw] = text
    return text


_V128_TEXT: Final[dict[bytes, str]] = {}


class _Lifter(_Gc):
    # -- the walk
    def run(
        self,
        ops: list[int],
        args: list[tuple],
        blocks: list[_Blk],
        open_at: dict[int, int],
        locals_c: list[str],
        local_types: list[str],
        ftype: Any,
    ) -> None:
        fr = _Frame(blocks[0], "func", (), ftype.results, STACK_FLOOR)
        self.frames.append(fr)
        self.locals_c = locals_c
        self.local_types = local_types
        self.blocks = blocks
        self.end_of = {b.end: k for k, b in enumerate(blocks) if k}
        self.ops = ops
        self.args = args
        self.open_at = open_at
        n = len(ops)
        budget = self.budget
        ctable = CTABLE
        stack = self.stack
        nloc = len(locals_c)
        pend = self.pend
        lget: list[_E | None] = [
            None
        ] * nloc  # one immutable expression per local, made on first use
        self.lget = lget
        loads = _LOAD_INFO
        frames = self.frames
        kinds = _RUN_KINDS
        dead = False  # mirrors self.dead, which only the handlers below change
        note_order = sorted(self.note_at)
        note_k = 0
        next_note = note_order[0] if note_order else -1
        for i in range(n):
            op = ops[i]
            imms = args[i]
            if i == next_note:  # a line comment on this instruction: above its statement
                self.pending_notes.extend(self.note_at[i])
                note_k += 1
                next_note = note_order[note_k] if note_k < len(note_order) else -1
            if not i & 0x3FF:
                budget.spend(0x400)
            if not dead:
                # fast paths for the commonest instructions
                k = kinds[op]
                if k == 1:  # local.get
                    x: int = imms[0]
                    if x >= nloc:
                        raise LiftError(f"local index {x} out of range")
                    if pend and x in pend:
                        self.spill_pending(x)
                    e = lget[x]
                    if e is None:
                        e = lget[x] = self.local_e(x)
                    stack.append(e)
                    continue
                if k == 2:
                    self.table_op(op, ctable[op], imms)
                    continue
                if k == 3:
                    ld = loads[op]
                    assert ld is not None
                    if len(stack) <= frames[-1].height:
                        raise LiftError("value stack underflow")
                    base = stack.pop()
                    if self.calls_pending():
                        self.spill_flags(F_CALL)  # wasm reads after the call; C must too
                    ct, ty, widen = ld
                    self.cur = i
                    text = self.mem_ptr(base, imms[1], ct)
                    prec = 2 if text[0] == "*" or text[0] == "(" else 0
                    narrow = None
                    if widen:
                        narrow = (text, prec, text, prec)  # C widens it where it meets an i64
                        text = f"(int64_t){text}"
                        prec = 2
                    # a zero-extended load (uint8_t/uint16_t/uint32_t into i64) is never negative
                    e = _E(text, prec, ty, base.fl | F_MEM, base.locs, nn=ct[0] == "u")
                    e.w = narrow
                    stack.append(e)
                    continue
                if k == 4:
                    v: int = imms[0]
                    if 0 <= v < 256:
                        stack.append(_SMALL_E[v])
                        continue
            else:
                if op in _OPENERS:
                    self.dead_depth += 1
                    continue
                if op in (OP_END, OP_DELEGATE):
                    if self.dead_depth:
                        self.dead_depth -= 1
                        continue
                elif op in (OP_ELSE, OP_CATCH, OP_CATCH_ALL):
                    if self.dead_depth:
                        continue
                else:
                    continue
            self.cur = i
            k = kinds[op]
            if k == 5:  # local.set / local.tee
                self.set_local(imms[0], self.pop(), op == OP_LOCAL_TEE)
            elif k == 8:
                self.do_end(i)
            elif k == 14:
                self.br_if(i, imms[0])
            elif k == 6:  # call
                ft = self.func_types
                t = ft[imms[0]] if imms[0] < len(ft) else None
                if t is None:
                    raise LiftError(f"call to function {imms[0]} out of range or not a func type")
                self.do_call(self.fname(imms[0]), t, False)
            elif k == 7:
                self.open_block(i, op, imms)
            elif k == 15:
                self.mem_op(op, imms)
            elif k == 4:
                self.push(self.i32_const(imms[0]))
            elif k == 10:
                self.do_br(imms[0])
            elif k == 13:
                self.global_get(imms[0])
            elif k == 11:
                self.do_drop()
            elif k == 12:
                self.do_select()
            elif k == 9:
                self.do_else()
            else:
                self.step(i, op, imms)
            dead = self.dead
            if not frames:
                self.place_cases()
                return

    def place_cases(self) -> None:
        """Case bodies into their ``case`` (:mod:`.caseplace`); the frame-pointer lines
        follow their statements. Without a ``goto`` (each one written is counted) there is
        no trampoline: the pass is not run."""
        if not self.stats.gotos:
            return
        # what the scans read of each line (a line's text decides it), shared by the passes
        memo: dict[str, tuple[str, bool, int, str, list[str]]] = {}
        for rewrite in (place_cases, tidy_gotos):
            out, gotos, labels, where = rewrite(self.out, self.budget, memo)
            if out is not self.out:
                self.out = out
                self.fused = [where[k] for k in self.fused if where[k] >= 0]
                self.stats.gotos -= gotos
                self.stats.labels -= labels
            if not self.stats.gotos:
                return

    def step(self, i: int, op: int, imms: tuple) -> None:  # noqa: C901 - one dispatch over opcodes
        if op == OP_LOCAL_GET:  # local.get
            x = imms[0]
            self.local(x)  # range check
            if x in self.pend:
                self.spill_pending(x)
            self.push(self.local_e(x))
        elif op == OP_LOCAL_SET or op == OP_LOCAL_TEE:  # local.set / tee
            self.set_local(imms[0], self.pop(), op == OP_LOCAL_TEE)
        elif op in _MEMOPS:
            self.mem_op(op, imms)
        elif op == OP_I32_CONST:
            v = imms[0]
            self.push(self.i32_const(v))
        elif op == OP_I64_CONST:
            v = imms[0]
            self.push(_E(_i64_text(v), 0 if v >= 0 else 2, "i64", const=v))
        elif op == OP_F32_CONST:
            bits = imms[1]  # the raw bits, kept by _decode (a NaN's payload survives)
            txt = _f32_text(imms[0], bits)
            self.push(_E(txt, 0 if not txt.startswith("-") else 2, "f32", const=imms[0]))
        elif op == OP_F64_CONST:
            txt = _f64_text(imms[0])
            self.push(_E(txt, 0 if not txt.startswith("-") else 2, "f64", const=imms[0]))
        elif op == OP_GLOBAL_GET:
            self.global_get(imms[0])
        elif op == OP_GLOBAL_SET:
            g = imms[0]
            v = self.pop()
            self.spill_flags(F_GLOB | F_CALL)
            self.emit(f"{self.gname(g)} = {v.text};")
        elif op in _OPENERS:
            self.open_block(i, op, imms)
        elif op == OP_ELSE:
            self.do_else()
        elif op == OP_END:
            self.do_end(i)
        elif op == OP_BR:
            self.do_br(imms[0])
        elif op == OP_BR_IF:
            self.br_if(i, imms[0])
        elif op == OP_BR_TABLE:
            self.br_table(i, imms[0], imms[1])
        elif op == OP_RETURN:
            vals = self.branch_values(len(self.frames) - 1, consume=True)
            self.spill_for_call()
            for line in self.branch(len(self.frames) - 1, vals):
                self.emit(line)
            self.dead = True
        elif op == OP_UNREACHABLE:
            self.spill_for_call()
            self.emit("wasm_unreachable();")
            self.dead = True
        elif op == OP_NOP:
            pass
        elif op == OP_DROP:
            self.do_drop()
        elif op == OP_SELECT or op == OP_SELECT_T:
            self.do_select()
        elif op == OP_CALL or op == OP_RETURN_CALL:
            ft = self.func_types
            t = ft[imms[0]] if imms[0] < len(ft) else None
            if t is None:
                raise LiftError(f"call to function {imms[0]} out of range or not a func type")
            self.do_call(self.fname(imms[0]), t, op == OP_RETURN_CALL)
        elif op == OP_CALL_INDIRECT or op == OP_RETURN_CALL_INDIRECT:
            t = self.functype(imms[0])
            idx = self.pop()
            td = self.fn_typedef(t)
            self.do_call(None, t, op == OP_RETURN_CALL_INDIRECT, callee_expr=(td, imms[1], idx))
        elif op == OP_CALL_REF or op == OP_RETURN_CALL_REF:
            t = self.functype(imms[0])
            ref = self.pop()
            td = self.fn_typedef(t)
            self.do_call(None, t, op == OP_RETURN_CALL_REF, callee_ref=(td, ref))
        elif op == OP_MEMORY_SIZE:
            self.push(_E("memory_size()", 0, "i32", F_MEM))
        elif op == OP_MEMORY_GROW:
            n = self.pop()
            self.spill_effects()
            self.push(_E(f"memory_grow({n.text})", 0, "i32", F_CALL | n.fl, n.locs))
        elif op == OP_REF_NULL:
            self.push(_E("REF_NULL", 0, "funcref", const=0))
        elif op == OP_REF_IS_NULL:
            v = self.pop()
            self.push(_E(f"{_p(v, 6)} == REF_NULL", 7, "i32", v.fl, v.locs))
        elif op == OP_REF_FUNC:
            self.push(_E(f"REF_FUNC({self.fname(imms[0])})", 0, "funcref"))
        elif op == OP_REF_EQ:
            b = self.pop()
            a = self.pop()
            fl, locs = _merge(a, b)
            self.push(_E(f"{_p(a, 6)} == {_p(b, 6)}", 7, "i32", fl, locs))
        elif op == OP_REF_AS_NON_NULL:
            pass  # ref.as_non_null: traps on null only
        elif op == OP_TABLE_GET:
            i_ = self.pop()
            self.push(_E(f"table_get({imms[0]}, {i_.text})", 0, "funcref", F_GLOB | i_.fl, i_.locs))
        elif op == OP_TABLE_SET:
            v = self.pop()
            i_ = self.pop()
            self.spill_effects()
            self.emit(f"table_set({imms[0]}, {i_.text}, {v.text});")
        elif op == OP_THROW:  # throw
            tag = self.tag_type(imms[0])
            args = self.popn(len(tag.params))
            self.spill_for_call()
            self.emit(f"wasm_throw({', '.join([str(imms[0])] + [a.text for a in args])});")
            self.dead = True
        elif op == OP_RETHROW:
            self.spill_for_call()
            self.emit(f"wasm_rethrow({imms[0]});")
            self.dead = True
        elif op == OP_THROW_REF:
            v = self.pop()
            self.spill_for_call()
            self.emit(f"wasm_throw_ref({v.text});")
            self.dead = True
        elif op == OP_CATCH or op == OP_CATCH_ALL:
            self.do_catch(op, imms)
        elif op == OP_DELEGATE:  # delegate ends a try
            self.do_end(i)
        elif op == OP_V128_CONST:
            ws = struct.unpack("<4I", imms[0])
            self.push(_E(_v128_text(imms[0]), 0, "v128", const=ws))
        elif op == OP_I8X16_SHUFFLE:
            b_ = self.pop()
            a_ = self.pop()
            lanes = _v128_text(imms[0])
            fl, locs = _merge(a_, b_)
            self.push(_E(f"i8x16_shuffle({a_.text}, {b_.text}, {lanes})", 0, "v128", fl, locs))
        elif op in _GC_OPS:
            self.gc_op(i, op, imms)
        else:
            ent = CTABLE[op] if op < len(CTABLE) else None
            if ent is None:
                raise LiftError(f"no C rendering for {MNEMONICS[op] or hex(op)}")
            self.table_op(op, ent, imms)
