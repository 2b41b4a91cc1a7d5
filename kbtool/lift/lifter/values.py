"""Operators, calls (direct, indirect, by reference, tail) and prelude helper calls."""

from __future__ import annotations

from typing import Final

from kbtool.wasm.opcodes import MNEMONICS

from ..ctable import CTABLE, PREC, imm_args, lane_arg
from .base import (
    _E,
    _MASKED,
    _NEG_CMP,
    F_CALL,
    F_MEM,
    MAX_EXPR_CHARS,
    LiftError,
    _i32_text,
    _i64_text,
    _merge_list,
    _narrow,
    _nonneg_const,
    _p,
    _so,
    _union,
    _uo,
    _uo_signed,
)
from .memory import _Memory

_NUMERIC_OPS = frozenset(("*", "/", "%", "&", "|", "^", "<<", ">>"))
#: operators whose operands C converts to their common type (not shifts, not div/rem)
_WIDENS = frozenset(("+", "-", "*", "&", "|", "^"))
#: helpers whose result is a bit count (never negative)
_COUNTS = frozenset(("i32_clz", "i32_ctz", "i32_popcnt", "i64_clz", "i64_ctz", "i64_popcnt"))


def _name_effect(name: str) -> bool:
    """A helper call of this op has effects (memory/table/data/element ops, atomics)."""
    return (
        name.startswith(("memory.", "table.", "data.", "elem."))
        or ".atomic." in name
        or name == "atomic.fence"
        or name.startswith("memory.atomic")
    )


# per op id, for the helper calls of :meth:`_Values.table_op` (tables: the functions are
# plain Python outside the compiled lifter, a generic call per op)
_IMM_ARGS: Final = bytes(imm_args(op) for op in range(len(MNEMONICS)))
_LANE_ARG: Final = bytes(lane_arg(op) for op in range(len(MNEMONICS)))
_NAME_EFFECT: Final = bytes(_name_effect(MNEMONICS[op] or "") for op in range(len(MNEMONICS)))

# per op id, for :meth:`_Values.binary`: the infix form's code (0: not infix), its operator's
# code and C precedence, so the operator is picked by small ints, not string compares
_FORM_CODE: Final = {"bin": 1, "binu": 2, "cmp": 3, "cmpu": 4, "shl": 5, "shr": 6, "shru": 7}
#: + - * & | ^ (1-6: the operators C widens, ``_WIDENS``), / %, == !=; the rest 11
_OPER_CODE: Final = {"+": 1, "-": 2, "*": 3, "&": 4, "|": 5, "^": 6, "/": 7, "%": 8}
_OPER_CODE.update({"==": 9, "!=": 10})
_BIN_FORM: Final = bytes(_FORM_CODE.get(e[0], 0) if e else 0 for e in CTABLE)
_BIN_OPER: Final = bytes(
    _OPER_CODE.get(e[3], 11) if e and e[0] in _FORM_CODE else 0 for e in CTABLE
)
_BIN_PREC: Final = bytes(PREC[e[3]] if e and e[0] in _FORM_CODE else 0 for e in CTABLE)
#: the operator with its spaces (`` + ``) and a comparison's negation (`` >= ``), per op id:
#: an expression's text is built from three parts, not five
_BIN_SP: Final[list[str]] = [f" {e[3]} " if e and e[0] in _FORM_CODE else "" for e in CTABLE]
_BIN_NEG_SP: Final[list[str]] = [
    f" {_NEG_CMP[e[3]]} " if e and e[0] in ("cmp", "cmpu") and e[3] in _NEG_CMP else ""
    for e in CTABLE
]


def _number(e: _E) -> _E:
    """``e`` itself, or a constant labelled as a data item's address as its plain number."""
    if e.const is not None and type(e.const) is int and e.text.startswith("ADDR("):
        return _E(_i32_text(e.const), 0 if e.const >= 0 else 2, e.ty, e.fl, e.locs, const=e.const)
    return e


def _uo_pair(a: _E, b: _E, ty: str, P: int) -> tuple[str, str]:
    """The operands of an unsigned operation: next to an operand whose C type is already
    unsigned (same width), or made unsigned by its cast, C converts the other one itself,
    so it needs no cast (``(uint32_t)p7 < p4``, ``l3 >= p1`` with ``uint32_t l3``)."""
    ta = _p(a, P) if b.u else _uo(a, ty, P, b.nn)
    a_unsigned = a.u or (not b.u and not _uo_signed(a, b))  # a cast or a `123u` constant
    tb = _p(b, P - 1) if a_unsigned else _uo(b, ty, P - 1, a.nn)
    return ta, tb


class _Values(_Memory):
    def do_call(self, name, t, is_tail, callee_expr=None, callee_ref=None):
        args = self.popn(len(t.params))
        self.spill_for_call() if is_tail else self.spill_effects()
        if callee_expr is not None:
            td, table, idx = callee_expr
            fn = f"(({td})wasm_table_func({table}, {idx.text}))"
            args_fl, locs = _merge_list([idx, *args])
        elif callee_ref is not None:
            td, ref = callee_ref
            fn = f"(({td}){_p(ref, 2)})"
            args_fl, locs = _merge_list([ref, *args])
        else:
            self.ret_type(t.results)
            fn = name
            args_fl, locs = _merge_list(args)
        # an i64 argument widened from 32 bits: the prototype in scope converts it
        texts = [a.w[0] if a.w is not None else a.text for a in args]
        call = f"{fn}({', '.join(texts)})"
        if is_tail:
            ft = self.frames[0].results
            if len(ft) == 0:
                self.emit(f"{call};")
                self.emit("return;")
            else:
                self.emit(f"return {call};")
            self.dead = True
            return
        res = t.results
        if not res:
            self.emit(f"{call};")
        elif len(res) == 1:
            self.push(_E(call, 0, res[0], F_CALL | args_fl, locs))
        else:
            st = self.ret_type(res)
            tmp = f"t{len(self.temps) + 1}"
            self.temps.append((st, tmp))
            self.emit(f"{tmp} = {call};")
            for k, r in enumerate(res):
                self.stack.append(_E(f"{tmp}.v{k}", 0, r))

    def table_op(self, op: int, ent: tuple[str, tuple, tuple, str], imms: tuple) -> None:
        form, params, results, text = ent
        bk = _BIN_FORM[op] if op < len(_BIN_FORM) else 0
        if bk:
            stack = self.stack
            if len(stack) - 2 < self.frames[-1].height:
                raise LiftError("value stack underflow")
            b = stack.pop()
            a = stack.pop()
            if a.locs:
                la = a.locs
                lb = b.locs
                locs = lb and (la if la is lb or la == lb else _union(la, lb))
                locs = locs or a.locs
            else:
                locs = b.locs
            if self.dobj and text in _NUMERIC_OPS:
                # a data address is no factor, mask or shift count: the constant reads as a number
                a, b = _number(a), _number(b)
            e = self.binary(bk, op, text, a, b, params[0], results[0], a.fl | b.fl, locs)
            if len(e.text) > MAX_EXPR_CHARS:
                e = self.spill(e)
            stack.append(e)
            return
        if form in ("neg", "eqz", "cast"):
            a = self.pop()
            if form == "neg":
                t = f"-{_p(a, 0)}" if not a.text.startswith("-") else f"-({a.text})"
                self.push(_E(t, 2, results[0], a.fl, a.locs))
            elif form == "eqz":
                if a.negp >= 0 and a.neg is not None:  # !(a < b) is a >= b
                    e = _E(a.neg, a.negp, "i32", a.fl, a.locs, a.text, None, None, a.prec, nn=True)
                    self.push(e)
                    return
                p = _p(a, 6)
                neg = a.text if a.prec <= 13 else f"({a.text})"
                self.push(_E(f"{p} == 0", 7, "i32", a.fl, a.locs, neg=neg, nn=True))
            else:
                unsigned_src = text.endswith(("(uint32_t)", "(uint64_t)"))  # extend_u, convert_u
                if a.u:  # an unsigned operand: (int64_t)(uint32_t)x is (int64_t)x
                    if unsigned_src:
                        text = text[:-10]
                    elif text in ("(int64_t)", "(float)", "(double)") and not a.nn:
                        text += "(int32_t)" if params[0] == "i32" else "(int64_t)"  # signed
                elif a.nn and unsigned_src:  # never negative: both readings agree
                    text = text[:-10]
                # i64 from a zero-extended or never negative i32 is never negative
                nn = text == "(int64_t)(uint32_t)" or (
                    text == "(int64_t)" and (a.nn or (a.u and unsigned_src))
                )
                e = _E(f"{text}{_p(a, 2)}", 2, results[0], a.fl, a.locs, nn=nn)
                if text == "(int64_t)" and params[0] == "i32":
                    # C widens it by itself where it meets an i64
                    e.w = (a.text, a.prec, a.text, a.prec)
                elif text in ("(int64_t)(uint32_t)", "(int64_t)(int32_t)"):  # as its C type says
                    e.w = (f"{text[9:]}{_p(a, 2)}", 2, a.text, a.prec)
                self.push(e)
            return
        # helper calls
        n_imm = _IMM_ARGS[op]
        n = len(params)
        if not n_imm and 0 < n <= 2 and form != "mem" and form != "voidmem":
            # the commonest (SIMD lanes, conversions): one or two operands, no leading
            # immediate, no address: the text without the lists below (same text)
            stack = self.stack
            if len(stack) - n < self.frames[-1].height:
                raise LiftError("value stack underflow")
            b = stack.pop()
            if n == 1:
                fl = b.fl
                locs = b.locs
                inner = b.text
            else:
                a = stack.pop()
                fl = a.fl | b.fl
                la = a.locs
                lb = b.locs
                locs = (_union(la, lb) if la else lb) if lb else la
                inner = f"{a.text}, {b.text}"
            call = f"{text}({inner}, {imms[-1]})" if _LANE_ARG[op] else f"{text}({inner})"
        else:
            args = self.popn(n)
            lead = [str(x) for x in imms[:n_imm]] if n_imm else []
            fl, locs = _merge_list(args)
            texts = [a.text for a in args]
            if form in ("mem", "voidmem"):
                offset = imms[1]
                if offset:
                    texts[0] = self.addr(args[0], offset)
                fl |= F_MEM
            if _LANE_ARG[op]:
                texts.append(str(imms[-1]))
            call = f"{text}({', '.join(lead + texts)})"
        if form in ("void", "voidmem") or _NAME_EFFECT[op]:
            self.spill_effects()
            fl |= F_CALL
        if not results:
            self.emit(f"{call};")
        elif len(results) == 1:
            self.push(_E(call, 0, results[0], fl, locs, nn=text in _COUNTS))
        else:
            st = self.ret_type(results)
            tmp = f"t{len(self.temps) + 1}"
            self.temps.append((st, tmp))
            self.emit(f"{tmp} = {call};")
            for k, r in enumerate(results):
                self.stack.append(_E(f"{tmp}.v{k}", 0, r))

    def binary(
        self, bk: int, opi: int, op: str, a: _E, b: _E, ty: str, rty: str, fl: int, locs: tuple
    ) -> _E:
        """``a op b`` of the infix form ``bk`` (``_FORM_CODE``) of op id ``opi``."""
        P: int = _BIN_PREC[opi]
        oc: int = _BIN_OPER[opi]  # _OPER_CODE
        isint = ty == "i32" or ty == "i64"
        if (
            (a.w is not None or b.w is not None)
            and (bk == 3 or bk == 4 or (bk == 1 and oc <= 6))
            and not (oc == 2 and a.const == 0)  # `0 - x` prints as `-x`: x must be 64-bit
        ):
            # (int64_t)x + y is x + y when y is 64 bits: C's conversions widen x the same way
            if a.w is not None and b.w is None:
                a = _narrow(a)
            elif b.w is not None:
                b = _narrow(b)
        if bk == 1:
            if isint and (oc == 7 or oc == 8):  # div_s / rem_s
                return _E(f"{_so(a, ty, P)}{_BIN_SP[opi]}{_so(b, ty, P - 1)}", P, rty, fl, locs)
            u = isint and (a.u or b.u)  # C's usual conversions: the same bits, unsigned
            if (
                oc == 1
                and ty == "i32"
                and self.fregion
                and b.const is not None
                and type(b.const) is int
                and a.prec == 0
                and len(a.locs) == 1
                and a.const is None
            ):
                nm = self.frame_addr(a, b.const)
                if nm:  # the address of a frame array/struct: say which
                    return _E(f"{a.text} + {b.text} /* &{nm} */", 4, rty, fl, locs, u=u)
            if (
                oc <= 2
                and b.const is not None
                and isinstance(b.const, int)
                and b.const < 0
                and b.const not in (-(1 << 31), -(1 << 63))
                and isint
            ):
                # x + -8 is x - 8, x - -64 is x + 64
                c = _i32_text(-b.const) if ty == "i32" else _i64_text(-b.const)
                return _E(f"{_p(a, 4)}{' - ' if oc == 1 else ' + '}{c}", 4, rty, fl, locs, u=u)
            if oc == 2 and a.const == 0 and isint and type(a.const) is int:
                t = f"-{_p(b, 2)}" if not b.text.startswith("-") else f"-({b.text})"
                return _E(t, 2, rty, fl, locs, u=u)
            if P >= 8:  # bitwise: parenthesise arithmetic operands for the reader
                la = a.text if a.prec <= 2 or a.prec == P else f"({a.text})"
                an = a.nn or _nonneg_const(a)
                bn = b.nn or _nonneg_const(b)
                nn = isint and ((an or bn) if oc == 4 else (an and bn))
                return _E(f"{la}{_BIN_SP[opi]}{_p(b, 2)}", P, rty, fl, locs, u=u, nn=nn)
            return _E(f"{_p(a, P)}{_BIN_SP[opi]}{_p(b, P - 1)}", P, rty, fl, locs, u=u)
        if bk == 2:
            # unsigned operands give an unsigned result: no cast back to signed; never
            # negative operands need no cast and give a never negative (int) result
            ta, tb = _uo_pair(a, b, ty, P)
            signed = _uo_signed(a, b) and _uo_signed(b, a)
            bc = b.const
            nn = signed or (
                type(bc) is int and (bc >= 2 if oc == 7 else 0 < bc <= 0x7FFFFFFF) or b.nn
            )
            return _E(f"{ta}{_BIN_SP[opi]}{tb}", P, rty, fl, locs, u=not signed, nn=nn)
        if bk == 3 or bk == 4:
            if bk == 4:
                ta, tb = _uo_pair(a, b, ty, P)
            elif isint and oc != 9 and oc != 10:
                if (a.nn or _nonneg_const(a)) and (b.nn or _nonneg_const(b)):
                    ta, tb = _p(a, P), _p(b, P - 1)  # never negative: both readings agree
                else:
                    ta, tb = _so(a, ty, P), _so(b, ty, P - 1)
            else:
                ta, tb = _p(a, P), _p(b, P - 1)
            if (
                (oc == 9 or oc == 10)
                and b.const == 0
                and type(b.const) is int
                and a.negp >= 0
                and a.neg is not None
            ):
                # (a < b) == 0 is a >= b; (a < b) != 0 is a < b
                if oc == 9:
                    return _E(a.neg, a.negp, "i32", fl, locs, a.text, None, None, a.prec, nn=True)
                return _E(a.text, a.prec, "i32", fl, locs, a.neg, None, None, a.negp, nn=True)
            neg = None
            negp = -1
            if isint:
                neg = f"{ta}{_BIN_NEG_SP[opi]}{tb}"
                negp = P
            return _E(f"{ta}{_BIN_SP[opi]}{tb}", P, "i32", fl, locs, neg, None, None, negp, nn=True)
        bits = 31 if ty == "i32" else 63
        if b.const is not None and isinstance(b.const, int):
            cnt = str(b.const & bits)
        elif b.prec == 8 and _MASKED.search(b.text) and int(b.text.rsplit(" ", 1)[1]) <= bits:
            cnt = f"({b.text})"  # already masked: (n & 31) needs no second & 31
        else:
            # a shift count's low bits are the same before and after a widening
            bt = _p(b, 8) if b.w is None else b.w[2] if b.w[3] <= 2 else f"({b.w[2]})"
            cnt = f"({bt} & {bits})"
        if bk == 7:
            # a never negative operand shifts the same either way (and stays int)
            signed = a.nn and not a.u
            nn = signed or (type(b.const) is int and b.const & bits != 0)
            return _E(f"{_uo(a, ty, 2, False)} >> {cnt}", 5, rty, fl, locs, u=not signed, nn=nn)
        if bk == 6:
            sa = _p(a, 2) if a.nn else _so(a, ty, 2)  # a never negative value shifts alike
            return _E(f"{sa} >> {cnt}", 5, rty, fl, locs, u=a.u and a.nn, nn=a.nn)
        return _E(f"{_p(a, 2)}{_BIN_SP[opi]}{cnt}", 5, rty, fl, locs, u=a.u)
