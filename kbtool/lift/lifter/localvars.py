"""The C names of a function's locals and their C types: ``uint32_t`` when mostly read
unsigned, ``bool`` when only ever 0/1 (:func:`_local_signs`).
"""

from __future__ import annotations

from typing import Final

from kbtool.wasm.opcodes import MNEMONICS

from ..context import _GENERATED, LiftModule
from ..names import C_KEYWORDS, c_ident
from ..prelude import PRELUDE_NAMES
from .base import i64
from .decode import _STACK_EFFECT
from .opnames import (
    OP_CALL,
    OP_I32_AND,
    OP_I32_CONST,
    OP_I32_DIV_S,
    OP_I32_EQZ,
    OP_I32_REM_U,
    OP_I32_XOR,
    OP_I64_EQZ,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
)

_INT: Final = ("i32", "i64")


def _sign_table() -> bytes:
    """Per op, how the local-typing pass (:func:`_local_signs`) sees it: 1 i32 arithmetic
    whose result carries its operands' C type (+ - * & | ^), 2 shl (the value operand), 3
    unsigned on both operands, 4 signed on both, 5 shr_u, 6 shr_s, 7 unsigned on its one
    operand (extend/convert _u), 8 signed on it, 9 select, 10 a 0/1 result (a comparison)."""
    t = [0] * len(MNEMONICS)
    for op, name in enumerate(MNEMONICS):
        if not name:
            continue
        ty, _, rest = name.partition(".")
        if name == "select":
            t[op] = 9
        elif ty in _INT and rest in ("add", "sub", "mul", "and", "or", "xor"):
            t[op] = 1
        elif name in ("i32.shl", "i64.shl"):
            t[op] = 2
        elif ty in _INT and rest in ("div_u", "rem_u", "lt_u", "gt_u", "le_u", "ge_u"):
            t[op] = 3
        elif ty in _INT and rest in ("div_s", "rem_s", "lt_s", "gt_s", "le_s", "ge_s"):
            t[op] = 4
        elif name in ("i32.shr_u", "i64.shr_u"):
            t[op] = 5
        elif name in ("i32.shr_s", "i64.shr_s"):
            t[op] = 6
        elif ty != "i32" and rest in ("extend_i32_u", "convert_i32_u", "convert_i64_u"):
            t[op] = 7
        elif ty != "i32" and rest in ("extend_i32_s", "convert_i32_s", "convert_i64_s"):
            t[op] = 8
        if ty in ("i32", "i64", "f32", "f64") and (
            rest in ("eqz", "eq", "ne", "lt", "gt", "le", "ge")
            or rest[:3] in ("lt_", "gt_", "le_", "ge_")
        ):
            t[op] = 10 if t[op] == 0 else t[op]
    return bytes(t)


_SIGN_OP: Final = _sign_table()
_NO_ORIGIN: Final[frozenset[int]] = frozenset()


def _one(single: list[frozenset[int] | None], x: int) -> frozenset[int]:
    """``{x}``, made once per local (``single`` holds them)."""
    s = single[x]
    if s is None:
        s = single[x] = frozenset((x,))
    return s


def _union(a: frozenset[int], b: frozenset[int]) -> frozenset[int]:
    """``a | b`` without a new set when one side is empty (most values follow no local)."""
    if not b:
        return a
    if not a:
        return b
    return a | b


def _push(orig: list[frozenset[int]], b01: list[int], sp: i64, o: frozenset[int], b: i64) -> i64:
    """Push ``o`` and ``b`` on the sign pass's stacks of depth ``sp``; the new depth. The
    stacks are lists with a depth beside them, never popped: a list popped down to empty
    frees its storage and gets it back at the next append (a realloc each time)."""
    if sp < len(orig):
        orig[sp] = o
        b01[sp] = b
    else:
        orig.append(o)
        b01.append(b)
    return sp + 1


def _effect(orig: list[frozenset[int]], b01: list[int], sp: i64, e0: i64, e1: i64) -> i64:
    """Pop ``e0`` values off the sign pass's stacks (of depth ``sp``) and push ``e1``
    unknown ones: the values both counts cover are overwritten in place (a load, a unary
    op), the rest popped or pushed. The new depth."""
    while e0 > e1:
        sp -= 1
        e0 -= 1
    k: i64 = 1
    while k <= e0:
        orig[sp - k] = _NO_ORIGIN
        b01[sp - k] = 0
        k += 1
    while e0 < e1:
        sp = _push(orig, b01, sp, _NO_ORIGIN, 0)
        e0 += 1
    return sp


def _local_signs(
    ops: list[int], args: list[tuple], local_types: list[str], n_params: int, ftypes: list
) -> list[int]:
    """C types of the function's i32 and i64 locals (not parameters: prototypes stay as the
    wasm type says): 1 ``uint32_t`` / ``uint64_t`` when more of the uses that care read it unsigned (``<u``,
    ``/u``, ``>>u``, extend/convert ``_u``, also through ``+ - * & | ^ <<``) than signed;
    2 ``bool`` when every value stored in it is 0 or 1 (a comparison, ``0``/``1``, or
    ``& | ^`` / select of those) and at least one is a comparison; else 0 (``int32_t``).
    One pass simulating the value stack inside straight-line code (values crossing a
    control instruction are unknown, which only ever keeps the default)."""
    n: i64 = len(local_types)  # i64: native ints in the loop (mypyc), no tag checks
    out = [0] * n
    cand = [x >= n_params and local_types[x] in _INT for x in range(n)]
    if not any(cand):
        return out
    uv, sv = [0] * n, [0] * n
    single: list[frozenset[int] | None] = [None] * n  # {x} per local (_one)
    strong = [False] * n
    notbool = [False] * n
    orig: list[frozenset[int]] = []  # per stack value: candidate locals its C type follows
    b01: list[int] = []  # per stack value: 0 unknown, 1 0/1 (a constant, or the locals in
    # its ``orig`` are bool), 2 a comparison (0/1 once those locals are bool)
    sp: i64 = 0  # the stacks' depth (entries at sp and above are left over: see _push)
    deps: dict[int, set[int]] = {}  # local -> locals whose values were stored in it
    sign = _SIGN_OP
    effects = _STACK_EFFECT
    none = _NO_ORIGIN
    n_ops: i64 = len(ops)
    i: i64
    for i in range(n_ops):
        op: i64 = ops[i]
        # the two commonest ops push inline (`_push` as a call costs more than its body)
        if op == OP_LOCAL_GET:
            x: i64 = args[i][0]
            o = none
            bv: i64 = 0
            if x < n and cand[x]:
                s1 = single[x]
                if s1 is None:
                    s1 = single[x] = frozenset((x,))
                o = s1
                bv = 1  # 0/1 if x turns out bool (its deps)
            if sp < len(orig):
                orig[sp] = o
                b01[sp] = bv
            else:
                orig.append(o)
                b01.append(bv)
            sp += 1
            continue
        if op == OP_I32_CONST:
            cv: i64 = args[i][0]  # typed: native compares (mypyc), not generic ones
            bv = 1 if cv == 0 or cv == 1 else 0
            if sp < len(orig):
                orig[sp] = none
                b01[sp] = bv
            else:
                orig.append(none)
                b01.append(bv)
            sp += 1
            continue
        if op == OP_LOCAL_SET or op == OP_LOCAL_TEE:
            x = args[i][0]
            if sp:
                sp -= 1
                bv = b01[sp]
                ov = orig[sp]
            else:
                bv = 0
                ov = none
            c = x < n and cand[x]
            if c:
                if bv == 0:
                    notbool[x] = True
                else:
                    if bv == 2:
                        strong[x] = True
                    if ov:
                        deps.setdefault(x, set()).update(ov)
            if op == OP_LOCAL_TEE:
                sp = _push(orig, b01, sp, _one(single, x) if c else none, 1 if c else 0)
            continue
        k: i64 = sign[op] if op < len(sign) else 0
        if k:
            if k == 1 or k == 3 or k == 4 or k == 10 and op != OP_I32_EQZ and op != OP_I64_EQZ:
                cmp: i64 = (
                    0 if k == 1 or OP_I32_DIV_S <= op <= OP_I32_REM_U else 2
                )  # div/rem are not 0/1
                if sp < 2:
                    sp = _push(orig, b01, 0, none, cmp)
                    continue
                ob = orig[sp - 1]
                oa = orig[sp - 2]
                bb = b01[sp - 1]
                ba = b01[sp - 2]
                sp -= 2
                if k == 1:
                    u = _union(oa, ob)
                    big = len(u) > 8
                    orig[sp] = none if big else u
                    # & | ^ of 0/1 values is 0/1 (when the locals it reads are bool)
                    ok = ba and bb and not big and OP_I32_AND <= op <= OP_I32_XOR
                    b01[sp] = min(ba, bb) if ok else 0
                    sp += 1
                    continue
                if k == 3 or k == 4:
                    votes = uv if k == 3 else sv
                    for x in _union(oa, ob):
                        votes[x] = votes[x] + 1  # native add (mypyc: `+=` is generic)
                orig[sp] = none
                b01[sp] = cmp
                sp += 1
                continue
            if k == 2 or k == 5 or k == 6:
                if sp < 2:
                    sp = _push(orig, b01, 0, none, 0)
                    continue
                oa = orig[sp - 2]
                sp -= 2
                if k == 5 or k == 6:
                    votes = uv if k == 5 else sv
                    for x in oa:
                        votes[x] = votes[x] + 1  # native add (mypyc: `+=` is generic)
                    oa = none
                orig[sp] = oa
                b01[sp] = 0
                sp += 1
                continue
            if k == 7 or k == 8 or k == 10:  # unary (eqz is 10)
                if sp:
                    sp -= 1
                    oa = orig[sp]
                else:
                    oa = none
                if k != 10:
                    votes = uv if k == 7 else sv
                    for x in oa:
                        votes[x] = votes[x] + 1  # native add (mypyc: `+=` is generic)
                sp = _push(orig, b01, sp, none, 2 if k == 10 else 0)
                continue
            if k == 9 and sp >= 3:
                ob = orig[sp - 2]
                oa = orig[sp - 3]
                bb = b01[sp - 2]
                ba = b01[sp - 3]
                sp -= 3
                u = _union(oa, ob)
                big = len(u) > 8
                orig[sp] = none if big else u
                b01[sp] = min(ba, bb) if ba and bb and not big else 0
                sp += 1
                continue
        if op == OP_CALL:
            callee: int = args[i][0]
            t = ftypes[callee] if callee < len(ftypes) else None
            eff = (len(t.params), len(t.results)) if t is not None else None
        else:
            eff = effects[op] if op < len(effects) else None
        if eff is None or eff[1] < 0 or eff[0] > sp:
            sp = 0
            continue
        sp = _effect(orig, b01, sp, eff[0], eff[1])
    kinds = _sign_kinds(cand, strong, notbool, deps, uv, sv)
    for x in range(n):
        if kinds[x] == 2 and local_types[x] != "i32":  # only an i32 is ever a bool
            kinds[x] = 0
    return kinds


def _sign_kinds(
    cand: list[bool],
    strong: list[bool],
    notbool: list[bool],
    deps: dict[int, set[int]],
    uv: list[int],
    sv: list[int],
) -> list[int]:
    """The verdict of :func:`_local_signs` from its tallies: ``bool`` for candidates only
    ever given 0/1 (at least one a comparison) whose sources are ``bool`` too, else
    ``uint32_t`` when unsigned uses outvote signed ones."""
    n = len(cand)
    out = [0] * n
    isbool = {x for x in range(n) if cand[x] and strong[x] and not notbool[x]}
    changed = True
    while changed:  # a value read from another local is 0/1 only if that one is bool
        changed = False
        for x in list(isbool):
            if not deps.get(x, isbool) <= isbool:
                isbool.discard(x)
                changed = True
    for x in range(n):
        if x in isbool:
            out[x] = 2
        elif cand[x] and uv[x] > sv[x]:
            out[x] = 1
    return out


def _local_names(lm: LiftModule, fi: int, n_params: int, n_total: int) -> list[str]:
    given = lm.names.locals.get(fi) or {}
    used: set[str] = set()
    out = []
    for x in range(n_total):
        default = f"p{x}" if x < n_params else f"l{x}"
        raw = given.get(x)
        name = default
        if raw:
            cand = c_ident(raw)

            if (
                cand in C_KEYWORDS
                or cand in PRELUDE_NAMES
                or _GENERATED.match(cand)
                or cand in lm.module_idents
                or cand in used
            ):
                cand = f"{cand}_{x}"
            if cand not in used and cand not in lm.module_idents:
                name = cand
        used.add(name)
        out.append(name)
    return out


def param_c_names(lm: LiftModule, fi: int) -> list[str]:
    """The C names the lifted text gives function ``fi``'s parameters (``p0``... or their
    sanitised names from the module's name section)."""
    n = len(lm.module.func_type(fi).params)
    return _local_names(lm, fi, n, n)
