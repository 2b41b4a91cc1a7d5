"""One table that drives C emission per opcode (built from :mod:`kbtool.wasm.opcodes`).

``CTABLE[op_id]`` is ``(form, params, results, text)`` or None for ops the lifter handles
itself (control flow, locals, globals, calls, constants, plain loads/stores):

* ``bin`` infix operator ``text`` with C precedence ``PREC[text]``;
* ``binu`` infix on the unsigned reinterpretation, result cast back to signed;
* ``cmp`` / ``cmpu`` comparison (signed / unsigned operands), result i32;
* ``shl`` / ``shr`` / ``shru`` shifts (count masked like wasm);
* ``neg`` unary minus; ``eqz`` comparison with zero;
* ``cast`` a C cast prefix ``text`` (e.g. ``(int64_t)(uint32_t)``);
* ``call`` a prelude helper named ``text`` (the mnemonic with ``.`` -> ``_``);
* ``mem`` a prelude helper taking the effective address first (atomics, SIMD memory);
* ``void`` / ``voidmem`` like call/mem but the helper returns nothing.

Helpers take immediates (lane index, segment/table index) as trailing/leading integer
arguments; see :mod:`kbtool.lift.prelude` for the exact declarations.
"""

from __future__ import annotations

from kbtool.wasm.opcodes import K_LANE, K_MEM, K_MEM_LANE, KIND, MNEMONICS, PREFIX_BASE

PREC = {
    "*": 3,
    "/": 3,
    "%": 3,
    "+": 4,
    "-": 4,
    "<<": 5,
    ">>": 5,
    "<": 6,
    ">": 6,
    "<=": 6,
    ">=": 6,
    "==": 7,
    "!=": 7,
    "&": 8,
    "^": 9,
    "|": 10,
}
SCALARS = ("i32", "i64", "f32", "f64")
_CT = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}
_UT = {"i32": "uint32_t", "i64": "uint64_t"}
_INT_BIN = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "and": "&",
    "or": "|",
    "xor": "^",
    "div_s": "/",
    "rem_s": "%",
}
_F_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_LANE_T = {
    "i8x16": "i32",
    "i16x8": "i32",
    "i32x4": "i32",
    "i64x2": "i64",
    "f32x4": "f32",
    "f64x2": "f64",
}
_V_UNARY = (
    "not",
    "abs",
    "neg",
    "popcnt",
    "ceil",
    "floor",
    "trunc",
    "nearest",
    "sqrt",
    "extend_",
    "extadd",
    "convert",
    "demote",
    "promote",
)
_V_TERNARY = ("bitselect", "relaxed_madd", "relaxed_nmadd", "laneselect", "dot_i8x16_i7x16_add")


def helper(op: int) -> str:
    return MNEMONICS[op].replace(".", "_")


def _numeric(name: str):
    t, _, op = name.partition(".")
    src = None
    for s in SCALARS:
        if f"_{s}" in op:
            src = s
    if src is not None:  # conversion
        if op.startswith("wrap"):
            return "cast", (src,), (t,), "(int32_t)"
        if op.startswith("extend_i32"):
            return "cast", (src,), (t,), "(int64_t)" if op.endswith("_s") else "(int64_t)(uint32_t)"
        if op.startswith("convert"):
            u = op.endswith("_u")
            return "cast", (src,), (t,), f"({_CT[t]})" + (f"({_UT[src]})" if u else "")
        if op.startswith(("demote", "promote")):
            return "cast", (src,), (t,), f"({_CT[t]})"
        return "call", (src,), (t,), name.replace(".", "_")  # trunc*, reinterpret
    if op.startswith("extend") and op.endswith("_s"):  # extend8_s ...
        bits = op[len("extend") : -2]
        return "cast", (t,), (t,), f"({_CT[t]})(int{bits}_t)"
    if t in ("i32", "i64"):
        if op == "eqz":
            return "eqz", (t,), ("i32",), ""
        if op in _INT_BIN:
            return "bin", (t, t), (t,), _INT_BIN[op]
        if op in ("div_u", "rem_u"):
            return "binu", (t, t), (t,), "/" if op == "div_u" else "%"
        if op == "shl":
            return "shl", (t, t), (t,), "<<"
        if op == "shr_s":
            return "shr", (t, t), (t,), ">>"
        if op == "shr_u":
            return "shru", (t, t), (t,), ">>"
        base, _, sign = op.partition("_")
        if base in _CMP:
            return ("cmpu" if sign == "u" else "cmp"), (t, t), ("i32",), _CMP[base]
        if op in ("clz", "ctz", "popcnt"):
            return "call", (t,), (t,), name.replace(".", "_")
        return "call", (t, t), (t,), name.replace(".", "_")  # rotl, rotr
    if op in _F_BIN:
        return "bin", (t, t), (t,), _F_BIN[op]
    if op in _CMP:
        return "cmp", (t, t), ("i32",), _CMP[op]
    if op == "neg":
        return "neg", (t,), (t,), "-"
    if op in ("min", "max", "copysign"):
        return "call", (t, t), (t,), name.replace(".", "_")
    return "call", (t,), (t,), name.replace(".", "_")  # abs ceil floor trunc nearest sqrt


def _simd(op: int, name: str):
    shape, _, rest = name.partition(".")
    h = name.replace(".", "_")
    k = KIND[op]
    if k in (K_MEM, K_MEM_LANE):
        if "store" in rest:
            return (
                "voidmem",
                ("i32", "v128") if k == K_MEM_LANE or rest == "store" else ("i32", "v128"),
                (),
                h,
            )
        if k == K_MEM_LANE:
            return "mem", ("i32", "v128"), ("v128",), h
        return "mem", ("i32",), ("v128",), h
    if rest == "const" or rest == "shuffle":
        return None
    if rest == "splat":
        return "call", (_LANE_T[shape],), ("v128",), h
    if rest.startswith("extract_lane"):
        return "call", ("v128",), (_LANE_T[shape],), h
    if rest == "replace_lane":
        return "call", ("v128", _LANE_T[shape]), ("v128",), h
    if rest in ("shl", "shr_s", "shr_u"):
        return "call", ("v128", "i32"), ("v128",), h
    if rest in ("all_true", "bitmask", "any_true"):
        return "call", ("v128",), ("i32",), h
    if any(x in rest for x in _V_TERNARY):
        return "call", ("v128", "v128", "v128"), ("v128",), h
    if any(x in rest for x in _V_UNARY) and "narrow" not in rest and rest != "andnot":
        return "call", ("v128",), ("v128",), h
    return "call", ("v128", "v128"), ("v128",), h


def _atomic(op: int, name: str):
    h = name.replace(".", "_")
    if name == "atomic.fence":
        return "void", (), (), h
    if name == "memory.atomic.notify":
        return "mem", ("i32", "i32"), ("i32",), h
    if name == "memory.atomic.wait32":
        return "mem", ("i32", "i32", "i64"), ("i32",), h
    if name == "memory.atomic.wait64":
        return "mem", ("i32", "i64", "i64"), ("i32",), h
    t = name[:3]
    if ".atomic.load" in name:
        return "mem", ("i32",), (t,), h
    if ".atomic.store" in name:
        return "voidmem", ("i32", t), (), h
    if name.endswith("cmpxchg") or name.endswith("cmpxchg_u"):
        return "mem", ("i32", t, t), (t,), h
    return "mem", ("i32", t), (t,), h


_FC_SIGS = {
    "memory.init": ("void", ("i32", "i32", "i32"), ()),
    "data.drop": ("void", (), ()),
    "memory.copy": ("void", ("i32", "i32", "i32"), ()),
    "memory.fill": ("void", ("i32", "i32", "i32"), ()),
    "table.init": ("void", ("i32", "i32", "i32"), ()),
    "elem.drop": ("void", (), ()),
    "table.copy": ("void", ("i32", "i32", "i32"), ()),
    "table.grow": ("call", ("funcref", "i32"), ("i32",)),
    "table.size": ("call", (), ("i32",)),
    "table.fill": ("void", ("i32", "funcref", "i32"), ()),
    "i64.add128": ("call", ("i64", "i64", "i64", "i64"), ("i64", "i64")),
    "i64.sub128": ("call", ("i64", "i64", "i64", "i64"), ("i64", "i64")),
    "i64.mul_wide_s": ("call", ("i64", "i64"), ("i64", "i64")),
    "i64.mul_wide_u": ("call", ("i64", "i64"), ("i64", "i64")),
}


def _build():
    table: list = [None] * len(MNEMONICS)
    for op in range(0x45, 0xC5):
        table[op] = _numeric(MNEMONICS[op])
    fc = PREFIX_BASE[0xFC]
    for sub in range(0x20):
        name = MNEMONICS[fc + sub]
        if not name:
            continue
        if "trunc_sat" in name:
            t, _, rest = name.partition(".")
            src = rest.split("_")[2]
            table[fc + sub] = ("call", (src,), (t,), name.replace(".", "_"))
        elif name in _FC_SIGS:
            form, ps, rs = _FC_SIGS[name]
            table[fc + sub] = (form, ps, rs, name.replace(".", "_"))
    fd = PREFIX_BASE[0xFD]
    for sub in range(0x120):
        name = MNEMONICS[fd + sub]
        if name:
            table[fd + sub] = _simd(fd + sub, name)
    fe = PREFIX_BASE[0xFE]
    for sub in range(0x50):
        name = MNEMONICS[fe + sub]
        if name:
            table[fe + sub] = _atomic(fe + sub, name)
    return table


CTABLE = _build()


def imm_args(op: int) -> int:
    """Number of leading integer immediates a table helper takes (segment/table indices)."""
    name = MNEMONICS[op]
    if name in ("memory.init", "table.init", "table.copy"):
        return 2
    if name in ("data.drop", "elem.drop", "table.grow", "table.size", "table.fill"):
        return 1
    return 0


def lane_arg(op: int) -> bool:
    return KIND[op] in (K_LANE, K_MEM_LANE)
