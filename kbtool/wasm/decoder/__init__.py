"""The decoder's hot loop: one table-driven walk over function bodies (see :mod:`.facts`).

Compiled with mypyc at install into the twin ``kbtool.wasm._cdecoder`` (2-7x less CPU;
:mod:`.active` picks it when its stamp matches and ``KBTOOL_DECODE`` is not ``pure``; identical
results: ``test_decode_accel.py``), so the source stays mypyc-friendly: typed locals, no
``**kwargs`` or dynamic attributes, tables are bytes/lists, the context comes as plain values.

:func:`analyze_range`: one tuple per function in :class:`.facts.FuncFacts` field order."""

from __future__ import annotations

from collections.abc import Callable
from hashlib import blake2b
from typing import Any, Final, cast

try:  # mypyc: native 64-bit ints for positions, bytes and kinds (no tag checks, no boxing)
    from mypy_extensions import i32, i64, u8
except ImportError:  # the pure path without it (not a dependency): plain ints
    i32 = i64 = u8 = int  # type: ignore[misc,assignment]

from ..decoder_tables import fast_kinds, prefix_tables
from ..errors import WasmFormatError
from ..instr import MAX_LOCALS, check_body
from ..opcodes import PREFIX_BASE, WIDTH
from .dmap import MAX_STR_LEN, MIN_STRING
from .scan import (
    _VT,
    _Bad,
    _blocktype_end,
    _br_on_cast_end,
    _br_table_end,
    _catches_end,
    _heaptype_end,
    _select_end,
    _skip,
    _sleb_cont,
    _uleb_cont,
    _valtype_end,
)
from .slots import (
    _BIG_MAX,
    _BIG_SLOTS,
    _GLOB_FLAT,
    _SMALL_NEG,
    _SMALL_POS,
    add_global,
    big_first,
    big_set,
    list_text,
    list_writer,
    memop_text,
    new_memop,
    stamps,
)

try:  # mypyc's runtime library (installed with mypy): its writes compile to native code
    from librt.strings import BytesWriter, write_i16_le, write_i32_le
except ImportError:  # the pure path without it: the same writes on a bytearray
    from ..opbuf import BytesWriter, write_i16_le, write_i32_le  # type: ignore[assignment]
from ..opbuf import _BIG_ENDIAN, native_order

# ----------------------------------------------------------------------------- hot loop

PROGRESS_STEP: Final = 1 << 20  # bytes of code between two progress callbacks
_I31: Final = (1 << 31) - 1  # (a position as an i32; past it ``ctx.hot`` is not set)


_BAD_T: Final = b"\xffT?\x00"
_DEF: Final = b"\xffF"
_STATIC: Final = b"\xffB"
_TAB: Final = b"\xffX"
_GOV: list[bytes] = []  # Go PC_B placeholders, built for the first Go module


def _go_placeholders() -> list[bytes]:
    if not _GOV:
        _GOV.extend(b"\xffG" + i.to_bytes(2, "little") for i in range(1 << 16))
    return _GOV


_MISS: Final = object()
_TABLE_ATOMIC: Final = PREFIX_BASE[0xFE] + 0x58  # shared-everything: global.atomic.* are below
_STRUCT_ATOMIC: Final = PREFIX_BASE[0xFE] + 0x5C


_FAST_KIND: Final = fast_kinds()
_FIRST_MEMOP: Final = 0x28  # i32.load: the one-byte memarg opcodes run to i64.store32
_LAST_MEMOP: Final = 0x3E
_FLAT_OFFSETS: Final = 4096
_PFX: Final = prefix_tables()
_WIDTH: Final = list(WIDTH)
# a body's large-constant set until it needs one (never added to)
_NO_SET: Final[set[object]] = set()


# fmt: off
def analyze_range(ctx: Any, first: int, last: int,
                  progress: Callable[[int, int], object] | None = None,
                  total_done: int = 0, total: int = 0,
                  step: int = PROGRESS_STEP) -> list[tuple[Any, ...]]:
    """Facts of the defined functions with code indices ``first <= i < last`` (``ctx``: a
    ``facts._Ctx``), one tuple per function in ``FuncFacts`` field order; ``progress(done,
    total)`` about every ``step`` bytes of code; ``ctx.hot`` and ``ctx.side`` set too (all
    bodies: :attr:`.facts.ModuleAnalysis.hot`, ``.side``)."""
    data: bytes = ctx.data
    m: Any = ctx.m
    code: list[tuple[int, int]] = m.code
    nimp: int = ctx.nimp
    KINDB = _FAST_KIND
    PFX = _PFX
    W = _WIDTH
    imp_repl: list[bytes] = ctx.imp_repl
    type_repl: list[bytes] = ctx.type_repl
    ntypes = len(type_repl)
    dmap: Any = ctx.dmap
    dlo: int = dmap.lo
    dhi: int = dmap.hi
    slo: int = ctx.static_lo
    shi: int = ctx.static_hi
    glo: int = ctx.gov_lo
    ghi: int = ctx.gov_hi
    GOV = _go_placeholders() if glo < ghi else _GOV  # Go function values -> placeholders
    blo: int = ctx.go_bss_lo
    bhi: int = ctx.go_bss_hi
    dcache: dict[int, Any] = dmap.cache
    dentry: Callable[[int], Any] = dmap.entry
    sized_text: Callable[[Any, int], str | None] = dmap.sized_text
    func_names: dict[int, str] = m.func_names
    exports: dict[int, list[str]] = ctx.exports
    ftypes: list[int] = m.func_type_indices
    type_text: list[str] = ctx.type_text
    big_endian: bool = _BIG_ENDIAN
    # one tuple object per distinct (op, offset, width), shared by every function; typed
    # object so mypyc keeps the boxed tuple (a native tuple would be re-boxed, a new object
    # per memory access: ffmpeg +75 MB)
    # (keyed by offset * 1024 + op id: op ids are below 1024; an int hashes for less than a
    # tuple and no tuple is made for a memory access seen before): its index in mt / mj
    mcache: dict[int, int] = {}
    mt: list[object] = []  # (and mj: its JSON text, see jflat)
    mj: list[bytes] = []
    # the same for the one-byte loads and stores (0x28-0x3E) at offsets below
    # _FLAT_OFFSETS (most: struct fields), in a flat list (a dict lookup per memory access
    # was the decoder's largest cost after the op ids)
    mflat: list[object] = [None] * (_FLAT_OFFSETS * (_LAST_MEMOP + 1 - _FIRST_MEMOP))
    # the function (code index) that last used each small constant: most constants are
    # small and repeat within a body (ffmpeg: 1.66M constants, 389k distinct per body), so
    # a slot, not a dict insert, tells whether the body has it already (a native i64
    # array: no int object stored per first use, none read back per constant)
    cseen = stamps(_SMALL_NEG + _SMALL_POS, -1)
    bkeys = stamps(_BIG_SLOTS, 0)
    bstamps = stamps(_BIG_SLOTS, -1)
    # the int objects the facts' lists hold, made once per decoded range and shared (typed
    # object: the twin appends the object, not a new box per append): the small constants,
    # and the function indices met as call / ref.func targets (filled on first use)
    cbox: list[object] = [c - _SMALL_NEG for c in range(_SMALL_NEG + _SMALL_POS)]
    gseen = stamps(_GLOB_FLAT, -1)  # (the body's globals: slots.py)
    gbig: set[int] = set()  # a body's globals from _GLOB_FLAT on (emptied after each body)
    fbox: list[object] = [None] * (nimp + len(code))
    # the facts rows' JSON texts of the memory accesses and calls (ctx.side: slots.py), an
    # item's text made once per range; a body's distinct callees by a stamp per function
    jflat: list[bytes] = [b""] * len(mflat)
    ffrag: list[bytes] = [b""] * (nimp + len(code))
    cstamp = stamps(nimp + len(code), -1)
    side_mem: list[str] = []
    side_calls: list[str] = []
    side_callees: list[list[object]] = []
    sig_head: list[bytes] = [t.encode() + b"\x00" for t in type_text]
    out: list[tuple[Any, ...]] = []
    # the data walk's stops (ModuleAnalysis.hot): the positions, per body the count before
    hot = BytesWriter()
    hot_idx = BytesWriter()
    next_progress = (code[first][0] if first < last else 0) + step
    code_start = code[0][0] if code else 0
    start: i64
    end: i64
    for ci_ in range(first, last):
        start, end = code[ci_]
        ci: i64 = ci_
        fidx = nimp + ci_
        write_i32_le(hot_idx, i32(len(hot) >> 2))
        if progress is not None and start >= next_progress:
            progress(total_done + start - code_start, total)
            next_progress = start + step
        # op ids, two little-endian bytes each (stored as array("H") packs them: OP_PACK);
        # written straight into bytes: no int object and list slot per instruction
        ops = BytesWriter()
        calls: list[object] = []
        # distinct, in first-seen order; a large one is boxed once, for the list
        consts: list[object] = []
        nbig: i64 = 0  # distinct ones outside the small range (in bkeys up to _BIG_MAX)
        cbig: set[object] = _NO_SET  # ... and past it, all of them (a set made then)
        strs: dict[str, None] = {}
        glist: list[int] = []  # distinct globals below _GLOB_FLAT, first seen first
        memops: list[object] = []
        mw = list_writer()  # (the JSON texts: see jflat)
        cw = list_writer()
        callees: list[object] = []
        ti = ftypes[ci_]
        sig = type_text[ti] if ti < ntypes else f"type[{ti}]"
        # the shape hash's input: the signature, a NUL, the normalised body (written as it
        # is produced: a native copy per piece, one hash call per body, not one per piece)
        shw = BytesWriter()
        shw.write(sig_head[ti] if ti < ntypes else sig.encode() + b"\x00")
        refs: list[int] = []
        loops = 0
        cind = 0
        atomics = 0
        pend: tuple[Any, ...] | None = None
        pend_at = -1
        last_cut = start
        try:
            # local declarations
            p: i64 = start
            n: int = data[p]
            p += 1
            if n >= 0x80:
                n, p = _uleb_cont(data, p, n)
            if n > end - p:
                raise _Bad
            nloc = 0
            for _ in range(n):
                c = data[p]
                p += 1
                if c >= 0x80:
                    c, p = _uleb_cont(data, p, c)
                nloc += c
                if _VT[data[p]] == 1:
                    p += 1
                else:
                    p = _valtype_end(data, p)
            if nloc > MAX_LOCALS:
                raise _Bad
            depth: i64 = 1
            while p < end:
                b = data[p]  # (an int: appended as a byte with no conversion call)
                p += 1
                k: i64 = KINDB[b]
                # the op id, written once here (one call site: gcc inlines the write;
                # a prefix's id replaces these two bytes below)
                write_i16_le(ops, b)
                if k == 1:  # one LEB kept verbatim
                    if data[p] < 0x80:
                        p += 1
                    else:
                        p = _skip(data, p)
                    continue
                if k == 0:
                    continue
                if k == 41:  # end
                    depth -= 1
                    if depth == 0 and p != end:
                        raise _Bad  # instructions after the function's final end
                    continue
                if k == 2:  # memarg
                    write_i32_le(hot, i32((p - 1) & _I31))
                    a = data[p]
                    p += 1
                    if a >= 0x40:
                        if a >= 0x80:
                            a, p = _uleb_cont(data, p, a)
                            if a >= 0x80:  # malformed (spec: below 2**7)
                                raise _Bad
                        if a & 0x40:
                            if data[p] < 0x80:
                                p += 1
                            else:
                                p = _skip(data, p)
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x, 63)
                    if slo <= x < shi:  # an absolute static address in the offset
                        shw.write(data[last_cut:s])
                        shw.write(_STATIC)
                        last_cut = p
                    if x < _FLAT_OFFSETS:  # a field offset: a list slot, no int key made
                        i: i64 = (i64(b) - _FIRST_MEMOP) * _FLAT_OFFSETS + i64(x)
                        t: object = mflat[i]
                        if t is None:  # (read back: the object stored, boxed once)
                            mflat[i] = (b, x, W[b])
                            t = mflat[i]
                            jflat[i] = memop_text(b, x, W[b])
                        mw.write(jflat[i])
                    else:
                        mx: i64 = mcache.get(x * 1024 + b, -1)
                        if mx < 0:  # (read back: the object stored, boxed once)
                            mx = new_memop(mcache, mt, mj, b, x, W[b])
                        t = mt[mx]
                        mw.write(mj[mx])
                    memops.append(t)
                    continue
                if k == 3:  # i32.const
                    s = p
                    write_i32_le(hot, i32((s - 1) & _I31))
                    x = data[p]
                    if x < 0x80:
                        p += 1
                        if x & 0x40:
                            x -= 0x80
                    else:  # 2- and 3-byte values inline (addresses), longer ones in a call
                        c = data[p + 1]
                        if c < 0x80:
                            x = (x & 0x7F) | (c << 7)
                            p += 2
                            if c & 0x40:
                                x -= 0x4000
                        else:
                            c2 = data[p + 2]
                            if c2 < 0x80:
                                x = (x & 0x7F) | ((c & 0x7F) << 7) | (c2 << 14)
                                p += 3
                                if c2 & 0x40:
                                    x -= 0x200000
                            else:
                                x, p = _sleb_cont(data, p + 1, x, 32)
                    if pend is not None:
                        tx = None
                        if s - 1 == pend_at and MIN_STRING <= x <= MAX_STR_LEN:
                            tx = sized_text(pend, x)
                        if tx is None:
                            tx = pend[2]
                        if tx:
                            strs[tx] = None
                        pend = None
                    if -_SMALL_NEG <= x < _SMALL_POS:
                        cj: i64 = i64(x) + _SMALL_NEG
                        if cseen[cj] != ci:
                            cseen[cj] = ci
                            consts.append(cbox[cj])
                    elif nbig < _BIG_MAX:
                        if big_first(bkeys, bstamps, x, ci):
                            nbig += 1
                            consts.append(x)
                    else:
                        if nbig == _BIG_MAX:  # the table's share is taken: a set from here
                            cbig = big_set(consts)
                            nbig += 1
                        xo: object = x
                        if xo not in cbig:
                            cbig.add(xo)
                            consts.append(xo)
                    u = x if x >= 0 else x + 0x100000000
                    if glo <= u < ghi:  # Go function value / return PC
                        shw.write(data[last_cut:s])
                        shw.write(GOV[u & 0xFFFF])
                        last_cut = p
                        continue
                    if dlo <= u < dhi:
                        eo: object = dcache.get(u, _MISS)
                        if eo is _MISS:
                            eo = dentry(u)
                        if eo is not None:
                            # typed: a tuple's items by index and the replacement written
                            # as bytes (natively), not through generic calls on an object
                            e: tuple[Any, ...] = cast(tuple, eo)
                            rep: bytes = e[0]
                            shw.write(data[last_cut:s])
                            shw.write(rep)
                            last_cut = p
                            if e[1] is not None:  # C string
                                strs[e[1]] = None
                            else:
                                pend = e
                                pend_at = p
                    if slo <= u < shi and last_cut != p:  # .bss: no bytes to stand for it
                        shw.write(data[last_cut:s])
                        shw.write(_STATIC)
                        last_cut = p
                    continue
                if k == 4:  # global.get / global.set
                    write_i32_le(hot, i32((p - 1) & _I31))
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    if x < _GLOB_FLAT:
                        if gseen[x] != ci:
                            gseen[x] = ci
                            glist.append(x)
                    else:
                        gbig.add(x)
                    continue
                if k == 5:  # call / return_call
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    if x < len(fbox):
                        fo = fbox[x]
                        if fo is None:
                            fo = x
                            fbox[x] = fo
                            ffrag[x] = (str(x) + ",").encode()
                        calls.append(fo)
                        cw.write(ffrag[x])
                        if cstamp[x] != ci:
                            cstamp[x] = ci
                            callees.append(fo)
                    else:
                        calls.append(x)
                        cw.write((str(x) + ",").encode())
                        if x not in callees:
                            callees.append(x)
                    shw.write(data[last_cut:s])
                    shw.write(imp_repl[x] if x < nimp else _DEF)
                    last_cut = p
                    continue
                if k == 6:  # block / loop / if / try
                    depth += 1
                    if b == 3:
                        loops += 1
                    x = data[p]
                    if x < 0x40:  # type index
                        shw.write(data[last_cut:p])
                        shw.write(type_repl[x] if x < ntypes else _BAD_T)
                        p += 1
                        last_cut = p
                    elif x < 0x80:
                        p = _blocktype_end(data, p, x)
                    else:
                        s = p
                        x, p = _sleb_cont(data, p + 1, x, 33)
                        if x < 0:
                            raise _Bad
                        shw.write(data[last_cut:s])
                        shw.write(type_repl[x] if 0 <= x < ntypes else _BAD_T)
                        last_cut = p
                    continue
                if k == 30:  # prefix
                    pat: i64 = p - 1
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    base, skinds = PFX[b]
                    if x >= len(skinds):
                        raise _Bad
                    op = base + x
                    k = skinds[x]
                    if b == 0xFE:
                        atomics += 1
                    # (the prefix byte's two bytes, written above, become the op id's)
                    oj: i64 = len(ops) - 2
                    ops[oj] = u8(op & 0xFF)
                    ops[oj + 1] = u8(op >> 8)
                    if k == 0:
                        continue
                    if k == 2 or k == 20:  # memarg (+ lane)
                        write_i32_le(hot, i32(pat & _I31))
                        a = data[p]
                        p += 1
                        if a >= 0x40:
                            if a >= 0x80:
                                a, p = _uleb_cont(data, p, a)
                            if a >= 0x80:  # malformed (spec: below 2**7)
                                raise _Bad
                            if a & 0x40:
                                if data[p] < 0x80:
                                    p += 1
                                else:
                                    p = _skip(data, p)
                        s = p
                        x = data[p]
                        p += 1
                        if x >= 0x80:
                            x, p = _uleb_cont(data, p, x, 63)
                        if slo <= x < shi:
                            shw.write(data[last_cut:s])
                            shw.write(_STATIC)
                            last_cut = p
                        mx = mcache.get(x * 1024 + op, -1)
                        if mx < 0:
                            mx = new_memop(mcache, mt, mj, op, x, W[op])
                        t = mt[mx]
                        mw.write(mj[mx])
                        memops.append(t)
                        if k == 20:
                            p += 1
                        continue
                    if k == 1:
                        if data[p] < 0x80:
                            p += 1
                        else:
                            p = _skip(data, p)
                        continue
                    if k == 40:  # ref.test / ref.cast: heap type
                        p = _heaptype_end(data, p)
                        continue
                    if k == 21 or k == 19 or k == 22:  # v128.const, i8x16.shuffle; lane / byte
                        p += 16 if k == 21 else 1
                        continue
                    if k == 17:  # two LEBs
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        continue
                    if k == 14 or k == 15:  # table / elem indices -> placeholder
                        s = p
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        if k == 15:
                            p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        shw.write(data[last_cut:s])
                        shw.write(_TAB)
                        last_cut = p
                        continue
                    if k == 24 or k == 25:  # shared-everything atomics: ordering, index(es)
                        if data[p] > 1:
                            raise _Bad
                        p += 1
                        s = p
                        x = data[p]
                        p += 1
                        if x >= 0x80:
                            x, p = _uleb_cont(data, p, x)
                        if op < _TABLE_ATOMIC:  # global.atomic.*
                            add_global(gseen, glist, gbig, x, ci)
                        elif op < _STRUCT_ATOMIC:  # table.atomic.*: placeholder
                            shw.write(data[last_cut:s])
                            shw.write(_TAB)
                            last_cut = p
                        if k == 25:
                            p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        continue
                    if k == 23:  # br_on_cast: flags, label, heap type, heap type
                        p = _br_on_cast_end(data, p)
                        continue
                    raise _Bad
                # ---- single-byte opcodes with rarer immediates
                if k == 7:  # i64.const
                    s = p
                    write_i32_le(hot, i32((s - 1) & _I31))
                    x = data[p]
                    p += 1
                    if x < 0x80:
                        if x & 0x40:
                            x -= 0x80
                    else:
                        x, p = _sleb_cont(data, p, x, 64)
                    if -_SMALL_NEG <= x < _SMALL_POS:
                        cj = i64(x) + _SMALL_NEG
                        if cseen[cj] != ci:
                            cseen[cj] = ci
                            consts.append(cbox[cj])
                    elif nbig < _BIG_MAX:
                        if big_first(bkeys, bstamps, x, ci):
                            nbig += 1
                            consts.append(x)
                    else:
                        if nbig == _BIG_MAX:
                            cbig = big_set(consts)
                            nbig += 1
                        xo = x
                        if xo not in cbig:
                            cbig.add(xo)
                            consts.append(xo)
                    u = x if x >= 0 else x + 0x10000000000000000
                    if glo <= u < ghi:  # Go function value / return PC
                        shw.write(data[last_cut:s])
                        shw.write(GOV[u & 0xFFFF])
                        last_cut = p
                        continue
                    if dlo <= u < dhi:
                        eo = dcache.get(u, _MISS)
                        if eo is _MISS:
                            eo = dentry(u)
                        if eo is not None:
                            e = cast(tuple, eo)
                            rep = e[0]
                            shw.write(data[last_cut:s])
                            shw.write(rep)
                            last_cut = p
                            if e[2]:
                                strs[e[2]] = None
                            continue
                    if blo <= u < bhi:  # Go: zero-filled data and .bss, no bytes to compare
                        shw.write(data[last_cut:s])
                        shw.write(_STATIC)
                        last_cut = p
                    continue
                if k == 8 or k == 9:  # f32.const / f64.const
                    p += 4 if k == 8 else 8
                    continue
                if k == 10:  # br_table
                    p = _br_table_end(data, p, end)
                    continue
                if k == 11:  # call_indirect / return_call_indirect
                    cind += 1
                    s = p
                    write_i32_le(hot, i32((s - 1) & _I31))
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    shw.write(data[last_cut:s])
                    shw.write(type_repl[x] if x < ntypes else _BAD_T)
                    shw.write(_TAB)
                    last_cut = p
                    continue
                if k == 12:  # ref.func
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    refs.append(x)
                    shw.write(data[last_cut:s])
                    shw.write(imp_repl[x] if x < nimp else _DEF)
                    last_cut = p
                    continue
                if k == 14:  # table.get / table.set
                    s = p
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    shw.write(data[last_cut:s])
                    shw.write(_TAB)
                    last_cut = p
                    continue
                if k == 16:  # call_ref / return_call_ref
                    cind += 1
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    shw.write(data[last_cut:s])
                    shw.write(type_repl[x] if x < ntypes else _BAD_T)
                    last_cut = p
                    continue
                if k == 13:  # select t*
                    p = _select_end(data, p, end)
                    continue
                if k == 18:  # try_table
                    depth += 1
                    x = data[p]
                    if x < 0x40:
                        shw.write(data[last_cut:p])
                        shw.write(type_repl[x] if x < ntypes else _BAD_T)
                        p += 1
                        last_cut = p
                    elif x < 0x80:
                        p = _blocktype_end(data, p, x)
                    else:
                        s = p
                        x, p = _sleb_cont(data, p + 1, x, 33)
                        if x < 0:
                            raise _Bad
                        shw.write(data[last_cut:s])
                        shw.write(type_repl[x] if 0 <= x < ntypes else _BAD_T)
                        last_cut = p
                    p = _catches_end(data, p, end)
                    continue
                if k == 40:  # ref.null: heap type
                    p = _heaptype_end(data, p)
                    continue
                if k == 42:  # delegate: label, closes a try
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    depth -= 1
                    if depth <= 0:
                        raise _Bad
                    continue
                raise _Bad  # K_BAD or a kind that no single-byte opcode has
            if p != end or depth != 0:
                raise _Bad
        except (_Bad, IndexError):
            check_body(data, start, end)
            raise WasmFormatError(start, "valid function body",
                                  f"function {fidx} could not be decoded") from None
        if pend is not None:
            tx = pend[2]
            if tx:
                strs[tx] = None
        if gbig:
            glist.extend(gbig)
            gbig.clear()
        if len(glist) > 1:
            glist.sort()
        body = data[start:end]
        shw.write(body if last_cut == start else data[last_cut:end])
        opsv = ops.getvalue()
        side_mem.append(list_text(mw))
        side_calls.append(list_text(cw))
        side_callees.append(callees)
        if big_endian:  # (little-endian hosts store the bytes as written: no call per body)
            opsv = native_order(opsv)
        out.append((
            fidx, False, None, None, sig, exports.get(fidx, []), func_names.get(fidx),
            start, end - start, len(ops) >> 1, opsv, calls, cind, refs, consts,
            list(strs) if strs else [], glist, memops, atomics, loops,
            blake2b(body, digest_size=16).hexdigest(),
            blake2b(shw.getvalue(), digest_size=16).hexdigest(),
        ))
    if first == 0 and last == len(code) and len(data) < (1 << 31):
        write_i32_le(hot_idx, i32(len(hot) >> 2))
        ctx.hot = (hot.getvalue(), hot_idx.getvalue())
    if first == 0 and last == len(code):
        ctx.side = (side_mem, side_calls, side_callees)
    return out
# fmt: on
