"""References from code to data and globals (:mod:`kbtool.analysis.datamodel`): the careful
walk (the reference) and its inlined twin :func:`function_refs`; ingest runs the faster
:mod:`kbtool.analysis.datascan`, which gives the same references.

The operand tracking is a small symbolic stack over straight-line code: a constant that a
load or store consumes as its address is a ``load``/``store`` of ``const + memarg offset``
(clang's ``i32.const 0; i32.load offset=G`` for a global variable), any other constant
inside the data range is ``addr``. Control flow and calls reset the stack (no guessing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.leb import read_sleb, read_uleb
from kbtool.wasm.opcodes import (
    K_CALL,
    K_CALL_INDIRECT,
    K_GLOBAL,
    K_I32,
    K_I64,
    K_MEM,
    K_NONE,
    K_PREFIX,
    K_REF_FUNC,
    K_TABLE,
    K_TYPE,
    K_U32,
    KIND,
    MNEMONICS,
    WIDTH,
)

from .datatypes import GO_PAIR_WINDOW, MAX_GO_STRING, DataRef

_BINARY = re.compile(
    r"^[if](32|64)\.(add|sub|mul|div(_[su])?|rem_[su]|and|or|xor|shl|shr_[su]|rotl|rotr|eq|ne|"
    r"[lg][te](_[su])?|min|max|copysign)$"
)
_UNARY = re.compile(
    r"^[if](32|64)\.(eqz|clz|ctz|popcnt|neg|abs|sqrt|ceil|floor|trunc|nearest|"
    r"wrap_\w+|extend\w*|convert_\w+|demote_\w+|promote_\w+|reinterpret_\w+|"
    r"trunc_\w+)$"
)
# per op id: 1 const (i32/i64), 2 load, 3 store, 4 binary, 5 unary, 6 local.get/global.get,
# 7 local.set/drop, 8 local.tee, 9 global.get, 10 global.set, 11 call_indirect, 0 other (reset)
_CLASS = bytearray(len(MNEMONICS))
for _op, _mn in enumerate(MNEMONICS):
    if _mn in ("i32.const", "i64.const"):
        _CLASS[_op] = 1
    elif WIDTH[_op] and ".load" in _mn and "atomic" not in _mn and "lane" not in _mn:
        _CLASS[_op] = 2
    elif WIDTH[_op] and ".store" in _mn and "atomic" not in _mn and "lane" not in _mn:
        _CLASS[_op] = 3
    elif _BINARY.match(_mn):
        _CLASS[_op] = 4
    elif _UNARY.match(_mn):
        _CLASS[_op] = 5
    elif _mn == "local.get":
        _CLASS[_op] = 6
    elif _mn in ("local.set", "drop"):
        _CLASS[_op] = 7
    elif _mn == "local.tee":
        _CLASS[_op] = 8
    elif _mn == "global.get":
        _CLASS[_op] = 9
    elif _mn == "global.set":
        _CLASS[_op] = 10
    elif _mn in ("call_indirect", "return_call_indirect"):
        _CLASS[_op] = 11
    elif _mn in ("nop",):
        _CLASS[_op] = 12


def function_refs_careful(
    data: bytes,
    func_index: int,
    body_offset: int,
    body_size: int,
    lo: int,
    hi: int,
    go: bool = False,
    mem_hi: int | None = None,
) -> Iterable[DataRef]:
    """The data and global references of one body; data addresses are those in ``[lo, hi)``.
    (The reference implementation, on the careful decoder; :func:`function_refs` is the fast
    one and gives the same references.)

    Stack entries: ``("c", value, offset)`` a constant, ``("a", base, offset)`` an address
    computed from a data constant, ``("l", base, offset)`` a value loaded through such an
    address, ``None`` unknown. A ``call_indirect`` whose index was loaded through
    ``base + i * 4`` marks ``base`` as a function-pointer table (kind ``funcptr``).
    Loads and stores count up to ``mem_hi`` (default ``hi``): static variables without
    initial bytes (.bss) are only ever addressed by memory accesses; a constant merely
    passed on counts only inside the initialised data.

    Go (``go=True``) builds a string value by storing its pointer and then, a few
    instructions later, its length: such a pair is a ``gostring`` reference whose ``width``
    is the length.
    """
    end = body_offset + body_size
    mem_hi = hi if mem_hi is None else mem_hi
    p = skip_local_decls(data, body_offset, end)
    stack: list[tuple[str, int, int] | None] = []
    cls = _CLASS
    pending: tuple[int, int, int] | None = None  # Go: (pointer stored, its offset, instrs ago)
    n = 0

    def pop() -> tuple[str, int, int] | None:
        return stack.pop() if stack else None

    def spill(n: int, top: int = hi) -> Iterable[DataRef]:
        # operands consumed by something that is not a memory access: constants in the data
        # range among them are addresses passed on (to a call, a local, a global); a call's
        # arguments and a stored value count up to ``top`` (.bss arrays passed by address)
        for _ in range(min(n, len(stack))):
            v = stack.pop()
            if (
                v is not None
                and v[0] == "c"
                and lo <= v[1] < top
                and (v[1] < hi or bss_address(v[1]))
            ):
                yield DataRef(func_index, v[2], "addr", "data", v[1])

    while p < end:
        at = p
        op, p, imms = decode_one(data, p, end)
        n += 1
        c = cls[op] if op < len(cls) else 0
        if go and c == 3 and stack and stack[-1] is not None and stack[-1][0] == "c":
            v = stack[-1][1]
            if (
                pending is not None
                and n - pending[2] <= GO_PAIR_WINDOW
                and 0 < v <= MAX_GO_STRING
                and pending[0] + v <= hi
            ):
                yield DataRef(func_index, pending[1], "gostring", "data", pending[0], v)
                pending = None
            elif lo <= v < hi:
                pending = (v, stack[-1][2], n)
        if c == 1:
            stack.append(("c", int(imms[0]), at))
        elif c == 2:  # load: address on top
            a = pop()
            off = int(imms[1])
            if a is not None and a[0] == "c" and lo <= a[1] + off < mem_hi:
                yield DataRef(func_index, a[2], "load", "data", a[1] + off, WIDTH[op])
                stack.append(None)
            elif a is not None and a[0] == "a":
                stack.append(("l", a[1], a[2]))
            else:
                if lo <= off < mem_hi:  # a static array indexed by a computed value
                    yield DataRef(func_index, at, "load", "data", off, WIDTH[op])
                stack.append(None)
        elif c == 3:  # store: value on top, address below
            yield from spill(1, mem_hi)
            a = pop()
            off = int(imms[1])
            if a is not None and a[0] == "c" and lo <= a[1] + off < mem_hi:
                yield DataRef(func_index, a[2], "store", "data", a[1] + off, WIDTH[op])
            elif (a is None or a[0] != "a") and lo <= off < mem_hi:
                yield DataRef(func_index, at, "store", "data", off, WIDTH[op])
        elif c == 4:
            b, a = pop(), pop()
            derived = None
            for v in (a, b):
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    # base + index: the base is the address of a table or an array
                    yield DataRef(func_index, v[2], "addr", "data", v[1])
                    derived = ("a", v[1], v[2])
                elif v is not None and v[0] == "a":
                    derived = v
            stack.append(derived)
        elif c == 5:
            yield from spill(1)
            stack.append(None)
        elif c == 6:
            stack.append(None)
        elif c == 7:
            yield from spill(1)
        elif c == 8:
            yield from spill(1)
            stack.append(None)
        elif c == 9:
            yield DataRef(func_index, at, "read", "global", int(imms[0]))
            stack.append(None)
        elif c == 10:
            yield DataRef(func_index, at, "write", "global", int(imms[0]))
            yield from spill(1)
        elif c == 11:
            idx = pop()
            if idx is not None and idx[0] == "l":
                yield DataRef(func_index, idx[2], "funcptr", "data", idx[1])
            yield DataRef(
                func_index, at, "call_indirect", "table", int(imms[1]) if len(imms) > 1 else 0
            )
            yield from spill(len(stack), mem_hi)
        elif c == 12:
            pass
        else:  # calls, control flow, anything else: operands leave, what stays is unknown
            yield from spill(len(stack), mem_hi if op in _CALLS else hi)


def _uleb(data: bytes, p: int) -> tuple[int, int]:
    x = data[p]
    if x < 0x80:
        return x, p + 1
    return read_uleb(data, p, len(data), 64)


def _sleb(data: bytes, p: int, bits: int) -> tuple[int, int]:
    x = data[p]
    if x < 0x40:
        return x, p + 1
    if x < 0x80:
        return x - 0x80, p + 1
    return read_sleb(data, p, len(data), bits)


def bss_address(v: int) -> bool:
    """Whether a constant past the initialised data, passed to a call or stored, is taken as
    a .bss address: not a round size (a power of two, a multiple of 1000)."""
    return v & (v - 1) != 0 and v % 1000 != 0


# calls (their arguments may be .bss arrays passed by address)
_CALLS = frozenset(op for op, mn in enumerate(MNEMONICS) if mn in ("call", "return_call"))

# immediate kinds the fast scan reads itself; every other kind goes to decode_one
_ONE_LEB = frozenset({K_U32, K_GLOBAL, K_CALL, K_REF_FUNC, K_TABLE, K_TYPE})


def function_refs(
    data: bytes,
    func_index: int,
    body_offset: int,
    body_size: int,
    lo: int,
    hi: int,
    go: bool = False,
    mem_hi: int | None = None,
) -> list[DataRef]:
    """The data and global references of one body (see :func:`function_refs_careful`, which
    this inlines: the common immediates are read here, rare ones by the careful decoder)."""
    end = body_offset + body_size
    mem_hi = hi if mem_hi is None else mem_hi
    p = skip_local_decls(data, body_offset, end)
    out: list[DataRef] = []
    emit = out.append
    stack: list[tuple[str, int, int] | None] = []
    push = stack.append
    cls, kinds, width = _CLASS, KIND, WIDTH
    pending: tuple[int, int, int] | None = None
    n = 0

    def spill(k: int, top: int = hi) -> None:
        for _ in range(min(k, len(stack))):
            v = stack.pop()
            if (
                v is not None
                and v[0] == "c"
                and lo <= v[1] < top
                and (v[1] < hi or bss_address(v[1]))
            ):
                emit(DataRef(func_index, v[2], "addr", "data", v[1]))

    while p < end:
        at = p
        b = data[p]
        k = kinds[b] if b < 0xFB else K_PREFIX
        if k == K_NONE:
            op, p, x = b, p + 1, 0
        elif k in _ONE_LEB:
            op = b
            x, p = _uleb(data, p + 1)
        elif k == K_I32:
            op = b
            x, p = _sleb(data, p + 1, 32)
        elif k == K_I64:
            op = b
            x, p = _sleb(data, p + 1, 64)
        elif k == K_MEM:
            op = b
            align, p = _uleb(data, p + 1)
            if align & 0x40:
                _mi, p = _uleb(data, p)
            x, p = _uleb(data, p)
        else:
            op, p, imms = decode_one(data, p, end)
            x = int(imms[1]) if kinds[op] in (K_MEM, K_CALL_INDIRECT) else 0
        n += 1
        c = cls[op] if op < len(cls) else 0
        if c == 0:
            spill(len(stack), mem_hi if op in _CALLS else hi)
            continue
        if go and c == 3 and stack and stack[-1] is not None and stack[-1][0] == "c":
            v = stack[-1][1]
            if (
                pending is not None
                and n - pending[2] <= GO_PAIR_WINDOW
                and 0 < v <= MAX_GO_STRING
                and pending[0] + v <= hi
            ):
                emit(DataRef(func_index, pending[1], "gostring", "data", pending[0], v))
                pending = None
            elif lo <= v < hi:
                pending = (v, stack[-1][2], n)
        if c == 6:
            push(None)
        elif c == 1:
            push(("c", x, at))
        elif c == 2:
            a = stack.pop() if stack else None
            if a is not None and a[0] == "c" and lo <= a[1] + x < mem_hi:
                emit(DataRef(func_index, a[2], "load", "data", a[1] + x, width[op]))
                push(None)
            elif a is not None and a[0] == "a":
                push(("l", a[1], a[2]))
            else:
                if lo <= x < mem_hi:
                    emit(DataRef(func_index, at, "load", "data", x, width[op]))
                push(None)
        elif c == 3:
            spill(1, mem_hi)
            a = stack.pop() if stack else None
            if a is not None and a[0] == "c" and lo <= a[1] + x < mem_hi:
                emit(DataRef(func_index, a[2], "store", "data", a[1] + x, width[op]))
            elif (a is None or a[0] != "a") and lo <= x < mem_hi:
                emit(DataRef(func_index, at, "store", "data", x, width[op]))
        elif c == 4:
            v2 = stack.pop() if stack else None
            v1 = stack.pop() if stack else None
            derived = None
            for v in (v1, v2):
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
                    derived = ("a", v[1], v[2])
                elif v is not None and v[0] == "a":
                    derived = v
            push(derived)
        elif c == 5:
            spill(1)
            push(None)
        elif c == 7:
            spill(1)
        elif c == 8:
            spill(1)
            push(None)
        elif c == 9:
            emit(DataRef(func_index, at, "read", "global", x))
            push(None)
        elif c == 10:
            emit(DataRef(func_index, at, "write", "global", x))
            spill(1)
        elif c == 11:
            idx = stack.pop() if stack else None
            if idx is not None and idx[0] == "l":
                emit(DataRef(func_index, idx[2], "funcptr", "data", idx[1]))
            emit(DataRef(func_index, at, "call_indirect", "table", x))
            spill(len(stack), mem_hi)
    return out
