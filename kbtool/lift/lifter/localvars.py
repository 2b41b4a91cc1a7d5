"""The C names of a function's locals and their C types: ``uint32_t`` when mostly read
unsigned, ``bool`` when only ever 0/1 (:func:`.prepass._prepass`).
"""

from __future__ import annotations

from typing import Final

from kbtool.wasm.opcodes import MNEMONICS

from ..context import _GENERATED, LiftModule
from ..names import C_KEYWORDS
from ..prelude import PRELUDE_NAMES
from .base import _c_ident, i64

_INT: Final = ("i32", "i64")


def _sign_table() -> bytes:
    """Per op, how the local-typing pass (:func:`.prepass._prepass`) sees it: 1 i32 arithmetic
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


def _sign_kinds(
    cand: list[bool],
    strong: list[bool],
    notbool: list[bool],
    deps: dict[int, set[int]],
    uv: list[int],
    sv: list[int],
) -> list[int]:
    """The verdict of :func:`.prepass._prepass` from its tallies: ``bool`` for candidates only
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
            cand = _c_ident(raw)

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
