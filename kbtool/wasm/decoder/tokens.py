"""Instruction tokens of a function body (part of the decoder twin, compiled with it): the
``[(op, immediates)]`` of :func:`kbtool.wasm.instr.decode_one`, instruction by instruction,
that the diff's relocation-aware comparison reads (:mod:`kbtool.services.diff.relocation`).

The common one-byte forms (no immediate, an index, a small constant, a memarg of one-byte
alignment and offset, a one-byte block type) and LEBs of up to four bytes are read here
without a call; every other instruction goes to ``decode_one`` (the reference), so both the
pure package and its compiled twin give exactly ``decode_one``'s tokens."""

from __future__ import annotations

from struct import unpack_from as _unpack
from typing import Any, Final

try:  # mypyc: native 64-bit ints (see the package's __init__)
    from mypy_extensions import i64
except ImportError:  # the pure path without it: plain ints
    i64 = int  # type: ignore[misc,assignment]

from ..instr import NUM_TYPES, decode_one
from ..opcodes import (
    BYTE_KIND,
    K_BLOCK,
    K_BYTE,
    K_CALL,
    K_CALL_INDIRECT,
    K_F32,
    K_F64,
    K_GLOBAL,
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
    MNEMONICS,
    PREFIX_BASE,
    PREFIX_SLOTS,
)

_REF_NULL: Final = 0xD0  # a K_U32 opcode whose immediate is a heap type (decode_one reads it)

# one-byte opcodes whose immediates are read here when every LEB is short
FAST_NONE: Final = bytes(BYTE_KIND[b] == K_NONE for b in range(256))
FAST_U32: Final = bytes(
    BYTE_KIND[b] in (K_U32, K_GLOBAL, K_CALL, K_REF_FUNC, K_TYPE, K_TABLE) and b != _REF_NULL
    for b in range(256)
)
FAST_SLEB: Final = bytes(BYTE_KIND[b] in (K_I32, K_I64) for b in range(256))
FAST_MEM: Final = bytes(BYTE_KIND[b] == K_MEM for b in range(256))
FAST_BLOCK: Final = bytes(BYTE_KIND[b] == K_BLOCK for b in range(256))
_BLOCK_TYPE: Final[dict[int, str]] = {0x40: "", **NUM_TYPES}  # read_blocktype's text
_F32: Final = "<f"
_F64: Final = "<d"
# the prefixes read here (0xFC, 0xFD, 0xFE), as decode_one numbers their ops
assert (PREFIX_BASE[0xFC], PREFIX_BASE[0xFD], PREFIX_BASE[0xFE]) == (0x100, 0x140, 0x260)
assert (PREFIX_SLOTS[0xFC], PREFIX_SLOTS[0xFD], PREFIX_SLOTS[0xFE]) == (0x20, 0x120, 0x73)
_MEM_KINDS: Final = bytes(KIND[op] in (K_MEM, K_MEM_LANE) for op in range(len(KIND)))
# ops whose immediates the fingerprints' loose text drops (calls, type and table indices)
_LOOSE_BARE: Final = bytes(
    KIND[op] in (K_CALL, K_CALL_INDIRECT, K_TYPE, K_TABLE, K_REF_FUNC) for op in range(len(KIND))
)
_I32_CONST: Final = 0x41


def _one_byte_tokens() -> tuple[list[Any], list[Any]]:
    """The tokens of the commonest forms, made once and shared by every body (tuples: no
    reader can change them): an opcode without immediates (by its byte), and an opcode with
    one immediate of one byte -- an index, a small constant, a one-byte block type -- (by
    ``byte << 7 | immediate``); None where the form is another. Only the ~20 bytes with
    such a form are visited (each of the 32,768 slots tested was ~14 M instructions a
    process)."""
    t0: list[Any] = [(b, ()) if FAST_NONE[b] else None for b in range(256)]
    t1: list[Any] = [None] * (256 << 7)
    for b in range(256):
        if FAST_U32[b]:
            for x in range(0x80):
                t1[b << 7 | x] = (b, (x,))
        elif FAST_SLEB[b]:
            for x in range(0x80):
                t1[b << 7 | x] = (b, (x - 0x80 if x & 0x40 else x,))
        elif FAST_BLOCK[b]:
            for x, bt in _BLOCK_TYPE.items():
                if x < 0x80:
                    t1[b << 7 | x] = (b, (bt,))
    return t0, t1


_TOKS: Final = _one_byte_tokens()
_TOK0: Final[list[Any]] = _TOKS[0]
_TOK1: Final[list[Any]] = _TOKS[1]


def decode_tokens(data: bytes, p: i64, end: i64, out: list[Any], limit: i64) -> i64:
    """Append the tokens ``(op, immediates)`` of the instructions from ``p`` to ``out`` (at
    most ``limit``; -1: all, to ``end``); the position after the last one read. A malformed
    instruction raises decode_one's WasmFormatError (the tokens before it are in ``out``)."""
    u32 = FAST_U32
    sleb = FAST_SLEB
    mem = FAST_MEM
    tok0 = _TOK0
    tok1 = _TOK1
    last = end - 1  # data[p + 1] is inside the body when p < last
    while p < end and limit != 0:
        limit -= 1
        b: i64 = data[p]
        t = tok0[b]
        if t is not None:
            out.append(t)
            p += 1
            continue
        if p < last:
            # LEBs of one or two bytes (read_uleb/read_sleb: no range check below 5 bytes)
            x: i64 = data[p + 1]
            if x < 0x80:
                t = tok1[b << 7 | x]
                if t is not None:
                    out.append(t)
                    p += 2
                    continue
            if u32[b]:
                if x < 0x80:
                    out.append((int(b), (int(x),)))
                    p += 2
                    continue
                if p + 2 < end and data[p + 2] < 0x80:
                    out.append((int(b), (int((x & 0x7F) | (data[p + 2] << 7)),)))
                    p += 3
                    continue
            elif sleb[b]:
                if x < 0x80:
                    out.append((int(b), (int(x - 0x80 if x & 0x40 else x),)))
                    p += 2
                    continue
                if p + 2 < end and data[p + 2] < 0x80:
                    v: i64 = (x & 0x7F) | (data[p + 2] << 7)
                    out.append((int(b), (int(v - 0x4000 if v & 0x2000 else v),)))
                    p += 3
                    continue
            elif mem[b] and x < 0x40 and p + 2 < end:
                y: i64 = data[p + 2]
                if y < 0x80:
                    out.append((int(b), (int(x), int(y), 0)))
                    p += 3
                    continue
                if p + 3 < end and data[p + 3] < 0x80:
                    out.append((int(b), (int(x), int((y & 0x7F) | (data[p + 3] << 7)), 0)))
                    p += 4
                    continue
            elif FAST_BLOCK[b]:
                bt = _BLOCK_TYPE.get(int(x))
                if bt is not None:
                    out.append((int(b), (bt,)))
                    p += 2
                    continue
            if u32[b] or sleb[b]:  # three or four bytes (a call index, an address)
                q = _leb4_end(data, p + 1, end)
                if q >= 0:
                    out.append((int(b), (_leb_value(data, p + 1, q, sleb[b] != 0),)))
                    p = q
                    continue
        q = _other_form(data, p, end, out)
        if q >= 0:
            p = q
            continue
        op, np, imms = decode_one(data, int(p), int(end))
        out.append((op, imms))
        p = np
    return p


def _other_form(data: bytes, p: i64, end: i64, out: list[Any]) -> i64:
    """The token of the instruction at ``p`` for the forms the one-byte paths leave (a
    SIMD, bulk-memory or atomic op; a memarg with a longer offset; ``call_indirect``; a
    float constant) when every LEB is short and nothing needs a check, appended to
    ``out``; the position after it, or -1 (nothing appended: decode_one reads it)."""
    b: i64 = data[p]
    q: i64 = p + 1
    if 0xFC <= b <= 0xFE:  # 0xFC bulk memory, 0xFD SIMD, 0xFE atomics (0xFB GC: decode_one)
        if q >= end:
            return -1
        sub: i64 = data[q]
        q += 1
        if sub >= 0x80:
            if q >= end or data[q] >= 0x80:
                return -1
            sub = (sub & 0x7F) | (data[q] << 7)
            q += 1
        slots: i64 = 0x20 if b == 0xFC else 0x120 if b == 0xFD else 0x73
        if sub >= slots:
            return -1
        op: i64 = (0x100 if b == 0xFC else 0x140 if b == 0xFD else 0x260) + sub
        k: i64 = KIND[op]
        if k == K_NONE:
            out.append((int(op), ()))
            return q
        if k == K_V128:
            if q + 16 > end:
                return -1
            out.append((int(op), (bytes(data[q : q + 16]),)))
            return q + 16
        if k == K_LANE or k == K_BYTE:
            if q >= end:
                return -1
            out.append((int(op), (int(data[q]),)))
            return q + 1
        if k == K_MEM or k == K_MEM_LANE:
            return _memarg_token(data, q, end, op, k == K_MEM_LANE, out)
        if k == K_U32X2 or k == K_TABLE2 or k == K_U32:
            r = _leb4_end(data, q, end)
            if r < 0:
                return -1
            a = _leb_value(data, q, r, False)
            if k == K_U32:
                out.append((int(op), (a,)))
                return r
            r2 = _leb4_end(data, r, end)
            if r2 < 0:
                return -1
            out.append((int(op), (a, _leb_value(data, r, r2, False))))
            return r2
        return -1
    k1: i64 = BYTE_KIND[b]
    if k1 == K_MEM:
        return _memarg_token(data, q, end, b, False, out)
    if k1 == K_CALL_INDIRECT:
        r = _leb4_end(data, q, end)
        if r < 0:
            return -1
        r2 = _leb4_end(data, r, end)
        if r2 < 0:
            return -1
        out.append((int(b), (_leb_value(data, q, r, False), _leb_value(data, r, r2, False))))
        return r2
    if k1 == K_F32:
        if q + 4 > end:
            return -1
        out.append((int(b), (_unpack(_F32, data, int(q))[0],)))
        return q + 4
    if k1 == K_F64:
        if q + 8 > end:
            return -1
        out.append((int(b), (_unpack(_F64, data, int(q))[0],)))
        return q + 8
    return -1


def _memarg_token(data: bytes, q: i64, end: i64, op: i64, lane: bool, out: list[Any]) -> i64:
    """A memory access's token ``(op, (align, offset, 0[, lane]))``: a one-byte alignment
    without a memory index and an offset of at most four bytes (read_uleb checks nothing
    below ten), appended; the position after, or -1 (nothing appended)."""
    if q >= end:
        return -1
    align: i64 = data[q]
    if align >= 0x40:
        return -1
    r = _leb4_end(data, q + 1, end)
    if r < 0:
        return -1
    off = _leb_value(data, q + 1, r, False)
    if not lane:
        out.append((int(op), (int(align), off, 0)))
        return r
    if r >= end:
        return -1
    out.append((int(op), (int(align), off, 0, int(data[r]))))
    return r + 1


def _leb4_end(data: bytes, q: i64, end: i64) -> i64:
    """The position after an LEB of at most four bytes at ``q``; -1 when longer or cut."""
    lim = q + 4 if q + 4 < end else end
    while q < lim:
        c: i64 = data[q]
        q += 1
        if c < 0x80:
            return q
    return -1


def _leb_value(data: bytes, q: i64, stop: i64, signed: bool) -> int:
    """The value of the LEB of at most four bytes in ``data[q:stop]`` as ``read_uleb`` /
    ``read_sleb`` read it (no range check applies below five bytes)."""
    v: i64 = 0
    shift: i64 = 0
    while q < stop:
        v |= (data[q] & 0x7F) << shift
        shift += 7
        q += 1
    if signed and v & (1 << (shift - 1)):
        v -= 1 << shift
    return int(v)


def mem_sites(data: bytes, p: i64, end: i64) -> tuple[int, list[tuple[int, int, int]]]:
    """``(instructions, [(position, op, offset)] of the memory accesses)`` of the
    instructions from ``p`` to ``end``: what the tokens of :func:`decode_tokens` say of
    memory accesses (``K_MEM``/``K_MEM_LANE``: their offset, the memarg's second
    immediate), without making the tokens."""
    sites: list[tuple[int, int, int]] = []
    none = FAST_NONE
    u32 = FAST_U32
    sleb = FAST_SLEB
    mem = FAST_MEM
    memk = _MEM_KINDS
    last = end - 1
    k: i64 = 0
    while p < end:
        b: i64 = data[p]
        if none[b]:
            p += 1
            k += 1
            continue
        if p < last:
            x: i64 = data[p + 1]
            if u32[b] or sleb[b]:
                if x < 0x80:
                    p += 2
                    k += 1
                    continue
                if p + 2 < end and data[p + 2] < 0x80:
                    p += 3
                    k += 1
                    continue
            elif mem[b] and x < 0x40 and p + 2 < end:
                y: i64 = data[p + 2]
                if y < 0x80:
                    sites.append((int(k), int(b), int(y)))
                    p += 3
                    k += 1
                    continue
                if p + 3 < end and data[p + 3] < 0x80:
                    sites.append((int(k), int(b), int((y & 0x7F) | (data[p + 3] << 7))))
                    p += 4
                    k += 1
                    continue
        op, np, imms = decode_one(data, int(p), int(end))
        if memk[op]:
            sites.append((int(k), op, imms[1]))
        k += 1
        p = np
    return int(k), sites


def loose_parts(toks: list[Any], lo: int, hi: int, token_of: Any, texts: list[str]) -> list[str]:
    """The lines of :func:`kbtool.analysis.fingerprints.loose_digests`' text for the tokens
    ``toks``: a call's, type's or table's mnemonic alone; an ``i32.const`` of a static
    address ``lo <= v < hi`` as ``"i32.const " + token_of(v)`` (each such token starting
    ``s:`` also appended to ``texts``, in order); any other as ``"MNEMONIC repr(imms)"``
    (compiled with the twin: a small module's loose digests were a pure-Python loop)."""
    parts: list[str] = []
    bare = _LOOSE_BARE
    names = MNEMONICS
    for t in toks:
        op: int = t[0]
        imms = t[1]
        if bare[op]:
            parts.append(names[op])
            continue
        if op == _I32_CONST and imms:
            v = imms[0]
            if lo <= v < hi:
                tok: str = token_of(v)
                parts.append("i32.const " + tok)
                if tok.startswith("s:"):
                    texts.append(tok)
                continue
        parts.append(names[op] + " " + repr(imms))
    return parts
