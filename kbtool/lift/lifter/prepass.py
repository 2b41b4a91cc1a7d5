"""One pass over a function's decoded ops before the walk: the C types of its locals
(``uint32_t`` / ``bool``, :func:`_prepass`'s sign half) and its shadow-stack frames
(``frame->local_0c``, the frame half). Both simulate the value stack op by op, each with
its own stack and rules; one loop reads every op and immediate once for both.
"""

from __future__ import annotations

from typing import Final

from kbtool.wasm.opcodes import MNEMONICS

from .base import _OPENERS, i64, push_at
from .decode import _STACK_EFFECT
from .localvars import _INT, _NO_ORIGIN, _SIGN_OP, _effect, _one, _push, _sign_kinds, _union
from .opnames import (
    OP_BR_TABLE,
    OP_CALL,
    OP_CATCH_ALL,
    OP_DELEGATE,
    OP_ELSE,
    OP_END,
    OP_GLOBAL_GET,
    OP_GLOBAL_SET,
    OP_I32_ADD,
    OP_I32_AND,
    OP_I32_CONST,
    OP_I32_DIV_S,
    OP_I32_EQZ,
    OP_I32_REM_U,
    OP_I32_SUB,
    OP_I32_XOR,
    OP_I64_EQZ,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
    OP_LOOP,
)


def _fr_kinds() -> bytes:
    """Per op, what the frame half does with the ops it does not track: 1 a block opener,
    2 ``end``, 3 other control flow (the locals' known values are forgotten)."""
    t = [0] * len(MNEMONICS)
    for op in range(len(MNEMONICS)):
        if op in _OPENERS:
            t[op] = 1
        elif op == OP_END:
            t[op] = 2
        elif OP_ELSE <= op <= OP_BR_TABLE or op == OP_DELEGATE or op == OP_CATCH_ALL:
            t[op] = 3
    return bytes(t)


_FR_KIND: Final = _fr_kinds()


def _prepass(
    ops: list[int],
    args: list[tuple],
    local_types: list[str],
    n_params: int,
    ftypes: list,
    sp_hint: int,
    frames: bool,
) -> tuple[list[int], list[tuple[int, int, int, int]]]:
    """The sign kinds of the function's locals and its shadow-stack frame regions.

    **Signs** (not parameters: prototypes stay as the wasm type says): 1 ``uint32_t`` /
    ``uint64_t`` when more of the uses that care read it unsigned (``<u``, ``/u``, ``>>u``,
    extend/convert ``_u``, also through ``+ - * & | ^ <<``) than signed; 2 ``bool`` when
    every value stored in it is 0 or 1 (a comparison, ``0``/``1``, or ``& | ^`` / select of
    those) and at least one is a comparison; else 0 (``int32_t``). Values crossing a
    control instruction are unknown, which only ever keeps the default.

    **Frames** (only when ``frames``: the body has an ``i32.add``/``i32.sub`` and a
    ``global.get``, without which no prologue can be seen) of
    clang/Emscripten/Rust code: ``(F, start, end, size)`` per prologue ``global.get SP;
    i32.const N; i32.sub; local.tee/set F`` (also through locals, as at -O0), confirmed by a
    ``global.set SP`` of that value or by SP being ``sp_hint`` (the module's first mutable
    i32 global: leaf functions never write SP back). Within ``start..end`` (instruction
    indices) local F holds the frame base: the region ends at the end of the block around
    the prologue, at the next assignment of F, or at the head of a loop that contains that
    assignment (its back edge would reach earlier uses)."""
    n: i64 = len(local_types)  # i64: native ints in the loop (mypyc), no tag checks
    cand = [x >= n_params and local_types[x] in _INT for x in range(n)]
    signs = any(cand)
    if not signs and not frames:
        return [0] * n, []
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
    # the frame half's symbolic values, made without allocating: an int n, the constant n;
    # global g, the decoder's immediate tuple ``(g,)`` of its global.get; ``(g, n)`` g - n;
    # None unknown
    stk: list[object] = []
    sd: i64 = 0  # the depth of stk (see base.push_at)
    lsym: dict[int, object] = {}
    cands: list[list[int]] = []  # [pos, F, n, g, block start, confirmed]
    cand_locals: set[int] = set()
    sets: dict[int, list[tuple[int, tuple[int, ...]]]] = {}  # F -> (pos, loop starts open there)
    bstack: list[tuple[int, bool]] = [(-1, False)]
    ends: dict[int, int] = {-1: len(ops)}
    kinds = _FR_KIND
    n_ops: i64 = len(ops)
    i: i64
    for i in range(n_ops):
        op: i64 = ops[i]
        if frames:
            if op == OP_GLOBAL_GET or op == OP_I32_CONST or op == OP_LOCAL_GET:
                imm = args[i]  # a constant pushed as its immediate's object (no unbox/box)
                pv: object = imm[0] if op == OP_I32_CONST else imm
                if op == OP_LOCAL_GET:  # (most of the time no local has a known value)
                    pv = lsym.get(imm[0]) if lsym else None
                sd = push_at(stk, sd, pv)
            elif op == OP_I32_SUB or op == OP_I32_ADD:
                b: object = None
                a: object = None
                if sd:
                    sd -= 1
                    b = stk[sd]
                if sd:
                    sd -= 1
                    a = stk[sd]
                r: tuple[int, int] | None = None
                if isinstance(a, tuple) and len(a) == 1 and isinstance(b, int):
                    fn = b if op == OP_I32_SUB else -b
                    if 0 < fn < (1 << 24):
                        r = (a[0], fn)
                sd = push_at(stk, sd, r)
            elif op == OP_LOCAL_SET or op == OP_LOCAL_TEE:
                fx: int = args[i][0]
                v = stk[sd - 1] if sd else None
                if op == OP_LOCAL_SET and sd:
                    sd -= 1
                if cand_locals and fx in cand_locals:
                    opened = tuple(s for s, lp in bstack if lp)
                    sets.setdefault(fx, []).append((i, opened))
                if v is None:
                    if lsym and fx in lsym:  # not `pop(x, None)`: a method call (mypyc)
                        del lsym[fx]
                else:
                    lsym[fx] = v
                    if isinstance(v, tuple) and len(v) == 2:
                        cands.append([i, fx, v[1], v[0], bstack[-1][0], 0])
                        cand_locals.add(fx)
            elif op == OP_GLOBAL_SET:
                w: object = None
                if sd:
                    sd -= 1
                    w = stk[sd]
                g: int = args[i][0]
                if isinstance(w, tuple) and len(w) == 2 and w[0] == g:
                    for c in cands:
                        if c[3] == g and c[2] == w[1] and lsym.get(c[1]) == w:
                            c[5] = 1
                if lsym:
                    lsym = {k: u for k, u in lsym.items() if isinstance(u, int)}
            else:
                sd = 0
                fk = kinds[op] if op < len(kinds) else 0
                if fk:
                    if fk == 1:
                        bstack.append((i, op == OP_LOOP))
                    elif fk == 2 and len(bstack) > 1:
                        ends[bstack.pop()[0]] = i
                    if lsym:
                        lsym.clear()
            if not signs:
                continue
        # the sign half; the two commonest ops push inline (a call costs more than its body)
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
            cx = x < n and cand[x]
            if cx:
                if bv == 0:
                    notbool[x] = True
                else:
                    if bv == 2:
                        strong[x] = True
                    if ov:
                        deps.setdefault(x, set()).update(ov)
            if op == OP_LOCAL_TEE:
                sp = _push(orig, b01, sp, _one(single, x) if cx else none, 1 if cx else 0)
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
                    un = _union(oa, ob)
                    big = len(un) > 8
                    orig[sp] = none if big else un
                    # & | ^ of 0/1 values is 0/1 (when the locals it reads are bool)
                    ok = ba and bb and not big and OP_I32_AND <= op <= OP_I32_XOR
                    b01[sp] = min(ba, bb) if ok else 0
                    sp += 1
                    continue
                if k == 3 or k == 4:
                    votes = uv if k == 3 else sv
                    for y in _union(oa, ob):
                        votes[y] = votes[y] + 1  # native add (mypyc: `+=` is generic)
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
                    for y in oa:
                        votes[y] = votes[y] + 1  # native add (mypyc: `+=` is generic)
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
                    for y in oa:
                        votes[y] = votes[y] + 1  # native add (mypyc: `+=` is generic)
                sp = _push(orig, b01, sp, none, 2 if k == 10 else 0)
                continue
            if k == 9 and sp >= 3:
                ob = orig[sp - 2]
                oa = orig[sp - 3]
                bb = b01[sp - 2]
                ba = b01[sp - 3]
                sp -= 3
                un = _union(oa, ob)
                big = len(un) > 8
                orig[sp] = none if big else un
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
    kinds_out = [0] * n
    if signs:
        kinds_out = _sign_kinds(cand, strong, notbool, deps, uv, sv)
        for x in range(n):
            if kinds_out[x] == 2 and local_types[x] != "i32":  # only an i32 is ever a bool
                kinds_out[x] = 0
    regions = _regions(cands, sets, ends, sp_hint, len(ops)) if cands else []
    return kinds_out, regions


def _regions(
    cands: list[list[int]],
    sets: dict[int, list[tuple[int, tuple[int, ...]]]],
    ends: dict[int, int],
    sp_hint: int,
    n_ops: int,
) -> list[tuple[int, int, int, int]]:
    """The frame half's regions ``(F, start, end, size)`` from its candidate prologues."""
    out: list[tuple[int, int, int, int]] = []
    for pos, x, fn, g, bs, ok in cands:
        if not ok and g != sp_hint:
            continue
        end = ends.get(bs, n_ops)
        for q, loops in sets.get(x, []):
            if q > pos:
                if q < end:
                    end = q
                for ls in loops:
                    if pos < ls < end:
                        end = ls
                break
        if end > pos + 1:
            out.append((x, pos + 1, end, fn))
    return out
