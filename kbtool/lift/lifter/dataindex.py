"""Indexes of data tables in the lifted C (:mod:`.memory`): the element index hidden in an
address ``M + base + tbl`` when ``base`` is scaled by the element size (``i << 2``,
``i * 12``), masked to a multiple of it (``(x >> 6) & 1020`` is ``(x >> 8) & 255``), or a
local whose every value reaching the access is such a multiple (``l5 = i << 2; ...
tbl[l5 >> 2]``: :func:`align_states`).
"""

from __future__ import annotations

import re
from typing import Final

from kbtool.wasm.opcodes import K_SELECT_T, KIND, MNEMONICS, OP_BY_NAME

from .base import _E

_OP_CONST: Final = OP_BY_NAME["i32.const"]
_OP_SHL: Final = OP_BY_NAME["i32.shl"]
_OP_MUL: Final = OP_BY_NAME["i32.mul"]
_OP_AND: Final = OP_BY_NAME["i32.and"]
_OP_GET: Final = OP_BY_NAME["local.get"]
_OP_SET: Final = OP_BY_NAME["local.set"]
_OP_TEE: Final = OP_BY_NAME["local.tee"]
#: alignment of a value known to be 0 (a local never assigned): a multiple of anything
_ANY: Final = 1 << 30
_MASK: Final = re.compile(r"^(.*) & (0x[0-9a-fA-F]+|\d+)$")
_SHR: Final = re.compile(r"^\((.*) >> (\d+)\)$")
_ATOM: Final = re.compile(r"^(?:\(u?int(?:8|16|32|64)_t\))?[\w.]+$")


def balanced(text: str) -> bool:
    """Whether every parenthesis of ``text`` closes inside it, in order."""
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _unwrap(idx: str) -> str:
    if idx.startswith("(") and idx.endswith(")") and balanced(idx[1:-1]):
        return idx[1:-1]  # the brackets group it
    return idx


def scaled(base: _E, size: int) -> str:
    """The index of an address ``base`` scaled by ``size`` (``i << 2``, ``i * 12``; any
    value for bytes), else ""."""
    t = base.text
    if size == 1:
        return t
    idx = ""
    mul = f" * {size}"
    k = size.bit_length() - 1
    if base.prec == 3 and t.endswith(mul):
        idx = t[: -len(mul)]
    elif size == 1 << k and base.prec == 5 and t.endswith(f" << {k}"):
        idx = t[: -len(f" << {k}")]
    return _unwrap(idx)


def masked(base: _E, size: int) -> str:
    """The index of an address ``base`` that is a value masked to a multiple of the power
    of two ``size``: ``(x >> 6) & 1020`` as ``(x >> 8) & 255``, ``x & 0xffc`` as
    ``(x >> 2) & 1023`` (``((v & m) >> k) == ((v >> k) & (m >> k))`` when ``m``'s low ``k``
    bits are clear); else ""."""
    k = size.bit_length() - 1
    if base.prec != 8 or size != 1 << k or k == 0:
        return ""
    m = _MASK.match(base.text)
    if m is None:
        return ""
    left, mt = m.group(1), m.group(2)
    mask = int(mt, 16) if mt[:2].lower() == "0x" else int(mt)
    if mask <= 0 or mask >= 1 << 31 or mask % size or not balanced(left):
        return ""
    rest = mask >> k
    rt = str(rest) if rest < 4096 else f"0x{rest:x}"
    s = _SHR.match(left)
    if s is not None and balanced(s.group(1)) and int(s.group(2)) + k < 32:
        return f"({s.group(1)} >> {int(s.group(2)) + k}) & {rt}"
    inner = left if _ATOM.match(left) or _wrapped(left) else f"({left})"
    return f"({inner} >> {k}) & {rt}"


def _terms(text: str) -> list[str]:
    """The top-level ``+`` terms of ``text`` ([] when a top-level ``-`` or another operator
    of the same level joins them)."""
    out: list[str] = []
    depth = start = 0
    k = 0
    n = len(text)
    while k < n:
        ch = text[k]
        if ch == "(" or ch == "[":
            depth += 1
        elif ch == ")" or ch == "]":
            depth -= 1
        elif depth == 0 and ch == " " and k + 2 < n and text[k + 2] == " ":
            op = text[k + 1]
            if op == "+":
                out.append(text[start:k])
                start = k + 3
                k += 3
                continue
            if op == "-" or op == "?" or op == ":":
                return []
        k += 1
    out.append(text[start:])
    return out


def summed(text: str, size: int) -> str:
    """The index of an address that is a sum of terms each scaled by a multiple of
    ``size`` (a power of two): ``r * 12 + (c << 2)`` as ``r * 3 + c`` for 4-byte elements;
    else ""."""
    k = size.bit_length() - 1
    if size != 1 << k or k == 0:
        return ""
    terms = _terms(text)
    if len(terms) < 2:
        return ""
    out: list[str] = []
    for t in terms:
        t = _unwrap(t)
        m = re.match(r"^(.*) (<<|\*) (\d+)$", t)
        if m is None or not balanced(m.group(1)):
            return ""
        left, op, n = m.group(1), m.group(2), int(m.group(3))
        ops = _top_ops(left)  # `l6 = a * 12` is an assignment, not a product
        if ops if op == "<<" else not ops <= {"*", "/", "%"}:
            return ""
        if op == "<<":
            if n < k or n >= 32:
                return ""
            out.append(left if n == k else f"({_p_shift(left)} << {n - k})")
        else:
            if n % size:
                return ""
            out.append(left if n == size else f"{left} * {n // size}")
    return " + ".join(out)


_TOP_OP: Final = re.compile(r" (\S+) ")


def _top_ops(text: str) -> set[str]:
    """The binary operators at the top level of ``text`` (outside brackets)."""
    out: set[str] = set()
    depth = 0
    flat = []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        flat.append(ch if depth == 0 else "_")
    for m in _TOP_OP.finditer("".join(flat)):
        out.add(m.group(1))
    return out


def assigned(text: str, size: int, names: list[str]) -> str:
    """The index of an address that is an assignment of a scaled value to a local
    (``l2 = i << 2``, ``(p1 = i * 12)``): ``(l2 = i << 2) >> 2``; else ""."""
    k = size.bit_length() - 1
    if size != 1 << k or k == 0:
        return ""
    t = _unwrap(text)
    name, eq, value = t.partition(" = ")
    if not eq or name not in names:
        return ""
    m = re.match(r"^(.*) (<<|\*) (\d+)$", value)
    ok = False
    if m is not None and balanced(m.group(1)):
        ops = _top_ops(m.group(1))
        if m.group(2) == "<<":
            ok = not ops and 31 >= int(m.group(3)) >= k
        else:
            ok = ops <= {"*", "/", "%"} and int(m.group(3)) % size == 0
    ok = ok or bool(summed(value, size))  # a sum of such terms
    return f"({t}) >> {k}" if ok else ""


def _p_shift(text: str) -> str:
    """``text`` as the left operand of ``<<`` (it binds looser than ``+``)."""
    return text if _ATOM.match(text) or _wrapped(text) or " " not in text else f"({text})"


def _wrapped(text: str) -> bool:
    return text.startswith("(") and text.endswith(")") and balanced(text[1:-1])


def _lowbit(v: int) -> int:
    v &= 0xFFFFFFFF
    return _ANY if v == 0 else min(v & -v, _ANY)


_OP_BLOCK: Final = OP_BY_NAME["block"]
_OP_LOOP: Final = OP_BY_NAME["loop"]
_OP_IF: Final = OP_BY_NAME["if"]
_OP_ELSE: Final = OP_BY_NAME["else"]
_OP_END: Final = OP_BY_NAME["end"]
_OP_BR: Final = OP_BY_NAME["br"]
_OP_BR_IF: Final = OP_BY_NAME["br_if"]
_OP_BR_TABLE: Final = OP_BY_NAME["br_table"]
_OP_RETURN: Final = OP_BY_NAME["return"]
_OP_UNREACHABLE: Final = OP_BY_NAME["unreachable"]
_OP_LOAD0: Final = OP_BY_NAME["i32.load"]  # loads, then stores, up to memory.size
_OP_MEMSIZE: Final = OP_BY_NAME["memory.size"]
#: control the scan does not follow (exceptions, typed references): no alignments at all
_GIVE_UP: Final = frozenset(
    OP_BY_NAME[n]
    for n in (
        "try",
        "catch",
        "catch_all",
        "delegate",
        "throw",
        "rethrow",
        "throw_ref",
        "try_table",
        "br_on_null",
        "br_on_non_null",
        "br_on_cast",
        "br_on_cast_fail",
        "return_call",
        "return_call_indirect",
        "return_call_ref",
    )
    if n in OP_BY_NAME
)
#: instructions beyond which the scan is not run (its states are copied per assignment)
MAX_SCAN: Final = 40_000

State = dict[int, int]


_OP_ADD: Final = OP_BY_NAME["i32.add"]
_OP_SUB: Final = OP_BY_NAME["i32.sub"]
_OP_OR: Final = OP_BY_NAME["i32.or"]
_OP_XOR: Final = OP_BY_NAME["i32.xor"]
_OP_DROP: Final = OP_BY_NAME["drop"]
_OP_SELECT: Final = OP_BY_NAME["select"]
_OP_SELECT_T: Final = KIND.index(K_SELECT_T)


def _step(op: int, arg: tuple, stk: list[tuple[int, int]], st: State | None, np: int) -> None:
    """One instruction on the stack ``stk`` of (alignment, constant or -1) of the values
    known since it was last cleared (an operand below them is unknown: alignment 1). A
    local reads ``st`` (None: unknown). Any other instruction clears it."""
    if op == _OP_CONST:
        c = arg[0]
        stk.append((_lowbit(c), c & 0xFFFFFFFF) if type(c) is int else (1, -1))
    elif op == _OP_GET:
        x = arg[0]
        stk.append((1 if st is None else st.get(x, _ANY if x >= np else 1), -1))
    elif op == _OP_TEE:
        pass  # its value stays on the stack
    elif op == _OP_SET or op == _OP_DROP:
        if stk:
            stk.pop()
    elif op == _OP_SELECT or op == _OP_SELECT_T:
        if stk:
            stk.pop()  # the condition
        b = stk.pop()[0] if stk else 1
        a = stk.pop()[0] if stk else 1
        stk.append((min(a, b), -1))
    elif op in _BINARY:
        b, bc = stk.pop() if stk else (1, -1)
        a = stk.pop()[0] if stk else 1
        if op == _OP_SHL:
            r = min(a << (bc & 31), _ANY) if bc >= 0 else 1
        elif op == _OP_MUL:
            r = min(a * b, _ANY)
        elif op == _OP_AND:
            r = max(a, b)
        else:
            r = min(a, b)
        stk.append((r, -1))
    else:
        pops = _POPS.get(op, -1)
        if pops < 0:
            stk.clear()
            return
        for _ in range(pops):
            if stk:
                stk.pop()
        stk.append((1, -1))


_BINARY: Final = frozenset((_OP_ADD, _OP_SUB, _OP_MUL, _OP_AND, _OP_OR, _OP_XOR, _OP_SHL))
_UNARY_OPS: Final = frozenset(
    "eqz clz ctz popcnt abs neg ceil floor trunc nearest sqrt wrap_i64 demote_f64"
    " promote_f32 extend8_s extend16_s extend32_s".split()
)


def _pops(name: str) -> int:
    """How many operands a numeric instruction or a load pops (it pushes one value); -1
    for anything else (the scan forgets its stack there)."""
    if name.endswith(".const") or name == "global.get":
        return 0
    ty, _, o = name.partition(".")
    if ty not in ("i32", "i64", "f32", "f64") or not o:
        return -1
    if o.startswith("load"):
        return 1
    if (
        o in _UNARY_OPS
        or "_" in o
        and o.split("_")[0] in ("trunc", "convert", "extend", "reinterpret")
    ):
        return 1
    if o.startswith(("store", "atomic")) or "." in o or "128" in o or "wide" in o:
        return -1
    return 2


#: the operands each numeric instruction pops (those :func:`_step` does not follow itself)
_POPS: Final = {op: n for op, name in enumerate(MNEMONICS) if name and (n := _pops(name)) >= 0}


def _join(a: State | None, b: State | None, np: int) -> State | None:
    if a is None:
        return b
    if b is None or a is b:
        return a
    out: State = {}
    for x in a.keys() | b.keys():
        d = _ANY if x >= np else 1
        out[x] = min(a.get(x, d), b.get(x, d))
    return out


def align_states(ops: list[int], args: list[tuple], np: int) -> dict[int, State]:
    """Per load/store position, what each local's value is a multiple of there (a power
    of two; a local missing from the state: any multiple when it is not a parameter, as
    locals start at 0, else 1): a forward walk of the structured control flow, states
    joined (minimum) where branches meet; a loop head takes the minimum over what its body
    assigns. Empty when the function has exception or typed-reference control."""
    n = len(ops)
    if n > MAX_SCAN or any(op in _GIVE_UP for op in ops):
        return {}
    # loop extents and the alignments their bodies assign (by pattern only)
    open_: list[int] = []
    loops: dict[int, int] = {}
    for i in range(n):
        op = ops[i]
        if op == _OP_BLOCK or op == _OP_LOOP or op == _OP_IF:
            open_.append(i)
        elif op == _OP_END and open_:
            s = open_.pop()
            if ops[s] == _OP_LOOP:
                loops[s] = i
    # what each assignment stores, reading no local (the loop heads' bound)
    pat: dict[int, int] = {}
    stk: list[tuple[int, int]] = []
    for i in range(n):
        op = ops[i]
        if (op == _OP_SET or op == _OP_TEE) and stk:
            pat[i] = stk[-1][0]
        _step(op, args[i], stk, None, np)
    stk.clear()
    out: dict[int, State] = {}
    st: State | None = {}
    shared = False
    # frames: [opener, entry state, state joined at its end (None: unreached)]
    frames: list[list] = []
    for i in range(n):
        op = ops[i]
        if op != _OP_SET and op != _OP_TEE:
            _step(op, args[i], stk, st, np)
        if _OP_LOAD0 <= op < _OP_MEMSIZE:
            if st is not None:
                out[i] = st
                shared = True
        elif op == _OP_SET or op == _OP_TEE:
            a = stk[-1][0] if stk else 1
            _step(op, args[i], stk, st, np)
            if st is not None:
                x = args[i][0]
                if st.get(x, _ANY if x >= np else 1) != a:
                    if shared:
                        st, shared = dict(st), False
                    st[x] = a
        elif op == _OP_BLOCK:
            frames.append([i, st, None])
            shared = True
        elif op == _OP_IF:
            frames.append([i, st, None])
            shared = True
        elif op == _OP_LOOP:
            if st is not None:
                st = dict(st)
                for k in range(i + 1, loops.get(i, n)):
                    if ops[k] == _OP_SET or ops[k] == _OP_TEE:
                        x = args[k][0]
                        st[x] = min(st.get(x, _ANY if x >= np else 1), pat.get(k, 1))
            frames.append([i, st, None])
            shared = True
        elif op == _OP_ELSE and frames:
            f = frames[-1]
            f[2] = _join(f[2], st, np)
            st, f[0] = f[1], -1  # the else arm starts from the state before the `if`
            shared = True
        elif op == _OP_END and frames:
            f = frames.pop()
            if f[0] >= 0 and ops[f[0]] == _OP_IF:
                st = _join(st, f[1], np)  # no else: the condition false skips the arm
            st = _join(st, f[2], np)
            shared = True
        elif op == _OP_BR or op == _OP_BR_IF or op == _OP_BR_TABLE:
            targets = [args[i][0]] if op != _OP_BR_TABLE else [*args[i][0], args[i][1]]
            for d in targets:
                if d < len(frames):
                    f = frames[-1 - d]
                    if f[0] < 0 or ops[f[0]] != _OP_LOOP:
                        f[2] = _join(f[2], st, np)
            shared = True
            if op != _OP_BR_IF:
                st = None
        elif op == _OP_RETURN or op == _OP_UNREACHABLE:
            st = None
    return out
