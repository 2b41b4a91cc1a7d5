"""The fast reference scan of the data model (what ingest runs on every body).

Gives exactly the references of :func:`kbtool.analysis.datarefs.function_refs_careful`
(tests compare both on real modules), at a fraction of the cost, by two shortcuts:

- **Per function, from the decoder's facts** (``consts``, ``mem_ops``, ``globals_used``,
  ``call_indirect``): a function with no constant that could land in the data (``[lo -
  largest memarg offset, mem_hi)``) and no memory offset in ``[lo, mem_hi)`` can only
  read/write globals and call through tables; it is walked in *globals mode* (no operand
  stack at all), and skipped when it has no global and no indirect call either.
- **Inside a body, a compiled regex skips the instructions that cannot matter.** The careful
  walk's operand stack holds ``None`` for every unknown value; while the whole stack is
  unknown (the common state), an instruction that only pops and pushes unknowns (locals,
  arithmetic, control flow, calls, loads and stores whose memarg offset lies below ``lo``)
  changes nothing but the depth, and an all-unknown stack of any depth behaves as an empty
  one (a pop from an empty stack is unknown too). So the scan lets ``re`` consume such runs
  at C speed and walks one instruction at a time only from a constant, a global access, an
  indirect call or an instruction the regex does not know, until the stack is all unknown
  again. Go's (pointer, length) pairs count instructions: while a pointer store waits for
  its length (``GO_PAIR_WINDOW`` instructions) the walk stays one instruction at a time.

Plain functions over ints, bytes and lists (no closures). Compiling this module with mypyc
gave no gain (the time is in ``re`` and the rare instructions' careful decoding); ingest runs
:mod:`.datawalk` instead when its compiled twin is built (one typed loop, no regex: ffmpeg
0.35 s CPU against 1.7 s here on two processes) and this scan, the pure reference, otherwise
(:mod:`.datawalk_active`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter

from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.opcodes import (
    K_BLOCK,
    K_BYTE,
    K_CALL,
    K_CALL_INDIRECT,
    K_F32,
    K_F64,
    K_I32,
    K_I64,
    K_LANE,
    K_MEM,
    K_MEM_LANE,
    K_NONE,
    K_REF_FUNC,
    K_TABLE,
    K_TABLE2,
    K_TYPE,
    K_U32,
    K_U32X2,
    K_V128,
    KIND,
    PREFIX_BASE,
    PREFIX_SLOTS,
)

from .datarefs import (
    _CALLS,
    _CLASS,
    _ONE_LEB,
    GO_PAIR_WINDOW,
    MAX_GO_STRING,
    DataRef,
    _sleb,
    _uleb,
    bss_address,
)

_LEB = rb"[\x80-\xff]*[\x00-\x7f]"


def _cls(bs: list[int]) -> bytes:
    return b"[" + b"".join(re.escape(bytes([b])) for b in bs) + b"]"


def _small_leb(bits: int) -> bytes:
    """An unsigned LEB of a value below ``2**bits`` (the shortest encodings only)."""
    if bits <= 0:
        return b"(?!)"
    alts = []
    n = 1
    while True:
        last = bits - 7 * (n - 1)
        top = min(0x7F, (1 << last) - 1) if last < 7 else 0x7F
        alts.append(rb"[\x80-\xff]" * (n - 1) + _cls(list(range(0, top + 1))))
        if last <= 7:
            break
        n += 1
    return b"(?:" + b"|".join(alts) + b")"


def _small_sleb(bits: int) -> bytes:
    """A signed LEB of a value in ``[0, 2**bits)`` (the shortest encodings only)."""
    alts = []
    n = 1
    while True:
        last = bits - 7 * (n - 1)
        top = min(0x3F, (1 << last) - 1) if last < 7 else 0x3F
        alts.append(rb"[\x80-\xff]" * (n - 1) + _cls(list(range(0, top + 1))))
        if last <= 6:
            break
        n += 1
    return b"(?:" + b"|".join(alts) + b")"


@lru_cache(maxsize=256)
def skip_pattern(lo_bits: int, consts_boring: bool, const_bits: int = -1) -> re.Pattern[bytes]:
    """The regex of a run of instructions that leave an all-unknown stack all unknown and
    emit nothing. ``lo_bits``: memarg offsets below ``2**lo_bits`` are outside the data
    (``-1``: any offset is); ``consts_boring``: constants are unknowns too (globals mode);
    ``const_bits`` (>= 0): a negative constant or one below ``2**const_bits`` is too (it
    cannot reach the data, even plus the body's largest memarg offset)."""
    plain: list[int] = []  # one byte, no immediates
    one_leb: list[int] = []
    mem: list[int] = []
    for b in range(0xFB):
        k = KIND[b]
        c = _CLASS[b]
        if c in (9, 10, 11):  # global.get/set, call_indirect: they emit
            continue
        if k == K_NONE:
            plain.append(b)
        elif k in (K_U32, K_CALL, K_REF_FUNC, K_TABLE, K_TYPE) and b != 0xD0:
            one_leb.append(b)
        elif k == K_MEM:
            mem.append(b)
        elif k in (K_I32, K_I64) and consts_boring:
            one_leb.append(b)
    alts = [_cls(plain), _cls(one_leb) + _LEB]
    if not consts_boring and const_bits >= 0:
        consts = [b for b in range(0xFB) if KIND[b] in (K_I32, K_I64)]
        alts.append(_cls(consts) + b"(?:" + _small_sleb(const_bits) + rb"|[\x80-\xff]*[\x40-\x7f])")
    offset = _LEB if lo_bits < 0 else _small_leb(lo_bits)
    if not consts_boring and lo_bits >= 1:  # (2**0 = 1 may be lo itself: lo 0 or 1)
        alts.append(_const_then_consumer(lo_bits, offset))
    alts.append(_cls(mem) + rb"[\x00-\x3f]" + offset)
    blocks = [b for b in range(0xFB) if KIND[b] == K_BLOCK]
    # blocktype: empty/valtype (one negative byte, not a (ref ht) prefix) or a type index
    alts.append(_cls(blocks) + rb"(?:[\x40-\x62\x65-\x7f]|[\x80-\xff]*[\x00-\x3f])")
    alts.append(_cls([b for b in range(0xFB) if KIND[b] == K_F32]) + rb"[\x00-\xff]{4}")
    alts.append(_cls([b for b in range(0xFB) if KIND[b] == K_F64]) + rb"[\x00-\xff]{8}")
    alts.extend(_prefixed(offset))
    return re.compile(b"(?:" + b"|".join(alts) + b")*+", re.DOTALL)


def _const_then_consumer(lo_bits: int, offset: bytes) -> bytes:
    """A constant that is no data address (negative or below ``2**lo_bits`` <= ``lo``)
    followed by an instruction that consumes it at once from an all-unknown stack and
    leaves the stack all unknown, emitting nothing: a binary or unary operator (pushes an
    unknown: the constant is outside ``[lo, hi)``), ``local.set``/``local.tee``/``drop``, a
    store whose memarg offset is below the data (the constant is its value, the address
    unknown), or a call or control instruction (pops all; the constant is below ``lo``).
    The commonest walks of the careful scan (``i32.const 4; i32.add``...)."""
    consts = [b for b in range(0xFB) if KIND[b] in (K_I32, K_I64)]
    plain: list[int] = []
    one_leb: list[int] = []
    stores: list[int] = []
    for b in range(0xFB):
        k, c = KIND[b], _CLASS[b]
        if c in (4, 5, 7, 8) or (c == 0 and b not in consts):
            if k == K_NONE:
                plain.append(b)
            elif k in (K_U32, K_CALL) and b != 0xD0:
                one_leb.append(b)
        elif c == 3 and k == K_MEM:
            stores.append(b)
    follow = (
        b"(?:"
        + b"|".join([_cls(plain), _cls(one_leb) + _LEB, _cls(stores) + rb"[\x00-\x3f]" + offset])
        + b")"
    )
    return _cls(consts) + b"(?:" + _small_sleb(lo_bits) + rb"|[\x80-\xff]*[\x40-\x7f])" + follow


def _prefixed(offset: bytes) -> list[bytes]:
    """Alternatives for the prefixed instructions (0xFC bulk memory and conversions, 0xFD
    SIMD, 0xFE atomics) that cannot matter on an all-unknown stack: their sub-opcode (a
    LEB, the shortest encoding) and immediates; data loads/stores only with ``offset``."""
    imm_of = {
        K_NONE: b"",
        K_LANE: rb"[\x00-\xff]",
        K_BYTE: rb"[\x00-\xff]",
        K_V128: rb"[\x00-\xff]{16}",
        K_U32: _LEB,
        K_TABLE: _LEB,
        K_U32X2: _LEB + _LEB,
        K_TABLE2: _LEB + _LEB,
    }
    out = []
    for prefix in (0xFC, 0xFD, 0xFE):
        groups: dict[bytes, list[bytes]] = {}
        for sub in range(PREFIX_SLOTS[prefix]):
            op = PREFIX_BASE[prefix] + sub
            k = KIND[op]
            c = _CLASS[op] if op < len(_CLASS) else 0
            if k == K_MEM:
                imm = rb"[\x00-\x3f]" + (offset if c in (2, 3) else _LEB)
            elif k == K_MEM_LANE and c not in (2, 3):
                imm = rb"[\x00-\x3f]" + _LEB + rb"[\x00-\xff]"
            elif k in imm_of and c not in (9, 10, 11):
                imm = imm_of[k]
            else:
                continue
            enc = bytes([sub]) if sub < 0x80 else bytes([0x80 | (sub & 0x7F), sub >> 7])
            groups.setdefault(imm, []).append(enc)
        for imm, encs in groups.items():
            one = [e[0] for e in encs if len(e) == 1]
            two = [re.escape(e) for e in encs if len(e) == 2]
            subs = ([_cls(one)] if one else []) + two
            out.append(re.escape(bytes([prefix])) + b"(?:" + b"|".join(subs) + b")" + imm)
    return out


def lo_bits(lo: int) -> int:
    """The largest ``k`` with ``2**k <= lo`` (offsets below ``2**k`` are below the data)."""
    return lo.bit_length() - 1 if lo > 0 else 0


def globals_refs(data: bytes, func_index: int, body_offset: int, body_size: int) -> list[DataRef]:
    """Globals mode: the global reads/writes and indirect calls of one body."""
    end = body_offset + body_size
    p = skip_local_decls(data, body_offset, end)
    out: list[DataRef] = []
    skip = skip_pattern(-1, True).match
    while True:
        m = skip(data, p, end)
        assert m is not None
        p = m.end()
        if p >= end:
            break
        at = p
        op, p, imms = decode_one(data, p, end)
        c = _CLASS[op] if op < len(_CLASS) else 0
        if c == 9:
            out.append(DataRef(func_index, at, "read", "global", int(imms[0])))
        elif c == 10:
            out.append(DataRef(func_index, at, "write", "global", int(imms[0])))
        elif c == 11:
            out.append(
                DataRef(
                    func_index, at, "call_indirect", "table", int(imms[1]) if len(imms) > 1 else 0
                )
            )
    return out


def data_refs(
    data: bytes,
    func_index: int,
    body_offset: int,
    body_size: int,
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
    floor: int | None = None,
) -> list[DataRef]:
    """Data mode: :func:`kbtool.analysis.datarefs.function_refs` with the regex skips.
    ``floor``: ``lo`` minus the body's largest memarg offset (a constant below it and not
    negative... see :func:`skip_pattern`); outside Go, constants below it and negative ones
    are skipped like any unknown (a Go length is a small constant: there they never are)."""
    end = body_offset + body_size
    p = skip_local_decls(data, body_offset, end)
    out: list[DataRef] = []
    emit = out.append
    stack: list[tuple[str, int, int] | None] = []
    push = stack.append
    cls, kinds, width = _CLASS, KIND, _width()
    ncls = len(cls)
    skip = skip_pattern(
        lo_bits(lo), False, lo_bits(floor) if floor is not None and floor > 0 and not go else -1
    ).match
    # outside Go, a constant below ``floor`` or at/above ``mem_hi`` acts as an unknown in
    # every rule below (plus any memarg offset of the body it stays outside [lo, mem_hi)):
    # it is pushed as one, so the stack falls back to all-unknown (and the regex) sooner
    c_lo = -(1 << 64) if go or floor is None else floor
    c_hi = (1 << 64) if go else mem_hi
    pending: tuple[int, int, int] | None = None
    n = 0
    while p < end:
        if not stack and pending is None:
            m = skip(data, p, end)
            assert m is not None
            p = m.end()
            if p >= end:
                break
            op = data[p]
            if op == 0x23 or op == 0x24:
                # global.get/set on an all-unknown stack: the reference, and the stack
                # stays all unknown (the commonest stop: the stack pointer)
                x = data[p + 1]
                if x < 0x80:
                    q = p + 2
                else:
                    x, q = _uleb(data, p + 1)
                emit(DataRef(func_index, p, "read" if op == 0x23 else "write", "global", x))
                p = q
                continue
        at = p
        op = data[p]
        k = kinds[op] if op < 0xFB else -1
        # the one-byte LEBs inline (most immediates): _sleb/_uleb otherwise
        if k == K_NONE:
            p += 1
            x = 0
        elif k == K_I32:
            x = data[p + 1]
            if x < 0x40:
                p += 2
            elif x < 0x80:
                x -= 0x80
                p += 2
            else:
                x, p = _sleb(data, p + 1, 32)
        elif k in _ONE_LEB:
            x = data[p + 1]
            if x < 0x80:
                p += 2
            else:
                x, p = _uleb(data, p + 1)
        elif k == K_MEM:
            if data[p + 1] < 0x40:  # align, no memory index
                p += 2
            else:
                align, p = _uleb(data, p + 1)
                if align & 0x40:
                    _mi, p = _uleb(data, p)
            x = data[p]
            if x < 0x80:
                p += 1
            else:
                x, p = _uleb(data, p)
        elif k == K_I64:
            x, p = _sleb(data, p + 1, 64)
        else:
            op, p, imms = decode_one(data, p, end)
            x = int(imms[1]) if kinds[op] in (K_MEM, K_CALL_INDIRECT) else 0
        n += 1
        c = cls[op] if op < ncls else 0
        if c == 0:
            top = mem_hi if op in _CALLS else hi
            while stack:
                v = stack.pop()
                if (
                    v is not None
                    and v[0] == "c"
                    and lo <= v[1] < top
                    and (v[1] < hi or bss_address(v[1]))
                ):
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
            if pending is not None and n - pending[2] >= GO_PAIR_WINDOW:
                pending = None
            continue
        if go and c == 3 and stack and stack[-1] is not None and stack[-1][0] == "c":
            v0 = stack[-1][1]
            if (
                pending is not None
                and n - pending[2] <= GO_PAIR_WINDOW
                and 0 < v0 <= MAX_GO_STRING
                and pending[0] + v0 <= hi
            ):
                emit(DataRef(func_index, pending[1], "gostring", "data", pending[0], v0))
                pending = None
            elif lo <= v0 < hi:
                pending = (v0, stack[-1][2], n)
        # (by frequency: constants, binary operators, local.get, loads...)
        if c == 1:
            push(("c", x, at) if c_lo <= x < c_hi else None)
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
        elif c == 6:
            push(None)
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
            if stack:
                v = stack.pop()
                if (
                    v is not None
                    and v[0] == "c"
                    and lo <= v[1] < mem_hi
                    and (v[1] < hi or bss_address(v[1]))
                ):
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
            a = stack.pop() if stack else None
            if a is not None and a[0] == "c" and lo <= a[1] + x < mem_hi:
                emit(DataRef(func_index, a[2], "store", "data", a[1] + x, width[op]))
            elif (a is None or a[0] != "a") and lo <= x < mem_hi:
                emit(DataRef(func_index, at, "store", "data", x, width[op]))
        elif c == 5 or c == 7 or c == 8:
            if stack:
                v = stack.pop()
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
            if c != 7:
                push(None)
        elif c == 9:
            emit(DataRef(func_index, at, "read", "global", x))
            push(None)
        elif c == 10:
            emit(DataRef(func_index, at, "write", "global", x))
            if stack:
                v = stack.pop()
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
        elif c == 11:
            idx = stack.pop() if stack else None
            if idx is not None and idx[0] == "l":
                emit(DataRef(func_index, idx[2], "funcptr", "data", idx[1]))
            emit(DataRef(func_index, at, "call_indirect", "table", x))
            while stack:
                v = stack.pop()
                if (
                    v is not None
                    and v[0] == "c"
                    and lo <= v[1] < mem_hi
                    and (v[1] < hi or bss_address(v[1]))
                ):
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
        if stack and not any(stack):
            stack.clear()
        if pending is not None and n - pending[2] >= GO_PAIR_WINDOW:
            pending = None
    return out


_second = itemgetter(1)


@lru_cache(maxsize=1)
def _width() -> bytes:
    from kbtool.wasm.opcodes import WIDTH

    return bytes(WIDTH)


def max_offset(mem_ops: list[tuple[int, int, int]]) -> int:
    """The largest memarg offset of a body (``mem_ops``: the decoder's (op, offset, width))."""
    return max(0, max(map(_second, mem_ops), default=0))  # (one C loop)


def might_touch_data(
    consts: list[int], mem_ops: list[tuple[int, int, int]], lo: int, mem_hi: int
) -> bool:
    """Whether a body with these facts can reference data in ``[lo, mem_hi)``: a memarg
    offset inside, or a constant that alone or plus a memarg offset lands inside."""
    maxoff = 0
    for m in mem_ops:
        x = m[1]
        if lo <= x < mem_hi:
            return True
        if x > maxoff:
            maxoff = x
    floor = lo - maxoff
    for v in consts:
        if floor <= v < mem_hi:
            return True
    return False


def module_refs(
    data: bytes,
    funcs: list[tuple[int, int, int, int, int]],
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
) -> list[list[DataRef]]:
    """The references of many bodies, one list per body: ``funcs`` are ``(func_index,
    body_offset, body_size, mode, floor)`` with mode 2 (data), 1 (globals only) or 0
    (nothing to find)."""
    out: list[list[DataRef]] = []
    for fi, off, size, mode, floor in funcs:
        if mode == 2:
            out.append(data_refs(data, fi, off, size, lo, hi, go, mem_hi, floor))
        elif mode == 1:
            out.append(globals_refs(data, fi, off, size))
        else:
            out.append([])
    return out


# the scan's arguments, set before the pool forks (inherited, never pickled)
_STATE: dict[str, object] = {}
PARALLEL_MIN_BYTES = 4 << 20  # code bytes below which one process scans alone


def _run_chunk(chunk: list[tuple[int, int, int, int, int]]) -> list[list[tuple]]:
    st = _STATE
    res = module_refs(st["data"], chunk, st["lo"], st["hi"], st["go"], st["mem_hi"])  # type: ignore[arg-type]
    return [
        [(r.func_index, r.offset, r.kind, r.target_kind, r.target, r.width) for r in refs]
        for refs in res
    ]


def parallel_refs(
    data: bytes,
    plan: list[tuple[int, int, int, int, int]],
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
    workers: int,
    progress: object = None,
) -> list[list[DataRef]] | None:
    """:func:`module_refs` on this process and ``workers - 1`` forked ones (bodies are
    independent), in the plan's order; None when it should run in this process alone
    instead (one worker, a small module, a threaded process that must not fork:
    :mod:`kbtool.wasm.workers`)."""
    work = sum(p[2] for p in plan if p[3])
    if workers < 2 or work < PARALLEL_MIN_BYTES:
        return None
    from concurrent.futures import ProcessPoolExecutor

    from kbtool.wasm.workers import kill_workers, pool_context, signals_deferred, worker_init

    mpctx = pool_context()
    if mpctx is None:
        return None
    import os

    # this process scans the first 1/workers of the work itself (no pickling of its
    # references, one process less to fork); workers - 1 forked ones take the rest
    own: list[tuple[int, int, int, int, int]] = []
    size = 0
    k = 0
    while k < len(plan) and size < work / workers:
        own.append(plan[k])
        size += plan[k][2] if plan[k][3] else 0
        k += 1
    chunks: list[list[tuple[int, int, int, int, int]]] = [[]]
    size = 0
    target = work / (workers * 8) + 1
    for p in plan[k:]:
        chunks[-1].append(p)
        size += p[2] if p[3] else 0
        if size >= target:
            chunks.append([])
            size = 0
    _STATE.update(data=data, lo=lo, hi=hi, go=go, mem_hi=mem_hi)
    ex = ProcessPoolExecutor(
        max_workers=workers - 1, mp_context=mpctx, initializer=worker_init, initargs=(os.getpid(),)
    )
    try:
        with signals_deferred():
            futures = [ex.submit(_run_chunk, c) for c in chunks]
        out = module_refs(data, own, lo, hi, go, mem_hi)
        done = len(own)
        if callable(progress):
            progress(done, len(plan))
        for chunk, fut in zip(chunks, futures, strict=True):
            out.extend([DataRef(*t) for t in refs] for refs in fut.result())
            done += len(chunk)
            if callable(progress):
                progress(done, len(plan))
    except BaseException:
        kill_workers(ex)
        raise
    else:
        ex.shutdown(wait=True)
    finally:
        _STATE.clear()
    return out
