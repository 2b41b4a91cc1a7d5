"""Limits, expression flags, C type tables, errors and results, the value-stack expression
``_E`` and the C text of constants and operands (signed/unsigned views).
"""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Sized
from dataclasses import dataclass, field
from typing import Any, Final

try:  # mypyc: native 64-bit ints in the passes over the ops (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]

from kbtool.wasm.opcodes import MNEMONICS, PREFIX_BASE

from ..context import VALTYPE_C, VALTYPE_CODE
from ..names import MAX_IDENT, c_ident
from .opnames import (
    OP_BLOCK,
    OP_BR_ON_NON_NULL,
    OP_BR_ON_NULL,
    OP_IF,
    OP_LOOP,
    OP_TRY,
    OP_TRY_TABLE,
)

MAX_INSTRUCTIONS: Final = 400_000
MAX_OUTPUT_CHARS: Final = 4_000_000
MAX_LOCALS: Final = 50_000
MAX_EXPR_CHARS: Final = 1_500
MAX_INDENT: Final = 40
MAX_BREAK_WALK: Final = 10_000  # blocks walked per branch when choosing do { } while (0)
_INDENT: Final = ["  " * d for d in range(MAX_INDENT + 1)]
DEFAULT_SECONDS: Final = 10.0

F_CALL: Final = 1
F_MEM: Final = 2
F_GLOB: Final = 4
F_SET: Final = 8  # the expression assigns a local (a folded ``local.tee``)
F_EFFECT: Final = 7  # F_CALL | F_MEM | F_GLOB (a number: mypyc inlines it)

# a loop's last statement that steps a counter: `i = i + k;`, `i++;`, `i += k;`
_STEP: Final = re.compile(r"([A-Za-z_]\w*)(?: = \1 [-+] [^;]+|\+\+|--| [-+]= [^;]+);$")
_COMPOUND: Final = re.compile(
    r"([-+*&|^]|<<|>>) ([A-Za-z_]\w*|-?[0-9]+(?:LL)?|0x[0-9a-f]+(?:LL)?)$"
)
_MASKED: Final = re.compile(r" & (?:1|3|7|15|31|63)$")
_OPENERS: Final = {
    OP_BLOCK: "block",
    OP_LOOP: "loop",
    OP_IF: "if",
    OP_TRY: "try",
    OP_TRY_TABLE: "try_table",
}
_LOAD_CT: Final = {
    "i32.load": "int32_t",
    "i64.load": "int64_t",
    "f32.load": "float",
    "f64.load": "double",
    "i32.load8_s": "int8_t",
    "i32.load8_u": "uint8_t",
    "i32.load16_s": "int16_t",
    "i32.load16_u": "uint16_t",
    "i64.load8_s": "int8_t",
    "i64.load8_u": "uint8_t",
    "i64.load16_s": "int16_t",
    "i64.load16_u": "uint16_t",
    "i64.load32_s": "int32_t",
    "i64.load32_u": "uint32_t",
}
_STORE_CT: Final = {
    "i32.store": "int32_t",
    "i64.store": "int64_t",
    "f32.store": "float",
    "f64.store": "double",
    "i32.store8": "int8_t",
    "i32.store16": "int16_t",
    "i64.store8": "int8_t",
    "i64.store16": "int16_t",
    "i64.store32": "int32_t",
}
_GC_BASE = PREFIX_BASE[0xFB]
_BR_ON_CAST: Final = frozenset((_GC_BASE + 0x18, _GC_BASE + 0x19))
_BR_ON: Final = frozenset((OP_BR_ON_NULL, OP_BR_ON_NON_NULL)) | _BR_ON_CAST
_GC_OPS: Final = frozenset(
    [OP_BR_ON_NULL, OP_BR_ON_NON_NULL]
    + [_GC_BASE + k for k in range(0x1F) if MNEMONICS[_GC_BASE + k]]
)
_HEAPTYPE_C = {
    "func": "HT_FUNC",
    "extern": "HT_EXTERN",
    "any": "HT_ANY",
    "eq": "HT_EQ",
    "i31": "HT_I31",
    "struct": "HT_STRUCT",
    "array": "HT_ARRAY",
    "exn": "HT_EXN",
    "none": "HT_NONE",
    "noextern": "HT_NOEXTERN",
    "nofunc": "HT_NOFUNC",
    "noexn": "HT_NOEXN",
}


def _heaptype_c(h) -> str:
    """A heap type as a C integer: a type index, or an ``HT_*`` constant of the prelude."""
    h = str(h)
    shared = h.startswith("shared ")
    h = h.removeprefix("shared ").removeprefix("exact ")
    c = h if h.isdigit() else _HEAPTYPE_C.get(h)
    if c is None:
        raise LiftError("unknown heap type")
    return f"HT_SHARED({c})" if shared else c


def _gc_value(storage: str) -> str:
    """The wasm value type a field/element of ``storage`` type reads as."""
    return "i32" if storage in ("i8", "i16") else storage


def _gc_suffix(storage: str) -> str:
    """Helper suffix per storage type: i32 (also packed i8/i16), i64, f32, f64, v128, ref."""
    if storage in ("i8", "i16"):
        return "i32"
    return storage if storage in ("i32", "i64", "f32", "f64", "v128") else "ref"


_BINARY_FORMS: Final = frozenset(("bin", "binu", "cmp", "cmpu", "shl", "shr", "shru"))
_NEG_CMP: Final = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


class LiftError(Exception):
    """The function cannot be lifted (unsupported instruction, invalid stack, budget)."""


@dataclass
class LiftStats:
    instructions: int = 0
    lines: int = 0
    body_lines: int = 0  # lines between the definition's braces
    gotos: int = 0
    labels: int = 0
    max_depth: int = 0
    temps: int = 0
    seconds: float = 0.0
    frame_slots: int = 0  # memory accesses at a constant offset from a shadow-stack frame base
    frame_named: int = 0  # ... of them shown as a named frame slot (``frame->local_0c``)


@dataclass
class LiftResult:
    """``text``: C for one function (declarations it needs + definition);
    ``truncated``: a placeholder replaced the body (reason in ``reason``)."""

    func_index: int
    text: str
    truncated: bool = False
    reason: str = ""
    stats: LiftStats = field(default_factory=LiftStats)


class _E:
    """An expression on the value stack."""

    __slots__ = ("text", "prec", "ty", "fl", "locs", "neg", "const", "tee", "negp", "u", "nn", "w")

    def __init__(
        self,
        text: str,
        prec: int,
        ty: str,
        fl: int = 0,
        locs: tuple = (),
        neg: str | None = None,
        const: Any = None,
        tee: int | None = None,
        negp: int = -1,
        u: bool = False,
        nn: bool = False,
    ):
        self.text = text
        self.prec = prec
        self.ty = ty
        self.fl = fl
        self.locs = locs  # locals the expression reads (x) and assigns (~x, with F_SET)
        self.neg = neg
        self.const = const
        self.tee = tee  # local index when the expression is exactly ``lN = value``
        self.negp = negp  # precedence of ``neg`` when it is a 0/1 value (a comparison), else -1
        self.u = u  # the C type is unsigned (uint32_t / uint64_t), not int32_t / int64_t
        # the value is never negative (below 2**31 / 2**63: a zero-extended 8/16-bit load, a
        # 0/1 result, a count, a mask), so its signed and unsigned readings agree: an
        # unsigned operation needs no cast on it (C's int type says the same)
        self.nn = nn
        # an i64 widened from 32 bits (`(int64_t)x`): x's text and precedence, for a consumer
        # where C widens it anyway (assigned to an i64, an operand next to a 64-bit one), then
        # the 32-bit value before any extension (a shift count: the same low bits)
        self.w: tuple[str, int, str, int] | None = None


def _p(e: _E, maxprec: int) -> str:
    return e.text if e.prec <= maxprec else f"({e.text})"


#: a wasm value type's C type and its letter in struct and typedef names (context.py's
#: ``c_type`` / ``type_code``, here compiled: the walk asks per local, call and result)
_VT_C: Final[dict[str, str]] = dict(VALTYPE_C)
_VT_CODE: Final[dict[str, str]] = dict(VALTYPE_CODE)


def c_type(valtype: str) -> str:
    """C type of a wasm value type (references are ``wasm_ref``)."""
    return _VT_C.get(valtype, "wasm_ref")


def type_code(valtypes: Any) -> str:
    out = ""
    for t in valtypes:
        out += _VT_CODE.get(t, "r")
    return out


#: (x, y) -> ``tuple(set(x) | set(y))`` for two long locals' tuples (see :func:`_union`):
#: the same pairs recur, and a lookup costs less than two sets and a union
_UNIONS: Final[dict[tuple[tuple, tuple], tuple]] = {}


def _union(x: tuple[int, ...], y: tuple[int, ...]) -> tuple:
    """The locals of ``x`` and ``y`` once each, as ``tuple(set(x) | set(y))`` has them.

    Only the members and their count matter to the lifter (``in`` tests, a tuple of one
    local read as ``locs[0]``), never their order: two one-local tuples (half the calls)
    give ``x`` or ``(a, b)``; a dozen locals at most are listed in order of first sight
    (no sets, no memo; the members, local indices and their ``~``, compared as native
    ints, not by ``in``'s generic compare); more go through the sets, remembered per pair
    of tuples."""
    if len(x) == 1 and len(y) == 1:
        a = x[0]
        b = y[0]
        return x if a == b else (a, b)
    if len(x) + len(y) <= 12:
        out: list[int] = []
        n = 0
        for v in x:
            j = 0
            while j < n and out[j] != v:
                j += 1
            if j == n:
                out.append(v)
                n += 1
        for v in y:
            j = 0
            while j < n and out[j] != v:
                j += 1
            if j == n:
                out.append(v)
                n += 1
        return tuple(out)
    key = (x, y)
    u = _UNIONS.get(key)
    if u is None:
        u = tuple(set(x) | set(y))
        if len(_UNIONS) >= 1 << 16:
            _UNIONS.clear()
        _UNIONS[key] = u
    return u


def _merge(*es: _E) -> tuple[int, tuple]:  # typed: callers unpack natively (mypyc)
    fl = 0
    locs: tuple = ()
    for e in es:
        fl |= e.fl
        if e.locs:
            locs = e.locs if not locs else _union(locs, e.locs)
    return fl, locs


def _merge_list(es: list[_E]) -> tuple[int, tuple]:
    """:func:`_merge` of a list (a native loop: ``_merge(*es)`` of a list is a generic call
    under mypyc)."""
    fl = 0
    locs: tuple = ()
    for e in es:
        fl |= e.fl
        if e.locs:
            locs = e.locs if not locs else _union(locs, e.locs)
    return fl, locs


def _same_len(a: Sized, b: Sized) -> None:
    """Raise what ``zip(a, b, strict=True)`` raises when the lengths differ: the lifter
    checks first and then zips plainly (mypyc compiles a plain ``zip`` loop; a strict one
    is a call of the builtin with keywords)."""
    if len(a) != len(b):
        side = "shorter" if len(b) < len(a) else "longer"
        raise ValueError(f"zip() argument 2 is {side} than argument 1")


# ----------------------------------------------------------------------------- pass 2


class _Budget:
    def __init__(self, limit_units: int, deadline: float | None):
        self.units = limit_units
        self.deadline = deadline
        self.n = 0

    def spend(self, k: int) -> None:
        self.units -= k
        self.n += k
        if self.units < 0:
            raise LiftError("work budget exceeded")
        if self.deadline is not None and self.n > 4096:
            self.n = 0
            if time.perf_counter() > self.deadline:
                raise LiftError("time budget exceeded")


def _assign_stmt(name: str, text: str) -> str:
    """``x = x + 1;`` as ``x++;``, ``x = x + k;`` as ``x += k;`` (a simple right operand)."""
    if text.startswith(name) and text[len(name) : len(name) + 1] == " ":
        m = _COMPOUND.match(text, len(name) + 1)
        if m is not None:
            op, rhs = m.group(1), m.group(2)
            if rhs == "1" and (op == "+" or op == "-"):
                return f"{name}{op}{op};"
            return f"{name} {op}= {rhs};"
    return f"{name} = {text};"


def _i32_text(v: int) -> str:
    if v == -0x80000000:
        return "(-2147483647 - 1)"
    if v >= 0x10000 and v & 0xFFF == 0 or v >= 0x1000000:
        return hex(v)  # f"0x{v:x}" (v > 0): a builtin call, not str.format (mypyc)
    return str(v)


def _u(e: _E, ty: str) -> str:
    """``e`` read as unsigned: ``123u`` for a constant, else a cast."""
    if isinstance(e.const, int) and not isinstance(e.const, bool):
        if ty == "i32":
            v = e.const & 0xFFFFFFFF
            return f"{v}u" if v < 0x10000 else hex(v) + "u"
        v = e.const & 0xFFFFFFFFFFFFFFFF
        return f"{v}ULL" if v < 0x10000 else hex(v) + "ULL"
    if e.w is not None:  # (uint64_t)(int64_t)x is (uint64_t)x: the same extension
        return f"(uint64_t){e.w[0] if e.w[1] <= 2 else f'({e.w[0]})'}"
    return f"({'uint32_t' if ty == 'i32' else 'uint64_t'}){_p(e, 2)}"


def _uo(e: _E, ty: str, maxprec: int, other_u: bool) -> str:
    """An operand of an unsigned operation: as is when its C type is already unsigned or
    its value is never negative (``nn``), a non-negative constant as is when the other
    operand is unsigned or never negative (C converts it, or both readings agree), else
    :func:`_u`."""
    if e.u or e.nn:
        return _p(e, maxprec)
    c = e.const
    if other_u and type(c) is int and 0 <= c <= (0x7FFFFFFF if ty == "i32" else 1 << 62):
        return _p(e, maxprec)
    return _u(e, ty)


def _narrow(e: _E) -> _E:
    """The 32-bit operand of a widening ``(int64_t)x`` (``e.w``), for a place where C
    converts it to 64 bits itself (the same sign- or zero-extension: a zero-extended value is
    ``uint32_t`` or never negative)."""
    assert e.w is not None
    return _E(e.w[0], e.w[1], e.ty, e.fl, e.locs, nn=e.nn)


def _uo_signed(e: _E, other: _E) -> bool:
    """Whether :func:`_uo` prints ``e`` (operand of an unsigned operation next to ``other``)
    with a signed C type: it is never negative, or a bare non-negative constant."""
    if e.u:
        return False
    if e.nn:
        return True
    return (other.u or other.nn) and _nonneg_const(e)


def _nonneg_const(e: _E) -> bool:
    """``e`` is an integer constant that :func:`_uo` may print bare (0 .. 2**31-1 / 2**62)."""
    c = e.const
    return type(c) is int and 0 <= c <= (0x7FFFFFFF if e.ty == "i32" else 1 << 62)


def _so(e: _E, ty: str, maxprec: int) -> str:
    """An operand of a signed operation (``<``, ``/``, ``>>``): an unsigned value is cast."""
    if e.u:
        return f"({'int32_t' if ty == 'i32' else 'int64_t'}){_p(e, 2)}"
    return _p(e, maxprec)


def _i64_text(v: int) -> str:
    if v == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    if v >= 0x1000000:
        return hex(v) + "LL"
    return f"{v}LL"


#: an ``f32.const``'s text per raw bits (the value is the float of those bits): the
#: shortest text that reads back is up to nine format calls; constants recur
_F32_TEXTS: Final[dict[int, str]] = {}


def _f32_text(v: float, bits: int) -> str:
    """The C text of the ``f32.const`` whose raw bits are ``bits`` (``v``: their value)."""
    t = _F32_TEXTS.get(bits)
    if t is None:
        t = _f32_new(v, bits)
        if len(_F32_TEXTS) >= 1 << 16:
            _F32_TEXTS.clear()
        _F32_TEXTS[bits] = t
    return t


def _f32_new(v: float, bits: int) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        return f"f32_reinterpret_i32({_i32_text(struct.unpack('<i', struct.pack('<I', bits))[0])})"
    for n in range(1, 10):
        s = f"{v:.{n}g}"
        try:
            same = struct.unpack("<f", struct.pack("<f", float(s)))[0] == v
        except OverflowError:  # rounded past FLT_MAX
            same = False
        if same:
            break
    if "." not in s and "e" not in s and "n" not in s:
        s += ".0"
    return s + "f"


def _f64_text(v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        bits = struct.unpack("<q", struct.pack("<d", v))[0]
        return f"f64_reinterpret_i64({_i64_text(bits)})"
    s = repr(v)
    if "." not in s and "e" not in s:
        s += ".0"
    return s


def _c_ident(name: str) -> str:
    """``names.c_ident(name)``: a name already made of ``[A-Za-z0-9_]`` that does not start
    with a digit and fits is itself (checked by code points here, compiled); any other goes
    through ``c_ident`` (its regex)."""
    n = len(name)
    if n == 0 or n > MAX_IDENT or 48 <= ord(name[0]) <= 57:
        return c_ident(name)
    for ch in name:
        o = ord(ch)
        if not (97 <= o <= 122 or 65 <= o <= 90 or 48 <= o <= 57 or o == 95):
            return c_ident(name)
    return name


def c_ident_path(text: str) -> str:
    """A hook result like ``p->field_8`` or ``p->a.b``: keep ``->``/``.`` between identifiers."""
    out = []
    for part in text.replace("->", "\x00->\x00").replace(".", "\x00.\x00").split("\x00"):
        out.append(part if part in ("->", ".") else _c_ident(part))
    return "".join(out)


def push_at(stk: list[object], depth: i64, v: object) -> i64:
    """Push ``v`` on a stack kept as a list with a ``depth`` (entries above it are left
    over and overwritten: a list popped or cleared to empty frees its storage and
    reallocates it at the next push); the new depth."""
    if depth < len(stk):
        stk[depth] = v
    else:
        stk.append(v)
    return depth + 1
