"""The instruction-by-instruction loop of the diff's relocation-aware body comparison
(:func:`kbtool.services.diff.relocation.compare_bodies`; part of the decoder twin, compiled
with it, so the loop and the token reader it calls are native code).

The caller reads the local declarations and keeps what needs the modules' data (the
address check ``addr_same``, the data map's ``locate``, the pairing's ``callee_map``); this
part walks both token streams (:func:`.tokens.decode_tokens`, decoded on demand in the same
chunks as before) and answers with a code (:data:`SAME` ... :data:`OPERAND`) and the
operands the caller's reason names. The pure package runs the same code (the reference)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

try:  # mypyc: native 64-bit ints (see the package's __init__)
    from mypy_extensions import i64
except ImportError:  # the pure path without it: plain ints
    i64 = int  # type: ignore[misc,assignment]

from ..opcodes import (
    K_BLOCK,
    K_CALL,
    K_CALL_INDIRECT,
    K_I32,
    K_I64,
    K_MEM,
    K_MEM_LANE,
    K_REF_FUNC,
    K_TYPE,
    KIND,
    MNEMONICS,
)
from .tokens import decode_tokens

CHUNK: Final = 16  # tokens asked for past what the loop has read (at least as many as read)
MAX_SIZED: Final = 4096  # the largest sized string (Go/Rust ``(ptr, len)``) compared
GO_FUNC_VALUE_OFFSET: Final = 0x1000  # PC_F of a Go module's first defined function
_MASK64: Final = 0xFFFFFFFFFFFFFFFF

# the answers (relocation.py turns them into a BodyCompare with its reason text)
SAME: Final = 0
COUNT: Final = 1  # "instruction count differs"
OP: Final = 2  # "<op a> -> <op b>"
TARGET: Final = 3  # "<op> target differs"
GO_VALUE: Final = 4  # "Go function value differs"
CONST: Final = 5  # "<op> <a> -> <b>" (with the address check's data changes)
MEMARG: Final = 6  # "memarg differs"
OFFSET: Final = 7  # "<op> offset <a> -> <b>"
INDIRECT: Final = 8  # "call_indirect type differs"
TYPE: Final = 9  # "<op> type differs"
OPERAND: Final = 10  # "<op> operand differs"

# per op id: 1 where it is not an i32/i64 constant (equal tokens are then the same code)
_PLAIN: Final = bytes(k != K_I32 and k != K_I64 for k in KIND)
_CONST: Final = bytes(k == K_I32 or k == K_I64 for k in KIND)
_CALLISH: Final = bytes(k == K_CALL or k == K_REF_FUNC for k in KIND)
_MEMISH: Final = bytes(k == K_MEM or k == K_MEM_LANE for k in KIND)
_TYPED: Final = bytes(k == K_BLOCK or k == K_TYPE for k in KIND)
_INDIRECT: Final = bytes(k == K_CALL_INDIRECT for k in KIND)
# per op id: 1 for a store (its mnemonic holds ".store"): a sized string's length is stored
_STORE: Final = bytes(".store" in name for name in MNEMONICS)


class Tokens:
    """A body's tokens decoded on demand (a comparison that meets a difference early does
    not decode the rest); ``buf`` holds what is decoded so far."""

    def __init__(self, data: bytes, p: i64, end: i64) -> None:
        """The tokens of ``data[p:end]`` (``p``: past the body's local declarations)."""
        self.buf: list[Any] = []
        self.data = data
        self.p: i64 = p
        self.end: i64 = end

    def upto(self, n: i64) -> i64:
        """Decode until at least ``n`` tokens (or the body's end); how many there are now."""
        buf = self.buf
        have: i64 = len(buf)
        if have < n and self.p < self.end:
            want = n - have
            self.p = decode_tokens(
                self.data, self.p, self.end, buf, want if want > CHUNK else CHUNK
            )
        return len(buf)

    def all(self) -> i64:
        if self.p < self.end:
            self.p = decode_tokens(self.data, self.p, self.end, self.buf, -1)
        return len(self.buf)


def _go_func(c: int, nimp: int, ndef: int) -> int:
    """The function index a Go function value ``(PC_F << 16) | PC_B`` names, or -1
    (``ndef``: 0 for a module that is not Go)."""
    if ndef == 0 or c < 0:
        return -1
    f = (c >> 16) - GO_FUNC_VALUE_OFFSET
    if 0 <= f < ndef:
        return nimp + f
    return -1


def _type_text(tt: list[str], t: int) -> str | None:
    return tt[t] if 0 <= t < len(tt) else None


def compare_tokens(
    data_a: bytes,
    pa: i64,
    ea: i64,
    data_b: bytes,
    pb: i64,
    eb: i64,
    first_difference: bool,
    side_a: tuple[int, int, int, int, list[str]],
    side_b: tuple[int, int, int, int, list[str]],
    locate_a: Callable[[int], object],
    callee_map: Callable[[int], object],
    addr_same: Callable[[int, int, object], bool],
) -> tuple[int, bool, int, int, object, object]:
    """Compare the instructions of ``data_a[pa:ea]`` and ``data_b[pb:eb]`` (past equal local
    declarations): ``(answer code, a Go function value was relocated, op a, op b, operand a,
    operand b)``. ``side_*``: ``(static lo, static hi, function imports, defined functions if
    the module is Go else 0, signature texts by type index)``. ``first_difference``: decode
    only as far as the first difference (else both whole bodies first). A malformed body
    raises decode_one's WasmFormatError."""
    ta = Tokens(data_a, pa, ea)
    tb = Tokens(data_b, pb, eb)
    if not first_difference and ta.all() != tb.all():
        return COUNT, False, 0, 0, None, None
    slo_a, shi_a, nimp_a, ngo_a, tt_a = side_a
    slo_b, shi_b, nimp_b, ngo_b, tt_b = side_b
    go_relocated = False
    bufa = ta.buf
    bufb = tb.buf
    plain = _PLAIN
    na: i64 = len(bufa)
    nb: i64 = len(bufb)
    n: i64 = na if na < nb else nb
    k: i64 = -1
    while True:
        k += 1
        if k >= n:
            na = len(bufa)  # (_size_after may have decoded further)
            nb = len(bufb)
            n = na if na < nb else nb
        if k >= n:
            more = k + (k if k > CHUNK else CHUNK)
            na = ta.upto(more)
            nb = tb.upto(more)
            if na <= k or nb <= k:
                if na != nb:
                    return COUNT, False, 0, 0, None, None
                break
            n = na if na < nb else nb
        xa: tuple = bufa[k]
        xb: tuple = bufb[k]
        if xa == xb:  # the same op and immediates: only a constant into the data differs
            o: int = xa[0]
            if plain[o] or locate_a(xa[1][0] & _MASK64) is None:
                continue
        oa: int = xa[0]
        ob: int = xb[0]
        ma: tuple = xa[1]
        mb: tuple = xb[1]
        if oa != ob:
            return OP, False, oa, ob, None, None
        if _CALLISH[oa]:
            if callee_map(ma[0]) == mb[0]:
                continue
            return TARGET, False, oa, ob, None, None
        if _CONST[oa]:
            a: int = ma[0]
            b: int = mb[0]
            ga = _go_func(a, nimp_a, ngo_a)
            gb = _go_func(b, nimp_b, ngo_b)
            if ga >= 0 and gb >= 0:
                if (a & 0xFFFF) == (b & 0xFFFF) and callee_map(ga) == gb:
                    go_relocated = True
                    continue
                return GO_VALUE, False, oa, ob, None, None
            size = _size_after(ta, tb, k)
            if size == -2:
                return COUNT, False, 0, 0, None, None
            if addr_same(a, b, None if size < 0 else size):
                continue
            return CONST, False, oa, ob, a, b
        if _MEMISH[oa]:
            if ma[0] != mb[0] or ma[2:] != mb[2:]:
                return MEMARG, False, oa, ob, None, None
            offa: int = ma[1]
            offb: int = mb[1]
            if slo_a <= offa < shi_a and slo_b <= offb < shi_b and addr_same(offa, offb, None):
                continue
            return OFFSET, False, oa, ob, offa, offb
        if _INDIRECT[oa]:
            if _type_text(tt_a, ma[0]) == _type_text(tt_b, mb[0]) and ma[1] == mb[1]:
                continue
            return INDIRECT, False, oa, ob, None, None
        if _TYPED[oa]:
            x = ma[0]
            y = mb[0]
            if (
                isinstance(x, int)
                and isinstance(y, int)
                and _type_text(tt_a, x) == _type_text(tt_b, y)
            ):
                continue
            return TYPE, False, oa, ob, None, None
        return OPERAND, False, oa, ob, None, None
    return SAME, go_relocated, 0, 0, None, None


def _size_after(toks_a: Tokens, toks_b: Tokens, k: i64) -> i64:
    """The length of a sized string (Go/Rust ``(ptr, len)``): the first constant within
    twelve instructions that is stored right away (``i64.const len; i64.store``) or, right
    after the pointer, the next constant; the same small value on both sides. -1: none;
    -2: one body ends within those instructions and the other does not."""
    na = toks_a.upto(k + 14)
    nb = toks_b.upto(k + 14)
    if na != nb and (na if na < nb else nb) < k + 14:
        return -2
    ta = toks_a.buf
    tb = toks_b.buf
    stop: i64 = k + 13 if k + 13 < na - 1 else na - 1
    j: i64 = k + 1
    while j < stop:
        xa: tuple = ta[j]
        xb: tuple = tb[j]
        oa: int = xa[0]
        if _CONST[oa] and oa == xb[0]:
            nxt: tuple = ta[j + 1]
            if j == k + 1 or _STORE[nxt[0]]:
                ma: tuple = xa[1]
                if ma == xb[1] and 0 < ma[0] <= MAX_SIZED:
                    return int(ma[0])
                if j == k + 1:
                    return -1
        j += 1
    return -1
