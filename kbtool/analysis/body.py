"""Careful decoding of one body into ``(op_id, imms)`` pairs (for the few functions the
analysis walks; the whole-module work stays in :mod:`kbtool.wasm.facts`)."""

from __future__ import annotations

from array import array

from kbtool.wasm import FuncFacts
from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.opcodes import KIND, PREFIX_BASE


def decode_body(data: bytes, f: FuncFacts, limit: int | None = None) -> list[tuple[int, tuple]]:
    """``[(op_id, imms)]`` of ``f``'s body; at most ``limit`` instructions if given."""
    end = f.body_offset + f.body_size
    p = skip_local_decls(data, f.body_offset, end)
    out: list[tuple[int, tuple]] = []
    app = out.append
    n = limit if limit is not None else f.instr_count + 1
    while p < end and n > 0:
        op, p, imms = decode_one(data, p, end)
        app((op, imms))
        n -= 1
    return out


# immediates skipped by count of LEBs / fixed bytes; other kinds go through decode_one
_LEBS = {1: 1, 3: 1, 4: 1, 5: 1, 7: 1, 12: 1, 14: 1, 11: 2, 15: 2, 16: 1, 17: 2}
_FIXED = {0: 0, 8: 4, 9: 8, 19: 1, 21: 16, 22: 1}


def _fast_tables():

    plan = []  # per op id: ("leb", n) / ("fix", n) / ("mem", lane_bytes) / ("slow", 0)
    for k in KIND:
        if k in _LEBS:
            plan.append((1, _LEBS[k]))
        elif k in _FIXED:
            plan.append((2, _FIXED[k]))
        elif k == 2:
            plan.append((3, 0))
        elif k == 20:
            plan.append((3, 1))
        elif k == 6:
            plan.append((4, 0))
        else:
            plan.append((5, 0))
    return plan, PREFIX_BASE


_PLAN, _PBASE = _fast_tables()
_ATOMIC = _PBASE[0xFE]


def atomic_sites(data: bytes, f: FuncFacts) -> list[tuple[int, int | None]]:
    """``[(op_id, memarg_offset | None)]`` of every atomic (0xFE) instruction of ``f``, in
    order: read off the facts the module decoder already made (the op stream and the memargs)
    when they account for every site, else by scanning the body."""
    sites = _atomic_sites_from_facts(f)
    return sites if sites is not None else _scan_atomic_sites(data, f)


def _atomic_sites_from_facts(f: FuncFacts) -> list[tuple[int, int | None]] | None:
    """The sites from ``f.ops`` (every op id in order) and ``f.mem_ops`` (every memarg in
    order); None when they do not hold all ``f.atomic_sites`` sites."""
    ops = array("H")
    ops.frombytes(f.ops)
    offsets = [off for op, off, _w in f.mem_ops if op >= _ATOMIC]
    out: list[tuple[int, int | None]] = []
    k = 0
    for op in ops:
        if op >= _ATOMIC:
            if KIND[op] in (2, 20):  # a memarg (+ lane)
                if k >= len(offsets):
                    return None
                out.append((op, offsets[k]))
                k += 1
            else:  # atomic.fence
                out.append((op, None))
    if len(out) != f.atomic_sites or k != len(offsets):
        return None
    return out


def _scan_atomic_sites(data: bytes, f: FuncFacts) -> list[tuple[int, int | None]]:
    """:func:`atomic_sites` by scanning the body. A lean skipper: immediates are skipped, only atomic memargs are decoded;
    rare immediate kinds go through the careful decoder."""
    end = f.body_offset + f.body_size
    p = skip_local_decls(data, f.body_offset, end)
    plan = _PLAN
    out = []
    while p < end:
        start = p
        b = data[p]
        p += 1
        if 0xFB <= b <= 0xFE:
            sub = data[p]
            p += 1
            if sub >= 0x80:
                shift = 7
                sub &= 0x7F
                while True:
                    c = data[p]
                    p += 1
                    sub |= (c & 0x7F) << shift
                    if c < 0x80:
                        break
                    shift += 7
            op = _PBASE[b] + sub
        else:
            op = b
        if op >= len(plan):
            op, p, _ = decode_one(data, start, end)
            continue
        how, n = plan[op]
        if how == 1:
            for _ in range(n):
                while data[p] & 0x80:
                    p += 1
                p += 1
        elif how == 2:
            p += n
        elif how == 3:
            align = data[p]
            if align & 0x80 or align & 0x40:  # rare: multi-memory or long align
                op, p, imms = decode_one(data, start, end)
                if op >= _ATOMIC:
                    out.append((op, imms[1]))
                continue
            p += 1
            off = 0
            shift = 0
            while True:
                c = data[p]
                p += 1
                off |= (c & 0x7F) << shift
                if c < 0x80:
                    break
                shift += 7
            p += n
            if op >= _ATOMIC:
                out.append((op, off))
        elif how == 4:
            c = data[p]
            if c == 0x40 or c >= 0x6F and c < 0x80:
                p += 1
            else:
                op, p, _ = decode_one(data, start, end)
        else:
            op, p, _ = decode_one(data, start, end)
        if b == 0xFE and how != 3:
            out.append((op, None))
    if p != end:
        raise ValueError(f"function {f.index}: body walk ended at {p}, expected {end}")
    return out
