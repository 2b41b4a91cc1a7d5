"""The data model's reference scan as one plain loop over the bytes, compiled with mypyc at
install into the twin ``kbtool.analysis._cdatawalk`` (:mod:`.datawalk_active` loads it).

Gives exactly the references of :func:`kbtool.analysis.datascan.module_refs` (the pure path:
a regex skips what cannot matter; tests compare both on corpus modules), which gives those
of the careful walk :func:`kbtool.analysis.datarefs.function_refs_careful`. Compiled, one
typed loop beats the regex: no per-instruction Python, the symbolic stack is three int lists
and a count of its known entries (an all-unknown stack of any depth behaves as an empty
one, so it is dropped at once), and a constant that cannot reach the data (below ``floor``
or at/above ``mem_hi``, outside Go) is pushed as an unknown. Run pure, this module is the
slowest of the three: :mod:`.datascan` is the fallback when the twin is absent or stale.

The module has been validated by the decoder before (ingest decodes first), so immediates
are skipped without checks; a truncated body ends the walk (``IndexError`` is caught by the
caller and the pure path decides).

mypyc-friendly: typed locals, tables as bytes/lists, no closures.
"""

from __future__ import annotations

from typing import Any, Final

try:  # mypyc: native 64-bit ints in the hot loop (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): vec[i64] compiles to a native array
    from librt.strings import read_i32_le
    from librt.vecs import append as _vappend
    from librt.vecs import vec
except ImportError:  # the pure path without it: plain lists of ints
    from kbtool.wasm.opbuf import read_i32_le, vec  # type: ignore[assignment]
    from kbtool.wasm.opbuf import vec_append as _vappend  # type: ignore[assignment]

from kbtool.wasm.opcodes import KIND, PREFIX_BASE, PREFIX_SLOTS, WIDTH

from ..datarefs import _CALLS, _CLASS
from ..datatypes import GO_PAIR_WINDOW, MAX_GO_STRING
from .leb import (
    _memarg,
    _skip_blocktype,
    _skip_heaptype,
    _skip_leb,
    _skip_valtype,
    _sleb,
    _uleb,
)
from .refcount import count_item_refs as count_item_refs
from .refcount import count_refs as count_refs
from .refcount import ref_marks as ref_marks

# the walk's own kinds per op id: the opcode table's, plus 40 a heap type immediate
# (ref.null, ref.test, ref.cast) and 41 a call (its arguments may be .bss addresses)
_HEAP: Final = 40
_CALLK: Final = 41


def _walk_kinds() -> bytes:
    t = bytearray(KIND)
    t[0xD0] = _HEAP
    for i in (0x14, 0x15, 0x16, 0x17):
        t[PREFIX_BASE[0xFB] + i] = _HEAP
    return bytes(t)


def _prefix_bases() -> list[int]:
    out = [0] * 256
    for p, base in PREFIX_BASE.items():
        out[p] = base
    return out


def _prefix_slots() -> list[int]:
    out = [0] * 256
    for p, n in PREFIX_SLOTS.items():
        out[p] = n
    return out


def _class_table() -> bytes:
    t = bytearray(len(KIND))
    for op in range(min(len(KIND), len(_CLASS))):
        t[op] = _CLASS[op]
    return bytes(t)


def _is_call() -> bytes:
    t = bytearray(len(KIND))
    for op in _CALLS:
        t[op] = 1
    return bytes(t)


_WK: Final = _walk_kinds()
_PBASE: Final = _prefix_bases()
_PSLOTS: Final = _prefix_slots()
_CLS: Final = _class_table()


def _quiet() -> bytes:
    """Per one-byte opcode: 1 when it has no immediate, 2 one LEB, 4 a block type, and on an
    all-unknown stack it finds nothing and leaves the stack unknown (its class not a
    constant, memory access, global or indirect call); 3 a load or store (there only its
    offset counts); 5 an ``i32``/``i64.const`` (there it starts a stack when it may reach
    the data); 0 otherwise (prefixes too)."""
    t = bytearray(256)
    for op in range(256):
        k = _WK[op]
        if k == 2 and _CLS[op] in (2, 3):
            t[op] = 3
            continue
        if _CLS[op] == 1 and k in (3, 7):
            t[op] = 5
            continue
        if _CLS[op] in (1, 2, 3, 9, 10, 11) or k == 30:
            continue
        if k == 0:
            t[op] = 1
        elif k in (1, 4, 5, 12, 14, 16):
            t[op] = 2
        elif k == 6:
            t[op] = 4
    return bytes(t)


def _quiet_ops() -> bytes:
    """Per op id behind a prefix (``0xfc``, SIMD, atomics): on an all-unknown stack it finds
    nothing and leaves the stack unknown (its class not a constant, memory access, global
    or indirect call), and its immediate is 1 none, 2 one LEB, 7 one byte (a lane), 8
    sixteen bytes (``v128.const``, ``i8x16.shuffle``); 0 otherwise."""
    t = bytearray(len(_WK))
    for op in range(256, len(_WK)):
        k = _WK[op]
        if _CLS[op] in (1, 2, 3, 9, 10, 11) or k == 30:
            continue
        if k == 0:
            t[op] = 1
        elif k in (1, 4, 5, 12, 14, 16):
            t[op] = 2
        elif k in (19, 22):
            t[op] = 7
        elif k == 21:
            t[op] = 8
    return bytes(t)


#: ``(func_index, body_offset, body_size, mode, floor)`` per body (:func:`scan_plan`)
Plan = list[tuple[int, int, int, int, int]]
_ISCALL: Final = _is_call()
_QUIET: Final = _quiet()
_QOPS: Final = _quiet_ops()
_W: Final = bytes(WIDTH)


# fmt: off
def body_refs(data: bytes, fi: int, start: i64, end: i64, lo: int, hi: int, go: bool,
              mem_hi: int, floor: int, out: list[Any], hot: bytes = b"", j: i64 = 0,
              j1: i64 = -1) -> None:
    """The references of the body at ``[start, end)`` (``start``: its local declarations),
    each a plain tuple ``(func_index, offset, kind, target_kind, target, width)`` (the
    ``data_refs`` row as the KB writes it) appended to ``out`` in the careful walk's order. ``floor``: ``lo`` minus the body's largest memarg offset.
    ``hot[j:j1]`` (``j1`` >= 0, not Go: the instruction count matters there): the body's
    stops (:attr:`kbtool.wasm.facts.ModuleAnalysis.hot`), where an all-unknown stack jumps
    to the next one (nothing between them can find a reference or make the stack known)."""
    WK = _WK
    CLS = _CLS
    QUIET = _QUIET
    W = _W
    fio: object = fi  # boxed once: every reference tuple of the body shares it
    p: i64 = start
    # local declarations
    n: int = data[p]
    if n < 0x80:
        p += 1
    else:
        n, p = _uleb(data, p)
    for _ in range(n):
        p = _skip_leb(data, p)
        p = _skip_valtype(data, p)
    c_lo = floor if not go else -(1 << 70)
    c_hi = mem_hi if not go else (1 << 70)
    # the stack: tag 0 unknown, 1 constant, 2 address from a data constant, 3 value loaded
    # through one; value; offset of the instruction that made it
    # (native i64 arrays when compiled: no int object per pushed value or offset)
    # (one entry from the start: an all-unknown stack's constant is pushed at 0 directly)
    st = _vappend(vec[i64](), 0)
    sv = _vappend(vec[i64](), 0)
    so = _vappend(vec[i64](), 0)
    sp: i64 = 0  # entries in use (the lists keep their length: no shrinking, no growing again)
    nk: i64 = 0  # known (tag != 0) entries; 0: the stack behaves as empty and is kept empty
    pend_v = 0
    pend_o = 0
    pend_n: i64 = -1  # Go: the instruction count when a pointer was stored (-1: none pending)
    ninstr: i64 = 0
    if go:
        j1 = -1
    while p < end:
        if nk == 0 and j1 >= 0:  # an all-unknown stack: on to the next stop at/after p
            h: i64 = -1
            while j < j1:
                h = i64(read_i32_le(hot, j))
                j += 4
                if h >= p:
                    break
                h = -1
            if h < 0:
                break  # no stop left: nothing more in the body can be found
            p = h
        at: i64 = p
        op: i64 = data[p]
        p += 1
        if nk == 0:  # an all-unknown stack: most ops only move on (no table, no stack)
            q: i64 = QUIET[op]
            if q == 1:
                ninstr += 1
                continue
            if q == 2:
                p = p + 1 if data[p] < 0x80 else _skip_leb(data, p)
                ninstr += 1
                continue
            if q == 3:  # (as the memarg below, then the empty stack's load / store)
                if data[p] < 0x40:
                    x0: int = data[p + 1]
                    if x0 < 0x80:
                        p += 2
                    else:
                        x0, p = _uleb(data, p + 1)
                else:
                    x0, p = _memarg(data, p)
                ninstr += 1
                if lo <= x0 < mem_hi:
                    out.append((fio, at, "load" if CLS[op] == 2 else "store", "data", x0, W[op]))
                continue
            if q == 5:  # a constant (as the general path below: pushed when it may reach data)
                x1: int = data[p]
                if x1 < 0x40:
                    p += 1
                elif x1 < 0x80:
                    x1 -= 0x80
                    p += 1
                else:
                    x1, p = _sleb(data, p)
                ninstr += 1
                if c_lo <= x1 < c_hi:  # (the stack is empty: sp is 0, its arrays hold one)
                    st[0] = 1
                    sv[0] = x1
                    so[0] = at
                    sp = 1
                    nk = 1
                continue
            if q == 4:  # block, loop, if: a block type (most: 0x40, one byte)
                p = p + 1 if data[p] == 0x40 else _skip_blocktype(data, p)
                ninstr += 1
                continue
        k: i64 = WK[op]
        x: int = 0
        if k == 30:  # prefix
            sub: int = data[p]
            if sub < 0x80:
                p += 1
            else:
                sub, p = _uleb(data, p)
            op = _PBASE[op] + sub
            if nk == 0:  # an all-unknown stack: most prefixed ops only move on, as above
                q2: i64 = _QOPS[op]
                if q2 != 0:
                    if q2 == 2:
                        p = p + 1 if data[p] < 0x80 else _skip_leb(data, p)
                    elif q2 == 7:
                        p += 1
                    elif q2 == 8:
                        p += 16
                    ninstr += 1
                    continue
            k = WK[op]
        if k == 0:
            pass
        elif k == 3 or k == 7:  # i32/i64.const
            x = data[p]
            if x < 0x40:
                p += 1
            elif x < 0x80:
                x -= 0x80
                p += 1
            else:
                x, p = _sleb(data, p)
        elif k == 1 or k == 4 or k == 5 or k == 12 or k == 14 or k == 16:  # one LEB
            x = data[p]
            if x < 0x80:
                p += 1
            else:
                x, p = _uleb(data, p)
        elif k == 2:
            if data[p] < 0x40:  # (most memargs: a one-byte alignment, memory 0)
                x = data[p + 1]
                if x < 0x80:
                    p += 2
                else:
                    x, p = _uleb(data, p + 1)
            else:
                x, p = _memarg(data, p)
        elif k == 6:
            p = _skip_blocktype(data, p)
        elif k == 8:
            p += 4
        elif k == 9:
            p += 8
        elif k == 11:  # call_indirect: type, table
            p = _skip_leb(data, p)
            x, p = _uleb(data, p)
        elif k == 10:  # br_table
            cnt, p = _uleb(data, p)
            for _ in range(cnt + 1):
                p = _skip_leb(data, p)
        elif k == 40:
            p = _skip_heaptype(data, p)
        elif k == 20:  # memarg + lane
            x, p = _memarg(data, p)
            p += 1
        elif k == 15 or k == 17:  # two LEBs
            p = _skip_leb(data, p)
            p = _skip_leb(data, p)
        elif k == 19 or k == 22:
            p += 1
        elif k == 21:
            p += 16
        elif k == 13:  # select t*
            cnt, p = _uleb(data, p)
            for _ in range(cnt):
                p = _skip_valtype(data, p)
        elif k == 18:  # try_table
            p = _skip_blocktype(data, p)
            cnt, p = _uleb(data, p)
            for _ in range(cnt):
                ck = data[p]
                p += 1
                if ck < 2:
                    p = _skip_leb(data, p)
                p = _skip_leb(data, p)
        elif k == 24 or k == 25:  # ordering byte, index(es)
            p = _skip_leb(data, p + 1)
            if k == 25:
                p = _skip_leb(data, p)
        elif k == 23:  # br_on_cast: flags, label, heap type, heap type
            p = _skip_leb(data, p + 1)
            p = _skip_heaptype(data, p)
            p = _skip_heaptype(data, p)
        else:
            raise IndexError(f"opcode kind {k} at {at}")
        ninstr += 1
        c: i64 = CLS[op]
        if sp >= len(st):  # room for the one entry an instruction may add (after its pops)
            st = _vappend(st, 0)
            sv = _vappend(sv, 0)
            so = _vappend(so, 0)
        if nk == 0:
            # an all-unknown stack: only a constant that may reach the data, a memory
            # access whose offset lands in it, globals and indirect calls matter
            if c == 1:
                if c_lo <= x < c_hi:
                    st[0] = 1
                    sv[0] = x
                    so[0] = at
                    sp = 1
                    nk = 1
            elif c == 2 or c == 3:
                if lo <= x < mem_hi:
                    out.append((fio, at, "load" if c == 2 else "store", "data", x, W[op]))
            elif c == 9:
                out.append((fio, at, "read", "global", x, 0))
            elif c == 10:
                out.append((fio, at, "write", "global", x, 0))
            elif c == 11:
                out.append((fio, at, "call_indirect", "table", x, 0))
            continue
        if c == 0:
            top = mem_hi if _ISCALL[op] else hi
            while sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t == 1 and lo <= v < top and (v < hi or (v & (v - 1) != 0 and v % 1000 != 0)):
                    out.append((fio, o, "addr", "data", v, 0))
            nk = 0
            continue
        if go and c == 3 and sp and st[sp - 1] == 1:
            v0 = sv[sp - 1]
            if (pend_n >= 0 and ninstr - pend_n <= GO_PAIR_WINDOW and 0 < v0 <= MAX_GO_STRING
                    and pend_v + v0 <= hi):
                out.append((fio, pend_o, "gostring", "data", pend_v, v0))
                pend_n = -1
            elif lo <= v0 < hi:
                pend_v = v0
                pend_o = so[sp - 1]
                pend_n = ninstr
        if c == 1:
            if c_lo <= x < c_hi:
                st[sp] = 1
                sv[sp] = x
                so[sp] = at
                sp += 1
                nk += 1
            else:
                st[sp] = 0
                sv[sp] = 0
                so[sp] = 0
                sp += 1
        elif c == 4:
            t2 = 0
            v2 = 0
            o2 = 0
            t1 = 0
            v1 = 0
            o1 = 0
            if sp:
                sp -= 1
                t2 = st[sp]
                v2 = sv[sp]
                o2 = so[sp]
            if sp:
                sp -= 1
                t1 = st[sp]
                v1 = sv[sp]
                o1 = so[sp]
            if t1:
                nk -= 1
            if t2:
                nk -= 1
            dt = 0
            dv = 0
            do = 0
            if t1 == 1 and lo <= v1 < hi:
                out.append((fio, o1, "addr", "data", v1, 0))
                dt = 2
                dv = v1
                do = o1
            elif t1 == 2:
                dt = 2
                dv = v1
                do = o1
            if t2 == 1 and lo <= v2 < hi:
                out.append((fio, o2, "addr", "data", v2, 0))
                dt = 2
                dv = v2
                do = o2
            elif t2 == 2:
                dt = 2
                dv = v2
                do = o2
            st[sp] = dt
            sv[sp] = dv
            so[sp] = do
            sp += 1
            if dt:
                nk += 1
        elif c == 6:
            st[sp] = 0
            sv[sp] = 0
            so[sp] = 0
            sp += 1
        elif c == 2:
            a_t = 0
            a_v = 0
            a_o = 0
            if sp:
                sp -= 1
                a_t = st[sp]
                a_v = sv[sp]
                a_o = so[sp]
                if a_t:
                    nk -= 1
            if a_t == 1 and lo <= a_v + x < mem_hi:
                out.append((fio, a_o, "load", "data", a_v + x, W[op]))
                st[sp] = 0
                sv[sp] = 0
                so[sp] = 0
                sp += 1
            elif a_t == 2:
                st[sp] = 3
                sv[sp] = a_v
                so[sp] = a_o
                sp += 1
                nk += 1
            else:
                if lo <= x < mem_hi:
                    out.append((fio, at, "load", "data", x, W[op]))
                st[sp] = 0
                sv[sp] = 0
                so[sp] = 0
                sp += 1
        elif c == 3:
            if sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t:
                    nk -= 1
                if t == 1 and lo <= v < mem_hi and (v < hi or (v & (v - 1) != 0 and v % 1000 != 0)):
                    out.append((fio, o, "addr", "data", v, 0))
            a_t = 0
            a_v = 0
            a_o = 0
            if sp:
                sp -= 1
                a_t = st[sp]
                a_v = sv[sp]
                a_o = so[sp]
                if a_t:
                    nk -= 1
            if a_t == 1 and lo <= a_v + x < mem_hi:
                out.append((fio, a_o, "store", "data", a_v + x, W[op]))
            elif a_t != 2 and lo <= x < mem_hi:
                out.append((fio, at, "store", "data", x, W[op]))
        elif c == 5 or c == 7 or c == 8:
            if sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t:
                    nk -= 1
                if t == 1 and lo <= v < hi:
                    out.append((fio, o, "addr", "data", v, 0))
            if c != 7:
                st[sp] = 0
                sv[sp] = 0
                so[sp] = 0
                sp += 1
        elif c == 9:
            out.append((fio, at, "read", "global", x, 0))
            st[sp] = 0
            sv[sp] = 0
            so[sp] = 0
            sp += 1
        elif c == 10:
            out.append((fio, at, "write", "global", x, 0))
            if sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t:
                    nk -= 1
                if t == 1 and lo <= v < hi:
                    out.append((fio, o, "addr", "data", v, 0))
        elif c == 11:
            if sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t:
                    nk -= 1
                if t == 3:
                    out.append((fio, o, "funcptr", "data", v, 0))
            out.append((fio, at, "call_indirect", "table", x, 0))
            while sp:
                sp -= 1
                t = st[sp]
                v = sv[sp]
                o = so[sp]
                if t == 1 and lo <= v < mem_hi and (v < hi or (v & (v - 1) != 0 and v % 1000 != 0)):
                    out.append((fio, o, "addr", "data", v, 0))
            nk = 0
        if nk == 0:
            sp = 0
# fmt: on


def module_refs(
    data: bytes,
    plan: Plan,
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
    make: Any = None,
    hot: tuple[bytes, bytes] | None = None,
    nimp: int = 0,
) -> list[list[Any]]:
    """The references of the bodies of ``plan`` (``(func_index, body_offset, body_size,
    mode, floor)``, mode 0: nothing to find), one list per body, each reference a plain
    tuple ``(func_index, offset, kind, target_kind, target, width)`` (no object per
    reference: ffmpeg has 382k), or ``make(*that)`` when ``make`` is given. ``hot``: the
    decoder's stops (:attr:`kbtool.wasm.facts.ModuleAnalysis.hot`; ``nimp`` imported
    functions before the code indices): the walk jumps between them."""
    out: list[list[Any]] = []
    pos, idx = hot if hot is not None else (b"", b"")
    for fi, off, size, mode, floor in plan:
        refs: list[Any] = []
        if mode:
            j, j1 = _stops(idx, fi - nimp)
            body_refs(data, fi, off, off + size, lo, hi, go, mem_hi, floor, refs, pos, j, j1)
            if make is not None:
                refs = [make(*t) for t in refs]
        out.append(refs)
    return out


def _stops(idx: bytes, ci: i64) -> tuple[i64, i64]:
    """The byte range of code index ``ci``'s stops in the positions (``(0, -1)``: none
    known, the walk reads every instruction)."""
    if ci < 0 or 4 * ci + 8 > len(idx):
        return 0, -1
    return 4 * i64(read_i32_le(idx, 4 * ci)), 4 * i64(read_i32_le(idx, 4 * ci + 4))


def module_refs_flat(
    data: bytes,
    plan: Plan,
    lo: int,
    hi: int,
    go: bool,
    mem_hi: int,
    limit: int,
    hot: tuple[bytes, bytes] | None = None,
    nimp: int = 0,
) -> tuple[list[Any], bool]:
    """:func:`module_refs`' references joined in one list (plan order), each body's appended
    where the walk makes them (no list per body, no second pass joining them: ffmpeg's
    422k); stops after the body with which the count reaches ``limit`` (then True, as the
    data model's join of the per-body lists does). ``hot``, ``nimp``: as
    :func:`module_refs`."""
    out: list[Any] = []
    pos, idx = hot if hot is not None else (b"", b"")
    for fi, off, size, mode, floor in plan:
        if mode:
            j, j1 = _stops(idx, fi - nimp)
            body_refs(data, fi, off, off + size, lo, hi, go, mem_hi, floor, out, pos, j, j1)
        if len(out) >= limit:
            return out, True
    return out, False


def scan_plan(functions: list[Any], lo: int, mem_hi: int) -> list[tuple[int, int, int, int, int]]:
    """:func:`kbtool.analysis.datamodel.scan_plan` over the decoder's facts, one typed loop
    (the same plan: :func:`.datascan.might_touch_data` and :func:`.datascan.max_offset`)."""
    out: list[tuple[int, int, int, int, int]] = []
    some = lo < mem_hi
    for f in functions:
        if f.imported:
            continue
        size: int = f.body_size
        if not size:
            continue
        maxoff = 0
        inside = False
        # the facts' lists and tuples read as such (typed: an index per element, not the
        # generic iteration and ``m[1]`` of an untyped object; ffmpeg: 1.2M memory ops)
        mo: Any = f.mem_ops
        ops: list[Any] = mo if isinstance(mo, list) else list(mo)
        for m in ops:
            x: int
            if isinstance(m, tuple):
                x = m[1]  # (compiled: the tuple's item, read directly)
            else:
                x = m[1]  # (any other sequence: read generically)
            if some and lo <= x < mem_hi:
                inside = True
            if x > maxoff:
                maxoff = x
        if some and not inside:
            floor = lo - maxoff
            co: Any = f.consts
            consts: list[Any] = co if isinstance(co, list) else list(co)
            for v in consts:
                c: int = v
                if floor <= c < mem_hi:
                    inside = True
                    break
        if inside:
            mode = 2
        else:
            mode = 1 if f.globals_used or f.call_indirect else 0
        out.append((f.index, f.body_offset, size, mode, lo - maxoff))
    return out
