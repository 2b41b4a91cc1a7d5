"""Lift one wasm function to C (the studio's ``lifted_c``).

Two linear passes, no recursion on nesting depth:

1. :func:`_scan` decodes the body once (``kbtool.wasm.instr.decode_one``), matches block
   ends and records every branch site, then decides per block how C will express it,
   innermost first: a ``block`` nobody branches to is inlined; one whose only branches are
   top-level ``br_if`` becomes ``if (!cond) { rest }``; one whose branches can all use C
   ``break`` becomes ``do { ... } while (0)``; otherwise its end gets a label and the
   branches a ``goto``. A ``loop`` is ``while (1)`` (``continue`` for back edges), or
   ``do { ... } while (cond)`` when its only back edge is a final ``br_if``. A branch that
   leaves the innermost loop to where the loop's own end leads is ``break``
   (:meth:`_Lifter.break_lands`); at the loop's end ``while (1)`` is rewritten when its
   shape allows: a leading exit test gives ``while (!c)``, a body that is one ``if``
   looping back gives ``while (c)``, a final ``if (c) continue;`` gives ``do ... while
   (c)``, and a ``while`` whose last statement steps a counter of its condition (no other
   ``continue``) gives ``for (i = a; c; i++)``. The block right around a ``br_table``
   chain closes the ``switch``, so the last case's code sits under its label.
2. :class:`_Lifter` walks the instructions with an expression stack. Values stay
   expressions until an effect could change what they read (a store, a call, a write of a
   local they read, a control-flow split), then they are spilled to temporaries ``tN``.
   A ``local.tee`` stays the expression ``(lN = v)`` (flag ``F_SET``, ``~N`` in ``locs``)
   when :meth:`_Lifter.foldable` sees its consumer before any other use of ``lN``; a read
   of ``lN`` or control flow while it is pending turns it back into a statement.

Every emitted identifier is sanitised (see :mod:`kbtool.lift.context`); comments are
escaped. A function over the size/time budget, or using an instruction without a C
rendering, gets a valid stub with a ``/* kbtool: ... */`` placeholder comment. GC ops are
prelude helper calls (field types from :mod:`kbtool.lift.gctypes`); ``br_on_*`` are
conditional breaks through :meth:`_Lifter.br_if`.
"""

from __future__ import annotations

import re
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Final

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one, read_local_decls
from kbtool.wasm.opcodes import BYTE_KIND, K_NONE, MNEMONICS, PREFIX_BASE

from .context import _GENERATED, LiftModule, c_type, prepare, type_code
from .ctable import CTABLE, PREC, imm_args, lane_arg
from .names import C_KEYWORDS, c_ident, comment_text, escape_text
from .prelude import PRELUDE_NAMES

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
F_EFFECT: Final = F_CALL | F_MEM | F_GLOB

# a loop's last statement that steps a counter: `i = i + k;`, `i++;`, `i += k;`
_STEP: Final = re.compile(r"([A-Za-z_]\w*)(?: = \1 [-+] [^;]+|\+\+|--| [-+]= [^;]+);$")
_COMPOUND: Final = re.compile(
    r"([-+*&|^]|<<|>>) ([A-Za-z_]\w*|-?[0-9]+(?:LL)?|0x[0-9a-f]+(?:LL)?)$"
)
_MASKED: Final = re.compile(r" & (?:1|3|7|15|31|63)$")
_OPENERS: Final = {0x02: "block", 0x03: "loop", 0x04: "if", 0x06: "try", 0x1F: "try_table"}
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
_BR_ON: Final = frozenset((0xD5, 0xD6)) | _BR_ON_CAST
_GC_OPS: Final = frozenset(
    [0xD5, 0xD6] + [_GC_BASE + k for k in range(0x1F) if MNEMONICS[_GC_BASE + k]]
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

    __slots__ = ("text", "prec", "ty", "fl", "locs", "neg", "const", "tee", "negp", "u")

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


def _p(e: _E, maxprec: int) -> str:
    return e.text if e.prec <= maxprec else f"({e.text})"


def _has_call(e: _E) -> bool:
    return bool(e.fl & F_CALL)


def _merge(*es: _E):
    fl = 0
    locs: tuple = ()
    for e in es:
        fl |= e.fl
        if e.locs:
            locs = e.locs if not locs else tuple(set(locs) | set(e.locs))
    return fl, locs


# ----------------------------------------------------------------------------- pass 1


class _Blk:
    __slots__ = (
        "kind",
        "start",
        "end",
        "else_at",
        "parent",
        "sites",
        "form",
        "bt",
        "cross_loop",
        "label",
        "claimed",
        "cross_block",
    )

    def __init__(self, kind: str, start: int, parent: int, bt: Any):
        self.kind = kind
        self.start = start
        self.end = -1
        self.else_at = -1
        self.parent = parent
        self.sites: list[tuple[int, int, int]] = []  # (instr index, op, innermost block)
        self.form = ""
        self.bt = bt
        self.cross_loop = 0
        self.cross_block = 0
        self.label = ""
        self.claimed = -1  # index of the br_table whose switch this block belongs to


def _scan(ops: list[int], args: list[tuple], ctrl: list[int], budget: _Budget) -> tuple:
    """Match blocks, record branch sites and choose each block's C form (``ctrl``: the
    indices of the control instructions in ``ops``)."""
    blocks = [_Blk("func", -1, -1, None)]
    stack = [0]
    open_at: dict[int, int] = {}
    tables: list[tuple[int, int, set[int]]] = []
    order: list[int] = []
    # crossing counts: "+1 for the innermost d open blocks" in O(1) with a difference
    # stack (acc[top] += 1, acc[top - d] -= 1; a closing block passes its sum down)
    acc_loop = [0]
    acc_blk = [0]
    for i in ctrl:
        op = ops[i]
        imms = args[i]
        kind = _OPENERS.get(op)
        if kind is not None:
            b = len(blocks)
            blocks.append(_Blk(kind, i, stack[-1], imms[0]))
            open_at[i] = b
            stack.append(b)
            acc_loop.append(0)
            acc_blk.append(0)
        elif op == 0x0B or op == 0x18:
            if not stack:
                raise LiftError("unbalanced end")
            if op == 0x18 and blocks[stack[-1]].kind != "try":
                raise LiftError("delegate outside a try")
            b = stack.pop()
            blk = blocks[b]
            blk.end = i
            blk.cross_loop = cl = acc_loop.pop()
            blk.cross_block = cb = acc_blk.pop()
            if stack:
                acc_loop[-1] += cl
                acc_blk[-1] += cb
            order.append(b)
        elif op == 0x05 or op == 0x07 or op == 0x19:
            # the decoder checks nesting only: an else/catch must belong to its if/try
            want = "if" if op == 0x05 else "try"
            if len(stack) < 2 or blocks[stack[-1]].kind != want:
                raise LiftError("else outside an if" if op == 0x05 else "catch outside a try")
            if blocks[stack[-1]].else_at < 0:
                blocks[stack[-1]].else_at = i
            elif op == 0x05:
                raise LiftError("second else in an if")
        elif op == 0x0C or op == 0x0D or op == 0x0E or op in _BR_ON:
            if op == 0x0E:
                depths = sorted(set(imms[0]) | {imms[1]})
            else:
                depths = [imms[1] if op in _BR_ON_CAST else imms[0]]
            if op == 0x0E and depths[-1] < len(stack):
                tables.append((i, stack[-1], {stack[-1 - d] for d in depths}))
            for d in depths:
                if d >= len(stack):
                    raise LiftError(f"branch depth {d} out of range")
                t = stack[-1 - d]
                blocks[t].sites.append((i, op, stack[-1]))
                if not d:
                    continue
                # blocks crossed on the way to a loop: a do-while(0) there would eat continue
                if blocks[t].kind == "loop":
                    acc_loop[-1] += 1
                    acc_loop[-1 - d] -= 1
                elif op != 0x0E and t:
                    # and on the way to a block: a do-while(0) there would eat its break
                    acc_blk[-1] += 1
                    acc_blk[-1 - d] -= 1
    if stack:
        raise LiftError("function body not closed by end")
    switches = _switch_chains(blocks, tables)
    for b in order:  # innermost first
        if blocks[b].claimed < 0:
            _decide(blocks, b, budget)
    # second round: a block only risks the breaks of outer blocks that did become
    # do { } while (0) in the first round
    recount = [0] * len(blocks)
    for t in order:
        bt_ = blocks[t]
        if bt_.form != "dowhile0":
            continue
        # +1 on the tree path from the site's block up to t (exclusive): a difference on
        # the tree, summed over subtrees below
        for _i, op, inner in bt_.sites:
            if op == 0x0E:
                continue
            recount[inner] += 1
            recount[t] -= 1
        budget.spend(len(bt_.sites))
    for b in order:  # children end before their parents
        if b:
            recount[blocks[b].parent] += recount[b]
    for b in order:
        blk = blocks[b]
        if blk.claimed < 0 and blk.kind == "block":
            blk.cross_block = recount[b]
            _decide(blocks, b, budget)
    return blocks, open_at, switches


def _switch_chains(blocks, tables) -> dict[int, list[int]]:
    """``br_table`` as the last instruction of nested plain blocks (LLVM's switch) becomes a
    C ``switch`` whose case labels sit at the block ends: returns {instr index: chain of
    block ids, innermost first}. The chain blocks lose their braces; the outermost one
    closes the switch (form ``switchtail``)."""
    out: dict[int, list[int]] = {}
    for i, inner, targets in tables:
        members: list[int] = []
        cur = inner
        while cur > 0:
            b = blocks[cur]
            if b.kind != "block" or b.bt != "" or b.claimed >= 0:
                break
            if not members and b.end != i + 1:
                break
            members.append(cur)
            cur = b.parent
        last = max((k for k, m in enumerate(members) if m in targets), default=-1)
        if last < 0:
            continue
        members = members[: last + 1]
        # the block right around the chain: the code after the chain up to its end is the
        # last case's body, inside the switch; branches to its end become `break`
        up = blocks[members[-1]].parent
        if up > 0:
            ub = blocks[up]
            if ub.kind == "block" and ub.claimed < 0 and (ub.bt == "" or up not in targets):
                members.append(up)
        for m in members:
            blocks[m].claimed = i
            blocks[m].form = "plain"
        blocks[members[-1]].form = "switchtail"
        out[i] = members
    return out


def _decide(blocks: list[_Blk], b: int, budget: _Budget) -> None:
    blk = blocks[b]
    bt = blk.bt
    simple = bt == ""
    if blk.kind == "loop":
        s = blk.sites
        if simple and len(s) == 1 and s[0][1] == 0x0D and s[0][0] == blk.end - 1 and s[0][2] == b:
            blk.form = "dowhile"
        else:
            blk.form = "loop"
        return
    if blk.kind != "block":
        blk.form = blk.kind
        return
    if not blk.sites:
        blk.form = "plain"
        return
    if (
        simple
        and len(blk.sites) <= 3
        and all(op == 0x0D and inner == b for _i, op, inner in blk.sites)
    ):
        blk.form = "ifconv"
        return
    if blk.cross_loop == 0:
        # do { } while (0) pays when more of its own branches become `break` than branches
        # crossing it to outer blocks could lose theirs
        breaks = 0
        need = blk.cross_block
        left = len(blk.sites)
        for i, op, inner in blk.sites:
            left -= 1
            if op == 0x0E:
                continue  # inside a switch: `break` leaves the switch (or lands right)
            j = inner
            ok = True
            steps = 0
            while j != b:
                steps += 1
                if steps > MAX_BREAK_WALK:  # very deep: assume a goto (structure stays valid)
                    ok = False
                    break
                bj = blocks[j]
                if bj.form in ("loop", "dowhile", "dowhile0") or (
                    bj.form == "switchtail" and i > bj.claimed
                ):
                    ok = False
                    break
                j = bj.parent
            budget.spend(steps)
            breaks += ok
            if breaks > need or breaks + left <= need:
                break  # decided either way
        if breaks and breaks > blk.cross_block:
            blk.form = "dowhile0"
            return
    blk.form = "plain"


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


class _Frame:
    __slots__ = (
        "blk",
        "form",
        "params",
        "results",
        "height",
        "res_vars",
        "par_vars",
        "label",
        "label_used",
        "branched",
        "then_live",
        "opened",
        "cond",
        "live_in",
        "has_else",
        "id",
        "ind",
        "cases",
        "switch_open",
        "heads",
        "tern",
        "conts",
        "last_cont",
        "headed",
    )

    def __init__(self, blk: _Blk, form: str, params: Any, results: Any, height: int):
        self.blk = blk
        self.form = form
        self.params = params
        self.results = results
        self.height = height
        self.res_vars: list[str] = []
        self.par_vars: list[str] = []
        self.label = ""
        self.label_used = False
        self.branched = False
        self.then_live = False  # an if's then-branch reaches its end (code after is live)
        self.opened = 0
        self.cond: Any = None
        self.live_in = True
        self.has_else = False
        self.id = 0
        self.ind = 1
        self.cases: list[str] = []
        self.switch_open = False
        self.heads: list[int] = []  # output index of each open `if (...) {` line
        self.tern: list | None = None  # if-with-result candidate for `c ? a : b`
        self.conts = 0  # `continue;` statements to this loop
        self.last_cont: tuple[int, str] | None = None  # (out index, cond) of `if (c) continue;`
        self.headed = False  # `while (1)` became `while (cond)`


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
        return f"0x{v:x}"
    return str(v)


def _u(e: _E, ty: str) -> str:
    """``e`` read as unsigned: ``123u`` for a constant, else a cast."""
    if isinstance(e.const, int) and not isinstance(e.const, bool):
        if ty == "i32":
            v = e.const & 0xFFFFFFFF
            return f"{v}u" if v < 0x10000 else f"0x{v:x}u"
        v = e.const & 0xFFFFFFFFFFFFFFFF
        return f"{v}ULL" if v < 0x10000 else f"0x{v:x}ULL"
    return f"({'uint32_t' if ty == 'i32' else 'uint64_t'}){_p(e, 2)}"


def _uo(e: _E, ty: str, maxprec: int, other_u: bool) -> str:
    """An operand of an unsigned operation: as is when its C type is already unsigned, a
    non-negative constant as is when the other operand is unsigned (C converts it), else
    :func:`_u`."""
    if e.u:
        return _p(e, maxprec)
    c = e.const
    if other_u and type(c) is int and 0 <= c <= (0x7FFFFFFF if ty == "i32" else 1 << 62):
        return _p(e, maxprec)
    return _u(e, ty)


def _so(e: _E, ty: str, maxprec: int) -> str:
    """An operand of a signed operation (``<``, ``/``, ``>>``): an unsigned value is cast."""
    if e.u:
        return f"({'int32_t' if ty == 'i32' else 'int64_t'}){_p(e, 2)}"
    return _p(e, maxprec)


def _i64_text(v: int) -> str:
    if v == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    if v >= 0x1000000:
        return f"0x{v:x}LL"
    return f"{v}LL"


def _f32_text(v: float, bits: int) -> str:
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


class _Lifter:
    def __init__(self, lm: LiftModule, func_index: int, budget: _Budget, max_chars: int):
        self.lm = lm
        self.m = lm.module
        self.fi = func_index
        self.budget = budget
        self.max_chars = max_chars
        self.out: list[str | None] = []
        self.chars = 0
        self.stack: list[_E] = []
        self.frames: list[_Frame] = []
        self.temps: list[tuple[str, str]] = []  # (c type, name)
        self.decl_types: dict[str, str] = {}  # guard name -> text
        self.decl_globals: dict[int, None] = {}
        self.decl_funcs: dict[int, None] = {}
        self.stats = LiftStats()
        self.dead = False
        self.dead_depth = 0
        self.nlabel = 0
        self.hook = lm.names.field_hook
        self.extra = 0  # indentation of open if-converted blocks
        self.pend: set[int] = set()  # locals with a folded tee possibly on the stack
        self.gget: dict[int, _E] = {}  # one immutable expression per global read
        self.loopish: list[int] = []  # frame indices of open loop / do-while frames
        self.sw_open: list[int] = []  # frame indices whose C switch is open
        self.switches: dict[int, list[int]] = {}  # set by lift_function from _scan
        self.brk_frame = 0  # frame index the last `break;` from :meth:`branch` leaves
        self.ops: list[int] = []  # the body's opcodes and their immediates (set by run)
        self.args: list[tuple] = []
        self.cur = 0
        # shadow-stack frame: base local -> regions (start, end, size); named slots
        self.fregion: dict[int, list[tuple[int, int, int]]] = {}
        self.fstart_at: dict[int, int] = {}  # prologue instruction -> frame base local
        self.fslots: dict[int, tuple[str, int]] = {}  # offset -> (C type, size)
        self.fesc: set[int] = set()  # frame offsets whose address is taken (an array/struct)
        self.fsoft: set[int] = set()  # slots only stored to so far
        self.fextra: dict[str, tuple[int, str, int]] = {}  # other views: name -> (offset, type, size)
        self.fsize = 0
        self.fptr = ""  # the C pointer to the frame struct ("frame")
        self.fstruct = ""  # its struct tag
        self.fwait = ""  # "lN = " while the frame pointer's assignment waits for lN's
        self.fused: list[int] = []  # output lines that assign the frame pointer
        self.lsign: list[int] = []  # per local: 0 int32_t, 1 uint32_t, 2 bool (_local_signs)

    # -- output
    def emit(self, line: str) -> None:
        depth = (self.frames[-1].ind if self.frames else 0) + self.extra
        if depth > MAX_INDENT:
            depth = MAX_INDENT
        elif depth < 0:
            depth = 0
        self.out.append(_INDENT[depth] + line)
        self.chars += len(line) + 2 * depth
        if self.fwait and self.fwait in line:
            # the prologue just set the frame base: point the frame struct at it
            base = self.fwait[:-3]
            self.fwait = ""
            self.fused.append(len(self.out))
            self.out.append(f"{_INDENT[depth]}{self.fptr} = (struct {self.fstruct} *)(M + {base});")
        if self.chars > self.max_chars:
            raise LiftError(f"output larger than {self.max_chars} characters")

    def new_temp(self, ty: str, prefix: str = "t", u: bool = False) -> str:
        name = f"{prefix}{len(self.temps) + 1}"
        ct = self.ctype(ty)
        if u:
            ct = "u" + ct
        self.temps.append((ct, name))
        return name

    def local_e(self, x: int) -> _E:
        """A read of local ``x`` (its C type: int32_t, uint32_t or bool)."""
        name = self.locals_c[x]
        k = self.lsign[x]
        if k == 2:  # bool: !b is its negation
            return _E(name, 0, self.local_types[x], 0, (x,), f"!{name}", None, None, 2)
        return _E(name, 0, self.local_types[x], 0, (x,), u=k == 1)

    def ctype(self, ty: str) -> str:
        return c_type(ty)

    # -- stack
    def pop(self) -> _E:
        f = self.frames[-1]
        if len(self.stack) <= f.height:
            raise LiftError("value stack underflow")
        return self.stack.pop()

    def popn(self, n: int) -> list[_E]:
        if n == 0:
            return []
        f = self.frames[-1]
        if len(self.stack) - n < f.height:
            raise LiftError("value stack underflow")
        vals = self.stack[-n:]
        del self.stack[-n:]
        return vals

    def push(self, e: _E) -> None:
        if len(e.text) > MAX_EXPR_CHARS:
            e = self.spill(e)
        self.stack.append(e)

    def spill(self, e: _E) -> _E:
        if e.tee is not None:  # a folded tee becomes its own statement again
            self.emit(f"{e.text};")
            return self.local_e(e.tee)
        name = self.new_temp(e.ty, "t", e.u)
        self.emit(f"{name} = {e.text};")
        return _E(name, 0, e.ty, u=e.u)

    def spill_where(self, pred) -> None:
        st = self.stack
        for k, e in enumerate(st):
            if e.const is None and (e.fl or e.locs) and pred(e):
                st[k] = self.spill(e)

    def spill_all(self) -> None:
        """Before a block opens: everything that is not a constant or a temporary."""
        st = self.stack
        for k, e in enumerate(st):
            if e.const is None and (e.fl or e.locs):
                st[k] = self.spill(e)

    def spill_for_call(self) -> None:
        """Before control flow: everything with an effect or a pending local assignment."""
        st = self.stack
        for k, e in enumerate(st):
            if e.fl and e.const is None:
                st[k] = self.spill(e)

    def spill_effects(self) -> None:
        """Before a call or another effect: what reads memory/globals or calls."""
        st = self.stack
        for k, e in enumerate(st):
            if e.fl & F_EFFECT and e.const is None:
                st[k] = self.spill(e)

    def spill_pending(self, x: int) -> None:
        """Before a read of local ``x``: the folded tees that assign it."""
        nx = ~x
        self.spill_where(lambda e: e.fl & F_SET and nx in e.locs)
        self.pend.discard(x)

    def set_local(self, x: int, v: _E, tee: bool) -> None:
        """``local.set`` / ``local.tee``: a tee stays an expression ``(lN = v)`` until it
        is consumed (folded into the consumer) or something reads ``lN`` first."""
        if x < 0 or x >= len(self.locals_c):
            raise LiftError(f"local index {x} out of range")
        name = self.locals_c[x]
        nx = ~x
        if v.fl & F_SET and nx in v.locs:
            v = self.spill(v)  # `x = (x = a) + 1` would be unsequenced
        self.spill_for_local(x)
        if v.text == name:
            if tee:
                self.stack.append(self.local_e(x))
            return
        prologue = False
        if self.fstart_at and self.cur in self.fstart_at:
            self.fwait = name + " = "
            j = self.cur + 1
            # `SP = lN = SP - 16;` stays one statement; any other use of the tee does not
            prologue = not (j < len(self.ops) and self.ops[j] == 0x24)
        if self.lsign[x] == 2 and type(v.const) is int:
            v = _E("true" if v.const else "false", 0, v.ty)  # 0/1 into a bool local
        if not tee or prologue or not self.foldable(x):
            self.emit(_assign_stmt(name, v.text))
            if tee:
                self.stack.append(self.local_e(x))
            return
        locs = v.locs + (nx,)
        self.pend.add(x)
        t = _E(f"{name} = {v.text}", 14, self.local_types[x], v.fl | F_SET, locs, tee=x)
        t.u = self.lsign[x] == 1
        self.push(t)

    def spill_for_local(self, idx: int) -> None:
        st = self.stack
        nx = ~idx
        for k, e in enumerate(st):
            if e.locs and (idx in e.locs or nx in e.locs) and e.const is None:
                st[k] = self.spill(e)

    def foldable(self, x: int) -> bool:
        """Whether the ``local.tee x`` at the current instruction may stay an expression:
        a short forward simulation of the stack finds the statement that consumes its
        value before anything reads or writes ``x`` again (else a fold would force a
        temporary later) and before any control flow leaves the value on the stack."""
        ops = self.ops
        args = self.args
        i = self.cur
        last = min(len(ops), i + 48)
        d = 0  # values above the (possibly composed) tee value
        effects = _STACK_EFFECT
        ftypes = self.lm.func_types
        for j in range(i + 1, last):
            op = ops[j]
            if op == 0x20 or op == 0x21 or op == 0x22:
                if args[j][0] == x:
                    return False
                if op == 0x20:
                    d += 1
                    continue
            if op == 0x10:
                callee: int = args[j][0]
                t = ftypes[callee] if callee < len(ftypes) else None
                if t is None:
                    return False
                pops, pushes = len(t.params), len(t.results)
            else:
                eff = effects[op] if op < len(effects) else None
                if eff is None:
                    return False
                pops, pushes = eff
            if pops <= d:
                if pushes < 0:
                    return False  # control flow with the value still on the stack
                d += pushes - pops
                continue
            # this instruction consumes the value
            if op == 0x1B:
                return False
            if pushes == 0 or pushes == -2:
                return True  # a statement (set, store, drop, call, br_if/if condition)
            if pushes != 1:
                return False
            d = 0
        return False

    # -- names
    def fname(self, idx: int) -> str:
        if idx < 0 or idx >= len(self.lm.func_c):
            raise LiftError(f"function index {idx} out of range")
        if idx != self.fi:
            self.decl_funcs[idx] = None
        return self.lm.func_c[idx]

    def gname(self, idx: int) -> str:
        if idx < 0 or idx >= len(self.lm.global_c):
            raise LiftError(f"global index {idx} out of range")
        self.decl_globals[idx] = None
        return self.lm.global_c[idx]

    def functype(self, ti: int):
        if not isinstance(ti, int) or ti < 0 or ti >= len(self.m.types):
            raise LiftError(f"type index {ti} out of range")
        t = self.m.types[ti]
        if t.kind != "func":
            raise LiftError("GC type used as a function type")
        return t

    def ret_type(self, results) -> str:
        if not results:
            return "void"
        if len(results) == 1:
            return self.ctype(results[0])
        name = "R_" + type_code(results)
        if name not in self.decl_types:
            fields = " ".join(f"{self.ctype(t)} v{k};" for k, t in enumerate(results))
            self.decl_types[name] = (
                f"#ifndef KB_{name}\n#define KB_{name}\nstruct {name} {{ {fields} }};\n#endif"
            )
        return f"struct {name}"

    def fn_typedef(self, t) -> str:
        ret = self.ret_type(t.results)
        name = "fn_" + type_code(t.params) + "_" + type_code(t.results)
        key = "T_" + name
        if key not in self.decl_types:
            ps = ", ".join(self.ctype(p) for p in t.params) or "void"
            self.decl_types[key] = (
                f"#ifndef KB_{name}\n#define KB_{name}\ntypedef {ret} (*{name})({ps});\n#endif"
            )
        return name

    # -- block types
    def blocktype(self, bt):
        if bt == "":
            return (), ()
        if isinstance(bt, str):
            return (), (bt,)
        t = self.functype(bt)
        return t.params, t.results

    # -- the walk
    def run(
        self,
        ops: list[int],
        args: list[tuple],
        blocks: list[_Blk],
        open_at: dict[int, int],
        locals_c: list[str],
        local_types: list[str],
        ftype: Any,
    ) -> None:
        fr = _Frame(blocks[0], "func", (), ftype.results, 0)
        self.frames.append(fr)
        self.locals_c = locals_c
        self.local_types = local_types
        self.blocks = blocks
        self.end_of = {b.end: k for k, b in enumerate(blocks) if k}
        self.ops = ops
        self.args = args
        self.open_at = open_at
        n = len(ops)
        budget = self.budget
        ctable = CTABLE
        stack = self.stack
        nloc = len(locals_c)
        pend = self.pend
        lget: list[_E | None] = [
            None
        ] * nloc  # one immutable expression per local, made on first use
        self.lget = lget
        loads = _LOAD_INFO
        frames = self.frames
        kinds = _RUN_KINDS
        dead = False  # mirrors self.dead, which only the handlers below change
        for i in range(n):
            op = ops[i]
            imms = args[i]
            if not i & 0x3FF:
                budget.spend(0x400)
            if not dead:
                # fast paths for the commonest instructions
                k = kinds[op]
                if k == 1:  # local.get
                    x = imms[0]
                    if x >= nloc:
                        raise LiftError(f"local index {x} out of range")
                    if pend and x in pend:
                        self.spill_pending(x)
                    e = lget[x]
                    if e is None:
                        e = lget[x] = self.local_e(x)
                    stack.append(e)
                    continue
                if k == 2:
                    self.table_op(op, ctable[op], imms)
                    continue
                if k == 3:
                    ld = loads[op]
                    if len(stack) <= frames[-1].height:
                        raise LiftError("value stack underflow")
                    base = stack.pop()
                    if self.calls_pending():
                        self.spill_where(_has_call)  # wasm reads after the call; C must too
                    ct, ty, widen = ld
                    self.cur = i
                    text = self.mem_ptr(base, imms[1], ct)
                    prec = 2 if text[0] == "*" or text[0] == "(" else 0
                    if widen:
                        text = f"(int64_t){text}"
                        prec = 2
                    stack.append(_E(text, prec, ty, base.fl | F_MEM, base.locs))
                    continue
                if k == 4:
                    v = imms[0]
                    if 0 <= v < 256:
                        stack.append(_E(str(v), 0, "i32", 0, (), None, v))
                        continue
            else:
                if op in _OPENERS:
                    self.dead_depth += 1
                    continue
                if op in (0x0B, 0x18):
                    if self.dead_depth:
                        self.dead_depth -= 1
                        continue
                elif op in (0x05, 0x07, 0x19):
                    if self.dead_depth:
                        continue
                else:
                    continue
            self.cur = i
            k = kinds[op]
            if k == 5:  # local.set / local.tee
                self.set_local(imms[0], self.pop(), op == 0x22)
            elif k == 8:
                self.do_end(i)
            elif k == 14:
                self.br_if(i, imms[0])
            elif k == 6:  # call
                ft = self.lm.func_types
                t = ft[imms[0]] if imms[0] < len(ft) else None
                if t is None:
                    raise LiftError(f"call to function {imms[0]} out of range or not a func type")
                self.do_call(self.fname(imms[0]), t, False)
            elif k == 7:
                self.open_block(i, op, imms)
            elif k == 15:
                self.mem_op(op, imms)
            elif k == 4:
                self.push(self.i32_const(imms[0]))
            elif k == 10:
                self.do_br(imms[0])
            elif k == 13:
                self.global_get(imms[0])
            elif k == 11:
                self.do_drop()
            elif k == 12:
                self.do_select()
            elif k == 9:
                self.do_else()
            else:
                self.step(i, op, imms)
            dead = self.dead
            if not frames:
                return

    def step(self, i: int, op: int, imms: tuple) -> None:  # noqa: C901 - one dispatch over opcodes
        if op == 0x20:  # local.get
            x = imms[0]
            self.local(x)  # range check
            if x in self.pend:
                self.spill_pending(x)
            self.push(self.local_e(x))
        elif op == 0x21 or op == 0x22:  # local.set / tee
            self.set_local(imms[0], self.pop(), op == 0x22)
        elif op in _MEMOPS:
            self.mem_op(op, imms)
        elif op == 0x41:
            v = imms[0]
            self.push(self.i32_const(v))
        elif op == 0x42:
            v = imms[0]
            self.push(_E(_i64_text(v), 0 if v >= 0 else 2, "i64", const=v))
        elif op == 0x43:
            bits = imms[1]  # the raw bits, kept by _decode (a NaN's payload survives)
            txt = _f32_text(imms[0], bits)
            self.push(_E(txt, 0 if not txt.startswith("-") else 2, "f32", const=imms[0]))
        elif op == 0x44:
            txt = _f64_text(imms[0])
            self.push(_E(txt, 0 if not txt.startswith("-") else 2, "f64", const=imms[0]))
        elif op == 0x23:
            self.global_get(imms[0])
        elif op == 0x24:
            g = imms[0]
            v = self.pop()
            self.spill_where(lambda e: e.fl & (F_GLOB | F_CALL))
            self.emit(f"{self.gname(g)} = {v.text};")
        elif op in _OPENERS:
            self.open_block(i, op, imms)
        elif op == 0x05:
            self.do_else()
        elif op == 0x0B:
            self.do_end(i)
        elif op == 0x0C:
            self.do_br(imms[0])
        elif op == 0x0D:
            self.br_if(i, imms[0])
        elif op == 0x0E:
            self.br_table(i, imms[0], imms[1])
        elif op == 0x0F:
            vals = self.branch_values(len(self.frames) - 1, consume=True)
            self.spill_for_call()
            for line in self.branch(len(self.frames) - 1, vals):
                self.emit(line)
            self.dead = True
        elif op == 0x00:
            self.spill_for_call()
            self.emit("wasm_unreachable();")
            self.dead = True
        elif op == 0x01:
            pass
        elif op == 0x1A:
            self.do_drop()
        elif op == 0x1B or op == 0x1C:
            self.do_select()
        elif op == 0x10 or op == 0x12:
            ft = self.lm.func_types
            t = ft[imms[0]] if imms[0] < len(ft) else None
            if t is None:
                raise LiftError(f"call to function {imms[0]} out of range or not a func type")
            self.do_call(self.fname(imms[0]), t, op == 0x12)
        elif op == 0x11 or op == 0x13:
            t = self.functype(imms[0])
            idx = self.pop()
            td = self.fn_typedef(t)
            self.do_call(None, t, op == 0x13, callee_expr=(td, imms[1], idx))
        elif op == 0x14 or op == 0x15:
            t = self.functype(imms[0])
            ref = self.pop()
            td = self.fn_typedef(t)
            self.do_call(None, t, op == 0x15, callee_ref=(td, ref))
        elif op == 0x3F:
            self.push(_E("memory_size()", 0, "i32", F_MEM))
        elif op == 0x40:
            n = self.pop()
            self.spill_effects()
            self.push(_E(f"memory_grow({n.text})", 0, "i32", F_CALL | n.fl, n.locs))
        elif op == 0xD0:
            self.push(_E("REF_NULL", 0, "funcref", const=0))
        elif op == 0xD1:
            v = self.pop()
            self.push(_E(f"{_p(v, 6)} == REF_NULL", 7, "i32", v.fl, v.locs))
        elif op == 0xD2:
            self.push(_E(f"REF_FUNC({self.fname(imms[0])})", 0, "funcref"))
        elif op == 0xD3:
            b = self.pop()
            a = self.pop()
            fl, locs = _merge(a, b)
            self.push(_E(f"{_p(a, 6)} == {_p(b, 6)}", 7, "i32", fl, locs))
        elif op == 0xD4:
            pass  # ref.as_non_null: traps on null only
        elif op == 0x25:
            i_ = self.pop()
            self.push(_E(f"table_get({imms[0]}, {i_.text})", 0, "funcref", F_GLOB | i_.fl, i_.locs))
        elif op == 0x26:
            v = self.pop()
            i_ = self.pop()
            self.spill_effects()
            self.emit(f"table_set({imms[0]}, {i_.text}, {v.text});")
        elif op == 0x08:  # throw
            tag = self.tag_type(imms[0])
            args = self.popn(len(tag.params))
            self.spill_for_call()
            self.emit(f"wasm_throw({', '.join([str(imms[0])] + [a.text for a in args])});")
            self.dead = True
        elif op == 0x09:
            self.spill_for_call()
            self.emit(f"wasm_rethrow({imms[0]});")
            self.dead = True
        elif op == 0x0A:
            v = self.pop()
            self.spill_for_call()
            self.emit(f"wasm_throw_ref({v.text});")
            self.dead = True
        elif op == 0x07 or op == 0x19:
            self.do_catch(op, imms)
        elif op == 0x18:  # delegate ends a try
            self.do_end(i)
        elif op == PREFIX_BASE[0xFD] + 0x0C:
            ws = struct.unpack("<4I", imms[0])
            self.push(
                _E("v128_const(" + ", ".join(f"0x{w:08x}u" for w in ws) + ")", 0, "v128", const=ws)
            )
        elif op == PREFIX_BASE[0xFD] + 0x0D:
            b_ = self.pop()
            a_ = self.pop()
            ws = struct.unpack("<4I", imms[0])
            lanes = "v128_const(" + ", ".join(f"0x{w:08x}u" for w in ws) + ")"
            fl, locs = _merge(a_, b_)
            self.push(_E(f"i8x16_shuffle({a_.text}, {b_.text}, {lanes})", 0, "v128", fl, locs))
        elif op in _GC_OPS:
            self.gc_op(i, op, imms)
        else:
            ent = CTABLE[op] if op < len(CTABLE) else None
            if ent is None:
                raise LiftError(f"no C rendering for {MNEMONICS[op] or hex(op)}")
            self.table_op(op, ent, imms)

    # -- GC proposal and br_on_*: prelude helper calls with the ops' stack effects
    def gc_type(self, ti, kind: str):
        gc = self.lm.gc
        t = gc[ti] if isinstance(ti, int) and 0 <= ti < len(gc) else None
        if t is None or t[0] != kind:
            raise LiftError(f"type {ti} is not a {kind} type")
        return t[1]

    def gc_call(self, text: str, args: list[_E], ty: str | None, fl: int = F_CALL) -> None:
        """Push ``text`` (a helper call over ``args``) as a value of type ``ty``, or emit it
        as a statement when ``ty`` is None (a heap write: readers of the heap spill first)."""
        afl, locs = _merge(*args) if args else (0, ())
        if ty is None:
            self.spill_where(lambda e: e.fl & (F_MEM | F_CALL))
            self.emit(f"{text};")
            return
        if fl & F_CALL:
            self.spill_effects()
        self.push(_E(text, 0, ty, afl | fl, locs))

    def gc_op(self, i, op, imms) -> None:  # noqa: C901 - one dispatch over the GC ops
        name = MNEMONICS[op]
        if op == 0xD5 or op == 0xD6 or name in ("br_on_cast", "br_on_cast_fail"):
            self.br_on(i, op, name, imms)
            return
        if name in ("struct.new", "struct.new_default"):
            fields = self.gc_type(imms[0], "struct")
            if name == "struct.new_default":
                self.gc_call(f"struct_new_default({imms[0]})", [], "anyref")
                return
            args = self.popn(len(fields))
            texts = ", ".join([str(imms[0])] + [a.text for a in args])
            self.gc_call(f"struct_new({texts})", args, "anyref")
        elif name.startswith("struct.get"):
            fields = self.gc_type(imms[0], "struct")
            if imms[1] >= len(fields):
                raise LiftError(f"field {imms[1]} out of range")
            ref = self.pop()
            ft = fields[imms[1]]
            h = "struct_" + (name[-5:] if name != "struct.get" else "get_" + _gc_suffix(ft))
            self.gc_call(f"{h}({ref.text}, {imms[0]}, {imms[1]})", [ref], _gc_value(ft), F_MEM)
        elif name == "struct.set":
            fields = self.gc_type(imms[0], "struct")
            if imms[1] >= len(fields):
                raise LiftError(f"field {imms[1]} out of range")
            v = self.pop()
            ref = self.pop()
            h = "struct_set_" + _gc_suffix(fields[imms[1]])
            self.gc_call(f"{h}({ref.text}, {imms[0]}, {imms[1]}, {v.text})", [ref, v], None)
        elif name.startswith("array."):
            self.array_op(name, imms)
        elif name in ("ref.test", "ref.cast"):
            ref = self.pop()
            null = int(op in (PREFIX_BASE[0xFB] + 0x15, PREFIX_BASE[0xFB] + 0x17))
            ht = _heaptype_c(imms[0])
            if name == "ref.test":
                self.gc_call(f"ref_test({ref.text}, {ht}, {null})", [ref], "i32", 0)
            else:  # traps on failure: keep its place among effects
                self.gc_call(f"ref_cast({ref.text}, {ht}, {null})", [ref], "anyref")
        elif name in ("any.convert_extern", "extern.convert_any", "i31.get_s", "i31.get_u"):
            ref = self.pop()
            ty = "i32" if name.startswith("i31") else "anyref"
            h = name.replace(".", "_")
            self.gc_call(f"{h}({ref.text})", [ref], ty, F_CALL if ty == "i32" else 0)
        elif name == "ref.i31":
            v = self.pop()
            self.gc_call(f"ref_i31({v.text})", [v], "anyref", 0)
        else:
            raise LiftError(f"no C rendering for {name}")

    def array_op(self, name: str, imms) -> None:
        if name == "array.len":
            ref = self.pop()
            self.gc_call(f"array_len({ref.text})", [ref], "i32", F_MEM)
            return
        t = imms[0]
        et = self.gc_type(t, "array")
        sfx = _gc_suffix(et)
        if name == "array.new":
            n = self.pop()
            v = self.pop()
            self.gc_call(f"array_new_{sfx}({t}, {v.text}, {n.text})", [v, n], "anyref")
        elif name == "array.new_default":
            n = self.pop()
            self.gc_call(f"array_new_default({t}, {n.text})", [n], "anyref")
        elif name == "array.new_fixed":
            if imms[1] > 10_000:
                raise LiftError(f"array.new_fixed with {imms[1]} values")
            vals = self.popn(imms[1])
            texts = ", ".join([str(t), str(imms[1])] + [v.text for v in vals])
            self.gc_call(f"array_new_fixed({texts})", vals, "anyref")
        elif name in ("array.new_data", "array.new_elem"):
            n = self.pop()
            off = self.pop()
            h = name.replace(".", "_")
            self.gc_call(f"{h}({t}, {imms[1]}, {off.text}, {n.text})", [off, n], "anyref")
        elif name.startswith("array.get"):
            i_ = self.pop()
            ref = self.pop()
            h = "array_" + (name[-5:] if name != "array.get" else "get_" + sfx)
            self.gc_call(f"{h}({ref.text}, {t}, {i_.text})", [ref, i_], _gc_value(et), F_MEM)
        elif name == "array.set":
            v = self.pop()
            i_ = self.pop()
            ref = self.pop()
            self.gc_call(
                f"array_set_{sfx}({ref.text}, {t}, {i_.text}, {v.text})", [ref, i_, v], None
            )
        elif name == "array.fill":
            n = self.pop()
            v = self.pop()
            off = self.pop()
            ref = self.pop()
            args = [ref, off, v, n]
            self.gc_call(
                f"array_fill_{sfx}({ref.text}, {t}, {off.text}, {v.text}, {n.text})", args, None
            )
        elif name == "array.copy":
            self.gc_type(imms[1], "array")
            n, soff, src, doff, dst = (self.pop() for _ in range(5))
            args = [dst, doff, src, soff, n]
            texts = ", ".join([str(t), str(imms[1])] + [a.text for a in args])
            self.gc_call(f"array_copy({texts})", args, None)
        elif name in ("array.init_data", "array.init_elem"):
            n, soff, doff, ref = (self.pop() for _ in range(4))
            args = [ref, doff, soff, n]
            texts = ", ".join([str(t), str(imms[1])] + [a.text for a in args])
            self.gc_call(f"{name.replace('.', '_')}({texts})", args, None)
        else:
            raise LiftError(f"no C rendering for {name}")

    def br_on(self, i, op, name, imms) -> None:
        """``br_on_null`` / ``br_on_non_null`` / ``br_on_cast[_fail]``: a conditional break
        on a test of the reference on top of the stack (kept in a named value)."""
        label = imms[0] if op in (0xD5, 0xD6) else imms[1]
        ref = self.pop()
        if ref.prec or ref.fl or ref.const is not None:
            ref = self.spill(ref)
        r = ref.text
        if op == 0xD5:  # branch on null without the ref; else the ref stays
            self.br_if(
                i, label, _E(f"{r} == REF_NULL", 7, "i32", 0, ref.locs, neg=f"{r} != REF_NULL")
            )
            self.stack.append(ref)
            return
        if op == 0xD6:  # branch with the ref when not null; else it is dropped
            self.stack.append(ref)
            cond = _E(f"{r} != REF_NULL", 7, "i32", 0, ref.locs, neg=f"{r} == REF_NULL")
            self.br_if(i, label, cond, keep=1)
            self.pop()
            return
        flags = imms[0]
        test = f"ref_test({r}, {_heaptype_c(imms[3])}, {int(bool(flags & 2))})"
        self.stack.append(ref)
        if name == "br_on_cast":
            cond = _E(test, 0, "i32", 0, ref.locs, neg=f"!{test}")
        else:
            cond = _E(f"!{test}", 2, "i32", 0, ref.locs, neg=test)
        self.br_if(i, label, cond, keep=1)

    def do_drop(self) -> None:
        v = self.pop()
        if v.fl & (F_CALL | F_SET):
            self.emit(f"{v.text};")

    def do_select(self) -> None:
        c = self.pop()
        b = self.pop()
        a = self.pop()
        if (a.fl | b.fl) & (F_CALL | F_SET):  # C evaluates one arm only
            if a.fl & (F_CALL | F_SET):
                a = self.spill(a)
            if b.fl & (F_CALL | F_SET):
                b = self.spill(b)
        fl, locs = _merge(a, b, c)
        self.push(_E(f"{_p(c, 12)} ? {_p(a, 12)} : {_p(b, 13)}", 13, a.ty, fl, locs, u=a.u or b.u))

    def do_br(self, depth: int) -> None:
        vals = self.branch_values(depth, consume=True)
        self.spill_for_call()
        for line in self.branch(depth, vals):
            self.emit(line)
        self.dead = True

    def calls_pending(self) -> bool:
        """Whether a value on the stack calls something: a memory or global read after it
        must not share an expression with it (C leaves the order of operands and
        arguments unspecified: ``f(g(p), *(M + x))`` may read before calling g)."""
        for e in self.stack:
            if e.fl & F_CALL:
                return True
        return False

    def global_get(self, g: int) -> None:
        if self.calls_pending():
            self.spill_where(_has_call)
        e = self.gget.get(g)
        if e is None:
            e = self.gget[g] = _E(self.gname(g), 0, self.global_type(g), F_GLOB)
        self.stack.append(e)

    def switch_chain(self, idx: _E, labels, default: int, n: int) -> None:
        """``switch`` whose case labels go to the ends of the ``n`` innermost frames."""
        groups: dict[int, list[int]] = {}
        for k, d in enumerate(labels):
            groups.setdefault(d, []).append(k)
        self.emit(f"switch ({idx.text}) {{")
        self.extra += 2
        for d in sorted(set(groups) | {default}):
            heads = self.case_heads(groups.get(d, []), d == default)
            if d < n:
                self.frames[-1 - d].cases.extend(heads)
                continue
            lines = self.branch(d, [], in_switch=True)
            self.extra -= 1
            for h in heads[:-1]:
                self.emit(h)
            self.emit(f"{heads[-1]} " + " ".join(lines))
            self.extra += 1
        self.frames[-n].switch_open = True
        self.sw_open.append(len(self.frames) - n)
        self.dead = True

    # -- helpers for step
    def local(self, x: int) -> str:
        if x < 0 or x >= len(self.locals_c):
            raise LiftError(f"local index {x} out of range")
        return self.locals_c[x]

    def global_type(self, g: int) -> str:
        if g < 0 or g >= len(self.m.globals):
            raise LiftError(f"global index {g} out of range")
        return self.m.globals[g].valtype

    def tag_type(self, t: int):
        if t < 0 or t >= len(self.m.tags):
            raise LiftError(f"tag index {t} out of range")
        return self.functype(self.m.tags[t].type_index)

    def data_ref(self, addr: int) -> str | None:
        """The label text of a constant data address (``s_usage``, ``tbl_1230 + 8``), its
        ``enum`` declared before the function so the C compiles; None if unlabelled."""
        d = self.lm.data_label(addr)
        if d is None:
            return None
        ident, start, off, _text = d
        guard = "D_" + ident
        if guard not in self.decl_types:
            self.decl_types[guard] = (
                f"#ifndef KB_{guard}\n#define KB_{guard}\nenum {{ {ident} = {start} }};\n#endif"
            )
        return f"{ident} + {off}" if off else ident

    def i32_const(self, v: int) -> _E:
        if self.lm.data_starts and v >= 256:
            d = self.lm.data_label(v)
            if d is not None and d[2] == 0:  # the start of a labelled item
                text = self.data_ref(v) or ""
                if d[3]:
                    text += f' /* "{escape_text(d[3], 60)}" */'
                return _E(text, 0, "i32", const=v)
        cache = self.lm.const_text
        cached: str | None = cache.get(v)
        if cached is not None:
            text = cached
        else:
            text = _i32_text(v)
            if v >= 256:
                s = self.lm.string_at(v & 0xFFFFFFFF)
                if s:
                    text = f'{text} /* "{escape_text(s, 60)}" */'
            if len(cache) < 1_000_000:
                cache[v] = text
        return _E(text, 0 if v >= 0 else 2, "i32", const=v)

    def addr(self, base: _E, offset: int) -> str:
        if base.const is not None and isinstance(base.const, int):
            a = (base.const & 0xFFFFFFFF) + offset
            if self.lm.data_starts:
                label = self.data_ref(a)
                if label is not None:
                    return label
            return _i32_text(a) if offset else base.text
        if offset:
            return f"{_p(base, 4)} + {offset}"
        return base.text

    def frame_slot(self, base: _E, offset: int, ct: str, store: bool) -> str:
        """``frame->local_0c`` when ``base`` is a frame base local inside its region and
        the access fits one slot of the frame struct (the first access of an offset decides
        its type; a same-size integer access of the other signedness reads through a cast;
        an access overlapping another slot stays raw memory); else ""."""
        x = base.locs[0]
        regs = self.fregion.get(x)
        if regs is None or x < 0 or base.text != self.locals_c[x]:
            return ""
        i = self.cur
        n = -1
        for s, e, sz in regs:
            if s <= i < e:
                n = sz
                break
        if n < 0:
            return ""
        self.stats.frame_slots += 1
        size = _CT_SIZE[ct]
        if offset + size > n:
            return ""
        slot = self.fslots.get(offset)
        name = f"local_{offset:02x}"
        if slot is None:
            if len(self.fslots) + len(self.fextra) >= 512:
                return ""
            slot = self.fslots[offset] = (ct, size)
            if store:
                self.fsoft.add(offset)
        elif offset in self.fsoft and not store and slot[1] == size and slot[0] != ct and (
            ct not in _FLOAT_CT and slot[0] not in _FLOAT_CT
        ):
            # only stores saw the slot so far (their text has no type): the first load's
            # signedness types it, so the reads need no cast
            slot = self.fslots[offset] = (ct, size)
            self.fsoft.discard(offset)
        elif slot[1] != size or (slot[0] != ct and (ct in _FLOAT_CT or slot[0] in _FLOAT_CT)):
            # another view of the same bytes: a member of the union the slot becomes
            name = f"{name}_{_CT_TAG[ct]}"
            ex = self.fextra.get(name)
            if ex is None:
                if len(self.fslots) + len(self.fextra) >= 512:
                    return ""
                ex = self.fextra[name] = (offset, ct, size)
            slot = (ex[1], ex[2])
        if not store and offset in self.fsoft and slot[0] == ct:
            self.fsoft.discard(offset)
        self.stats.frame_named += 1
        text = f"{self.fptr}->{name}"
        if slot[0] != ct and not store:
            return f"({ct}){text}"
        return text

    def frame_addr(self, base: _E, offset: int) -> str:
        """The slot name for the address ``base + offset`` when ``base`` is a frame base
        local inside its region (the address of a frame array or struct), else ""."""
        x = base.locs[0]
        regs = self.fregion.get(x)
        if regs is None or x < 0 or base.text != self.locals_c[x]:
            return ""
        i = self.cur
        for s, e, sz in regs:
            if s <= i < e:
                if 0 <= offset < sz and len(self.fesc) < 512:
                    self.fesc.add(offset)
                    return f"local_{offset:02x}"
                return ""
        return ""

    def mem_ptr(self, base: _E, offset: int, ct: str, store: bool = False) -> str:
        if self.fregion and base.prec == 0 and base.const is None and len(base.locs) == 1:
            fs = self.frame_slot(base, offset, ct, store)
            if fs:
                return fs
        if self.hook is not None and base.prec == 0 and base.const is None and base.locs:
            r = self.hook(self.fi, base.text, offset, ct)
            if isinstance(r, tuple):  # (expression, guard, declaration): a typed struct field
                text, guard, decl = r
                if guard not in self.decl_types:
                    self.decl_types[guard] = decl
                return text
            if r:
                return c_ident_path(r)
        if base.const is not None and isinstance(base.const, int):
            if self.lm.data_starts:  # a labelled static variable: M + its label
                a = self.addr(base, offset)
            else:
                a = _i32_text((base.const & 0xFFFFFFFF) + offset)
            return f"*({ct} *)(M + {a})"
        # an unsigned sum is computed whole, wrapping like wasm: `M + l6 + l7` would add a
        # "negative" uint32_t l6 to the pointer as a huge offset
        b = f"({base.text})" if base.u and base.prec > 0 else _p(base, 4)
        if offset >= 1024 and self.lm.data_starts:
            # an array in static data indexed by a computed value: `upper_to_lower + l3`
            d = self.lm.data_label(offset)
            if d is not None and d[2] == 0:
                label = self.data_ref(offset) or str(offset)
                return f"*({ct} *)(M + {b} + {label})"
        if offset:
            return f"*({ct} *)(M + {b} + {offset})"
        return f"*({ct} *)(M + {b})"

    def mem_op(self, op: int, imms: tuple) -> None:
        name = MNEMONICS[op]
        offset = imms[1]
        if name in _LOAD_CT:
            ct = _LOAD_CT[name]
            base = self.pop()
            if self.calls_pending():
                self.spill_where(_has_call)
            ty = name[:3]
            text = self.mem_ptr(base, offset, ct)
            prec = 2 if text[0] == "*" or text[0] == "(" else 0
            if ty == "i64" and ct != "int64_t":
                text = f"(int64_t){text}"
                prec = 2
            self.push(_E(text, prec, ty, base.fl | F_MEM, base.locs))
        else:
            ct = _STORE_CT[name]
            v = self.pop()
            base = self.pop()
            self.spill_where(lambda e: e.fl & (F_MEM | F_CALL))
            self.emit(f"{self.mem_ptr(base, offset, ct, True)} = {v.text};")

    def do_call(self, name, t, is_tail, callee_expr=None, callee_ref=None):
        args = self.popn(len(t.params))
        self.spill_for_call() if is_tail else self.spill_effects()
        if callee_expr is not None:
            td, table, idx = callee_expr
            fn = f"(({td})wasm_table_func({table}, {idx.text}))"
            args_fl, locs = _merge(idx, *args)
        elif callee_ref is not None:
            td, ref = callee_ref
            fn = f"(({td}){_p(ref, 2)})"
            args_fl, locs = _merge(ref, *args)
        else:
            self.ret_type(t.results)
            fn = name
            args_fl, locs = _merge(*args) if args else (0, ())
        call = f"{fn}({', '.join(a.text for a in args)})"
        if is_tail:
            ft = self.frames[0].results
            if len(ft) == 0:
                self.emit(f"{call};")
                self.emit("return;")
            else:
                self.emit(f"return {call};")
            self.dead = True
            return
        res = t.results
        if not res:
            self.emit(f"{call};")
        elif len(res) == 1:
            self.push(_E(call, 0, res[0], F_CALL | args_fl, locs))
        else:
            st = self.ret_type(res)
            tmp = f"t{len(self.temps) + 1}"
            self.temps.append((st, tmp))
            self.emit(f"{tmp} = {call};")
            for k, r in enumerate(res):
                self.stack.append(_E(f"{tmp}.v{k}", 0, r))

    def table_op(self, op: int, ent: tuple[str, tuple, tuple, str], imms: tuple) -> None:
        form, params, results, text = ent
        if form in _BINARY_FORMS:
            stack = self.stack
            if len(stack) - 2 < self.frames[-1].height:
                raise LiftError("value stack underflow")
            b = stack.pop()
            a = stack.pop()
            if a.locs:
                locs = b.locs and (a.locs if a.locs == b.locs else tuple(set(a.locs) | set(b.locs)))
                locs = locs or a.locs
            else:
                locs = b.locs
            e = self.binary(form, text, a, b, params[0], results[0], a.fl | b.fl, locs)
            if len(e.text) > MAX_EXPR_CHARS:
                e = self.spill(e)
            stack.append(e)
            return
        if form in ("neg", "eqz", "cast"):
            a = self.pop()
            if form == "neg":
                t = f"-{_p(a, 0)}" if not a.text.startswith("-") else f"-({a.text})"
                self.push(_E(t, 2, results[0], a.fl, a.locs))
            elif form == "eqz":
                if a.negp >= 0 and a.neg is not None:  # !(a < b) is a >= b
                    self.push(_E(a.neg, a.negp, "i32", a.fl, a.locs, a.text, None, None, a.prec))
                    return
                p = _p(a, 6)
                neg = a.text if a.prec <= 13 else f"({a.text})"
                self.push(_E(f"{p} == 0", 7, "i32", a.fl, a.locs, neg=neg))
            else:
                if a.u:  # an unsigned operand: (int64_t)(uint32_t)x is (int64_t)x
                    if text.endswith(("(uint32_t)", "(uint64_t)")):
                        text = text[:-10]
                    elif text in ("(int64_t)", "(float)", "(double)"):  # read as signed
                        text += "(int32_t)" if params[0] == "i32" else "(int64_t)"
                self.push(_E(f"{text}{_p(a, 2)}", 2, results[0], a.fl, a.locs))
            return
        # helper calls
        n_imm = imm_args(op)
        args = self.popn(len(params))
        lead = [str(x) for x in imms[:n_imm]] if n_imm else []
        fl, locs = _merge(*args) if args else (0, ())
        texts = [a.text for a in args]
        if form in ("mem", "voidmem"):
            offset = imms[1]
            if offset:
                texts[0] = self.addr(args[0], offset)
            fl |= F_MEM
        if lane_arg(op):
            texts.append(str(imms[-1]))
        call = f"{text}({', '.join(lead + texts)})"
        effect = (
            form in ("void", "voidmem")
            or MNEMONICS[op].startswith(("memory.", "table.", "data.", "elem."))
            or ".atomic." in MNEMONICS[op]
            or MNEMONICS[op] == "atomic.fence"
            or MNEMONICS[op].startswith("memory.atomic")
        )
        if effect:
            self.spill_effects()
            fl |= F_CALL
        if not results:
            self.emit(f"{call};")
        elif len(results) == 1:
            self.push(_E(call, 0, results[0], fl, locs))
        else:
            st = self.ret_type(results)
            tmp = f"t{len(self.temps) + 1}"
            self.temps.append((st, tmp))
            self.emit(f"{tmp} = {call};")
            for k, r in enumerate(results):
                self.stack.append(_E(f"{tmp}.v{k}", 0, r))

    def binary(
        self, form: str, op: str, a: _E, b: _E, ty: str, rty: str, fl: int, locs: tuple
    ) -> _E:
        P = PREC[op]
        isint = ty == "i32" or ty == "i64"
        if form == "bin":
            if isint and (op == "/" or op == "%"):  # div_s / rem_s
                return _E(f"{_so(a, ty, P)} {op} {_so(b, ty, P - 1)}", P, rty, fl, locs)
            u = isint and (a.u or b.u)  # C's usual conversions: the same bits, unsigned
            if (
                op == "+"
                and self.fregion
                and b.const is not None
                and type(b.const) is int
                and a.prec == 0
                and len(a.locs) == 1
                and a.const is None
            ):
                nm = self.frame_addr(a, b.const)
                if nm:  # the address of a frame array/struct: say which
                    return _E(f"{a.text} + {b.text} /* &{nm} */", 4, rty, fl, locs, u=u)
            if (
                (op == "+" or op == "-")
                and b.const is not None
                and isinstance(b.const, int)
                and b.const < 0
                and b.const not in (-(1 << 31), -(1 << 63))
                and isint
            ):
                # x + -8 is x - 8, x - -64 is x + 64
                c = _i32_text(-b.const) if ty == "i32" else _i64_text(-b.const)
                return _E(f"{_p(a, 4)} {'-' if op == '+' else '+'} {c}", 4, rty, fl, locs, u=u)
            if op == "-" and a.const == 0 and isint and type(a.const) is int:
                t = f"-{_p(b, 2)}" if not b.text.startswith("-") else f"-({b.text})"
                return _E(t, 2, rty, fl, locs, u=u)
            if P >= 8:  # bitwise: parenthesise arithmetic operands for the reader
                la = a.text if a.prec <= 2 or a.prec == P else f"({a.text})"
                return _E(f"{la} {op} {_p(b, 2)}", P, rty, fl, locs, u=u)
            return _E(f"{_p(a, P)} {op} {_p(b, P - 1)}", P, rty, fl, locs, u=u)
        if form == "binu":
            # unsigned operands give an unsigned result: no cast back to signed
            ta, tb = _uo(a, ty, P, b.u), _uo(b, ty, P - 1, a.u)
            return _E(f"{ta} {op} {tb}", P, rty, fl, locs, u=True)
        if form in ("cmp", "cmpu"):
            if form == "cmpu":
                ta, tb = _uo(a, ty, P, b.u), _uo(b, ty, P - 1, a.u)
            elif isint and op != "==" and op != "!=":
                ta, tb = _so(a, ty, P), _so(b, ty, P - 1)
            else:
                ta, tb = _p(a, P), _p(b, P - 1)
            if (
                (op == "==" or op == "!=")
                and b.const == 0
                and type(b.const) is int
                and a.negp >= 0
                and a.neg is not None
            ):
                # (a < b) == 0 is a >= b; (a < b) != 0 is a < b
                if op == "==":
                    return _E(a.neg, a.negp, "i32", fl, locs, a.text, None, None, a.prec)
                return _E(a.text, a.prec, "i32", fl, locs, a.neg, None, None, a.negp)
            neg = None
            negp = -1
            if isint:
                neg = f"{ta} {_NEG_CMP[op]} {tb}"
                negp = P
            return _E(f"{ta} {op} {tb}", P, "i32", fl, locs, neg, None, None, negp)
        bits = 31 if ty == "i32" else 63
        if b.const is not None and isinstance(b.const, int):
            cnt = str(b.const & bits)
        elif b.prec == 8 and _MASKED.search(b.text) and int(b.text.rsplit(" ", 1)[1]) <= bits:
            cnt = f"({b.text})"  # already masked: (n & 31) needs no second & 31
        else:
            cnt = f"({_p(b, 8)} & {bits})"
        if form == "shru":
            return _E(f"{_uo(a, ty, 2, False)} >> {cnt}", 5, rty, fl, locs, u=True)
        if form == "shr":
            return _E(f"{_so(a, ty, 2)} >> {cnt}", 5, rty, fl, locs)
        return _E(f"{_p(a, 2)} {op} {cnt}", 5, rty, fl, locs, u=a.u)

    # -- control flow
    def open_block(self, i: int, op: int, imms: tuple) -> None:
        b = self.open_at[i]
        blk = self.blocks[b]
        params, results = self.blocktype(imms[0])
        cond = self.pop() if op == 0x04 else None
        pvals = self.popn(len(params))
        self.spill_all()
        if cond is not None and cond.fl & F_CALL:
            pass  # evaluated in the if head, after the spills: order preserved
        fr = _Frame(blk, blk.form, params, results, len(self.stack))
        self.nlabel += 1
        fr.id = self.nlabel
        fr.res_vars = [self.new_temp(t, "r") for t in results]
        if params:
            fr.par_vars = []
            for v, t in zip(pvals, params, strict=True):
                name = self.new_temp(t, "t")
                self.emit(f"{name} = {v.text};")
                fr.par_vars.append(name)
        form = blk.form
        if form == "loop":
            self.out.append(None)  # placeholder for the loop-head label (before the loop)
            fr.cond = len(self.out) - 1
            self.emit("while (1) {")
        elif form == "dowhile" or form == "dowhile0":
            self.emit("do {")
        elif form == "if":
            assert cond is not None
            self.emit(f"if ({self.cond_text(cond)}) {{")
            fr_heads = [len(self.out)]
        elif form == "try":
            self.emit("if (wasm_try()) {")
        elif form == "try_table":
            clauses = ", ".join(
                f"{('catch', 'catch_ref', 'catch_all', 'catch_all_ref')[ck]}"
                f"{'' if tag is None else ' ' + str(tag)} -> {lab}"
                for ck, tag, lab in imms[1]
            )
            self.emit(f"/* try_table: {comment_text(clauses)} */")
        if form == "if":
            fr.heads = fr_heads
            if len(results) == 1 and not params:
                fr.tern = [cond, None]
        fr.ind = self.frames[-1].ind + (
            0 if form in ("plain", "try_table", "ifconv", "switchtail") else 1
        )
        self.frames.append(fr)
        if form == "loop" or form == "dowhile" or form == "dowhile0":
            self.loopish.append(len(self.frames) - 1)
        if form == "loop":
            fr.label = f"L{fr.id}"
        for k, pv in enumerate(fr.par_vars):
            self.stack.append(_E(pv, 0, params[k]))
        d = len(self.frames)
        if d > self.stats.max_depth:
            self.stats.max_depth = d

    def cond_text(self, c: _E, negate: bool = False) -> str:
        if not negate:
            return c.text if c.prec < 14 else f"({c.text})"
        if c.neg is not None:
            return c.neg
        return f"!{_p(c, 0)}" if c.prec == 0 else f"!({c.text})"

    def fallthrough_assign(self, fr: _Frame) -> None:
        vals = self.popn(len(fr.results))
        self.assign(fr.res_vars, vals)

    def assign(self, vars_, vals) -> list[str]:
        lines = []
        if len(vars_) > 1:
            tmps = []
            for v in vals:
                t = self.new_temp(v.ty)
                lines.append(f"{t} = {v.text};")
                tmps.append(t)
            for var, t in zip(vars_, tmps, strict=True):
                lines.append(f"{var} = {t};")
        else:
            for var, v in zip(vars_, vals, strict=True):
                if var != v.text:
                    lines.append(f"{var} = {v.text};")
        for line in lines:
            self.emit(line)
        return lines

    def do_else(self):
        fr = self.frames[-1]
        if fr.tern is not None:
            ok = not self.dead and len(self.stack) == fr.height + 1
            fr.tern[1] = self.stack[-1] if ok else None
        if not self.dead:
            self.fallthrough_assign(fr)
            fr.then_live = True
        if fr.tern is not None and (fr.tern[1] is None or len(self.out) != fr.heads[0] + 1):
            fr.tern = None
        del self.stack[fr.height :]
        self.dead = False
        fr.has_else = True
        self.frames.pop()
        self.emit("} else {")
        self.frames.append(fr)
        for k, v in enumerate(fr.par_vars):
            self.stack.append(_E(v, 0, fr.params[k]))

    def do_catch(self, op, imms):
        fr = self.frames[-1]
        if not self.dead:
            self.fallthrough_assign(fr)
        del self.stack[fr.height :]
        self.dead = False
        self.frames.pop()
        if op == 0x07:
            self.emit(f"}} else if (wasm_catch({imms[0]})) {{")
            self.frames.append(fr)
            tag = self.tag_type(imms[0])
            for k, p in enumerate(tag.params):
                fn = {
                    "i32": "wasm_exn_i32",
                    "i64": "wasm_exn_i64",
                    "f32": "wasm_exn_f32",
                    "f64": "wasm_exn_f64",
                    "v128": "wasm_exn_v128",
                }.get(p, "wasm_exn_ref")
                self.stack.append(_E(f"{fn}({k})", 0, p, F_CALL))
        else:
            self.emit("} else {")
            self.frames.append(fr)
        fr.has_else = True

    def do_end(self, i: int) -> None:
        fr = self.frames[-1]
        reach = not self.dead
        if fr.form == "func":
            if reach and fr.results:
                vals = self.branch_values(0, consume=True)
                for line in self.branch(0, vals):
                    self.emit(line)
            self.frames.pop()
            return
        if (
            fr.tern is not None
            and reach
            and fr.has_else
            and not fr.branched
            and len(self.stack) == fr.height + 1
            and len(self.out) == fr.heads[0] + 2
        ):
            # `if (c) { r = a; } else { r = b; }` is the expression `c ? a : b`
            c, a = fr.tern
            b = self.stack.pop()
            del self.out[fr.heads[0] - 1 :]
            rname = fr.res_vars[0]
            self.temps = [x for x in self.temps if x[1] != rname]
            self.frames.pop()
            fl, locs = _merge(c, a, b)
            u = a.u or b.u
            self.push(_E(f"{_p(c, 12)} ? {_p(a, 12)} : {_p(b, 13)}", 13, fr.results[0], fl, locs, u=u))
            return
        if reach:
            self.fallthrough_assign(fr)
        if len(self.stack) > fr.height:
            del self.stack[fr.height :]
        form = fr.form
        after_reachable = reach or fr.branched or fr.then_live
        if form == "if" and not fr.has_else:
            if tuple(fr.params) != tuple(fr.results):
                # the implicit else passes the params on as the results
                raise LiftError("if without else whose results differ from its params")
            if fr.results and fr.par_vars:
                fr.has_else = True
                self.frames.pop()
                self.emit("} else {")
                self.frames.append(fr)
                self.assign(
                    fr.res_vars, [_E(v, 0, t) for v, t in zip(fr.par_vars, fr.params, strict=True)]
                )
            after_reachable = True
        self.frames.pop()
        if self.loopish and self.loopish[-1] == len(self.frames):
            self.loopish.pop()
        if form == "loop":
            out = self.out
            lc = fr.last_cont
            head = fr.cond + 1
            hl = out[head]
            if (
                reach
                and fr.conts == 1
                and not fr.headed
                and lc is not None
                and lc[0] == len(out) - 1
                and hl is not None
                and hl.endswith("while (1) {")
                # the `if (c) continue;` is a statement of the loop body itself (not nested
                # in an if whose condition and brace the rewrite would drop)
                and out[-1] is not None
                and out[-1].strip() == f"if ({lc[1]}) continue;"
                and len(out[-1]) - len(out[-1].lstrip()) == len(hl) - len(hl.lstrip()) + 2
            ):
                # `while (1) { ...; if (c) continue; break; }` is `do { ... } while (c);`
                out[head] = hl[: -len("while (1) {")] + "do {"
                out.pop()
                self.emit(f"}} while ({lc[1]});")
            elif reach and not fr.headed and self.guarded_loop(fr, head):
                self.emit("}")
            else:
                if reach:
                    self.emit("  break;")
                elif out and out[-1] is not None and out[-1].strip() == "continue;":
                    out.pop()  # the end of a while (1) body loops anyway
                    hl = out[head]
                    if fr.headed and fr.conts == 1 and hl is not None and hl.endswith(") {"):
                        pre = hl[: len(hl) - len(hl.lstrip())]
                        cond = hl.strip()[len("while (") : -len(") {")]
                        self.for_loop(fr, head, pre, cond, len(pre) + 2)
                self.emit("}")
            if fr.label_used:
                self.out[fr.cond] = "  " * min(fr.ind - 1, MAX_INDENT) + f"{fr.label}:;"
                self.stats.labels += 1
        elif form == "dowhile":
            c = self.cond_text(fr.cond) if isinstance(fr.cond, _E) else "0"
            self.emit(f"}} while ({c});")
            after_reachable = reach or fr.cond is not None
        elif form == "dowhile0":
            self.emit("} while (0);")
        elif form == "ifconv":
            for _ in range(fr.opened):
                self.extra -= 1
                self.close_if(fr.heads.pop())
                after_reachable = True
        elif form == "if" and not fr.has_else:
            self.close_if(fr.heads[0])
        elif form in ("if", "try"):
            self.emit("}")
            if form == "try":
                after_reachable = True
        if fr.cases:
            after_reachable = True
            self.extra -= 1
            if form == "switchtail":
                fr.cases[-1] += " break;"
            for h in fr.cases:
                self.emit(h)
            self.extra += 1
        if form == "switchtail" and fr.switch_open:
            fr.switch_open = False
            self.sw_open.remove(len(self.frames))
            self.extra -= 2
            self.emit("}")
        if fr.label_used and form != "loop":
            self.emit(f"{fr.label}:;")
            self.stats.labels += 1
        if form == "loop" and fr.label_used:
            pass
        for v, t in zip(fr.res_vars, fr.results, strict=True):
            self.stack.append(_E(v, 0, t))
        self.dead = not after_reachable

    def guarded_loop(self, fr: _Frame, head: int) -> bool:
        """``while (1) { if (c) { body continue; } break; }`` (a loop whose whole body is
        an ``if`` that loops back) becomes ``while (c) { body }``, and a counted one
        ``for (i = a; c; i = i + k) { body }``; True when rewritten."""
        out = self.out
        n = len(out)
        hl = out[head]
        first = out[head + 1] if head + 1 < n else None
        if hl is None or first is None or n < head + 4 or not hl.endswith("while (1) {"):
            return False
        ind = len(first) - len(first.lstrip())
        fs = first.strip()
        last = out[-1]
        cont = out[-2]
        cs = cont.strip() if cont is not None else ""
        if not (
            fs.startswith("if (")
            and fs.endswith(") {")
            and last is not None
            and last.strip() == "}"
            and len(last) - 1 == ind
            and cont is not None
            and len(cont) - len(cs) == ind + 2
            # the if's body must not fall through (it would leave the loop)
            and (cs in ("continue;", "break;") or cs.startswith(("return", "goto ")))
        ):
            return False
        for k in range(head + 2, n - 1):
            ln = out[k]
            if ln is not None and len(ln) - len(ln.lstrip()) <= ind:
                return False
        self.budget.spend(n - head)
        cond = fs[4:-3]
        dropped = cs == "continue;"
        body = [ln[2:] if ln is not None else None for ln in out[head + 2 : n - 1 - dropped]]
        del out[head + 1 :]
        out.extend(body)
        fr.headed = True
        pre = hl[: -len("while (1) {")]
        out[head] = f"{pre}while ({cond}) {{"
        if dropped and fr.conts == 1:
            self.for_loop(fr, head, pre, cond, ind)
        return True

    def for_loop(self, fr: _Frame, head: int, pre: str, cond: str, ind: int) -> None:
        """``i = a; while (c) { body i += k; }`` (no other ``continue``) as
        ``for (i = a; c; i += k) { body }``."""
        out = self.out
        if fr.label_used or len(out) <= head + 1:
            return
        st = out[-1]
        step = None
        if st is not None and len(st) - len(st.lstrip()) == ind and st.endswith(";"):
            m = _STEP.match(st.strip())
            if m is not None and re.search(rf"\b{m.group(1)}\b", cond):
                step = st.strip()[:-1]
        if step is None:
            return
        out.pop()
        init = ""
        prev = out[head - 2] if head >= 2 else None
        var = step.split(" ", 1)[0].rstrip("+-")
        if (
            prev is not None
            and prev.startswith(pre)
            and not prev[len(pre) :].startswith(" ")
            and prev.startswith(pre + var + " = ")
            and prev.endswith(";")
            and "{" not in prev
            and "}" not in prev
        ):
            init = prev.strip()[:-1]
            out[head - 2] = None
        out[head] = f"{pre}for ({init}; {cond}; {step}) {{"

    def tail_return(self, t: _Frame, vals: list[_E]) -> str | None:
        """``return ...;`` when the code after ``t``'s end only returns (so a branch to
        ``t`` needs no goto): block ends without results, then the function end, possibly
        after one ``local.get``/constant that becomes the returned value."""
        ops = self.ops
        last = len(ops) - 1
        j = t.blk.end + 1
        func_res = self.frames[0].results
        if vals:
            if j == last and len(vals) == len(func_res) == 1:
                return f"return {vals[0].text};"
            return None
        end_of = self.end_of
        while j < last and ops[j] == 0x0B:
            b = end_of.get(j)
            if b is None or self.blocks[b].bt != "":
                return None
            j += 1
        if j == last or ops[j] == 0x0F:
            return "return;" if not func_res else None
        if (j == last - 1 or ops[j + 1] == 0x0F) and len(func_res) == 1:
            op = ops[j]
            imms = self.args[j]
            if op == 0x20 and imms[0] < len(self.locals_c):
                return f"return {self.locals_c[imms[0]]};"
            if op == 0x41:
                return f"return {self.i32_const(imms[0]).text};"
            if op == 0x42:
                return f"return {_i64_text(imms[0])};"
        return None

    def close_if(self, head: int) -> None:
        """Close an ``if (...) {`` opened at ``out[head - 1]``; a single short statement
        body becomes ``if (...) stmt;``."""
        out = self.out
        if len(out) == head + 1:
            body = out[head]
            if (
                body is not None
                and len(body) < 100
                and body.endswith(";")
                and (not body.endswith(":;"))
                and "{" not in body
                and "}" not in body
            ):
                h = out[head - 1]
                assert h is not None
                out[head - 1] = h[:-1] + body.strip()
                out.pop()
                return
        self.emit("}")

    def branch_values(self, depth: int, consume: bool) -> list[_E]:
        if depth >= len(self.frames):
            raise LiftError(f"branch depth {depth} out of range")
        t = self.frames[-1 - depth]
        n = len(t.params) if t.form in ("loop", "dowhile") else len(t.results)
        if consume:
            return self.popn(n)
        if n == 0:
            return []
        if len(self.stack) - n < self.frames[-1].height:
            raise LiftError("value stack underflow")
        for k in range(len(self.stack) - n, len(self.stack)):
            e = self.stack[k]
            if e.const is None:
                self.stack[k] = self.spill(e)
        return self.stack[-n:]

    def branch(self, depth: int, vals: list[_E], in_switch: bool = False) -> list[str]:
        """Statements for a branch to ``depth`` carrying ``vals`` (emitted by the caller)."""
        frames = self.frames
        t = frames[-1 - depth]
        lines: list[str] = []
        if t.form == "func":
            res = t.results
            if not res:
                lines.append("return;")
            elif len(res) == 1:
                lines.append(f"return {vals[0].text};")
            else:
                st = self.ret_type(res)
                lines.append(f"return ({st}){{{', '.join(v.text for v in vals)}}};")
            return lines
        lp = self.loopish
        ti = len(frames) - 1 - depth
        if t.form not in ("loop", "dowhile"):
            lf = frames[lp[-1]] if lp else None
            if (
                lf is not None
                and lf.form == "loop"
                and not lf.headed
                and not vals
                and not in_switch
                and len(self.out) == lf.cond + 2
                and lp[-1] > ti
                and self.break_lands(ti, lp[-1])
            ):
                # a loop's leading exit test stays a `break` so the loop reads `while (!c)`
                lf.branched = True
                self.brk_frame = lp[-1]
                return ["break;"]
            ret = self.tail_return(t, vals)
            if ret is not None:
                return [ret]
        targets = t.par_vars if t.form in ("loop", "dowhile") else t.res_vars
        if len(targets) > 1:
            tmps = []
            for v in vals:
                tn = self.new_temp(v.ty)
                lines.append(f"{tn} = {v.text};")
                tmps.append(tn)
            lines += [f"{var} = {tn};" for var, tn in zip(targets, tmps, strict=True)]
        else:
            lines += [
                f"{var} = {v.text};" for var, v in zip(targets, vals, strict=True) if var != v.text
            ]
        # C constructs between here and the target that capture `break` / `continue`
        # (frames above the target's index: the innermost loop-like one and open switches)
        if lp and lp[-1] > ti:
            brk_ok = cont_ok = False
        else:
            cont_ok = True
            brk_ok = not in_switch and not any(k > ti for k in self.sw_open)
        if t.form in ("loop", "dowhile"):
            if cont_ok and t.form == "loop":
                t.conts += 1
                lines.append("continue;")
            else:
                if not t.label:
                    t.label = f"L{t.id}"
                t.label_used = True
                lines.append(f"goto {t.label};")
                self.stats.gotos += 1
            return lines
        if brk_ok and (t.form == "dowhile0" or t.switch_open):
            t.branched = True
            self.brk_frame = ti
            lines.append("break;")
            return lines
        if not in_switch and lp and self.break_lands(ti, lp[-1]):
            # leaving the innermost loop lands where the target's end leads: `break`
            frames[lp[-1]].branched = True
            self.brk_frame = lp[-1]
            lines.append("break;")
            return lines
        t.branched = True
        if not t.label:
            t.label = f"L{t.id}"
        t.label_used = True
        lines.append(f"goto {t.label};")
        self.stats.gotos += 1
        return lines

    def landing(self, j: int) -> int:
        """Where control goes after the ``end`` at ``j``: past every directly following
        ``end`` of a block, loop or if without results (they are no-ops on the way out)."""
        ops = self.ops
        end_of = self.end_of
        blocks = self.blocks
        n = len(ops)
        steps = 0
        while j < n and ops[j] == 0x0B and steps < MAX_BREAK_WALK:
            b = end_of.get(j)
            if b is None:
                return j
            blk = blocks[b]
            if blk.bt != "" or blk.kind not in ("block", "loop", "if"):
                return j
            j += 1
            steps += 1
        return j

    def break_lands(self, ti: int, li: int) -> bool:
        """Whether ``break`` out of loop-like frame ``li`` (the innermost one) goes where a
        branch to block frame ``ti`` goes: no switch open inside the loop, and both ends
        land on the same instruction."""
        if any(k > li for k in self.sw_open):
            return False
        t = self.frames[ti]
        lf = self.frames[li]
        if lf.blk.bt != "" or t.blk.bt != "" or lf.form not in ("loop", "dowhile", "dowhile0"):
            return False
        self.budget.spend(8)
        return self.landing(lf.blk.end) == self.landing(t.blk.end)

    def br_if(self, i: int, depth: int, c: _E | None = None, keep: int = 0) -> None:
        plain = c is None  # a br_if (not a br_on_* with its own test)
        if c is None:
            c = self.pop()
        if depth >= len(self.frames):
            raise LiftError(f"branch depth {depth} out of range")
        t = self.frames[-1 - depth]
        if t.form == "dowhile" and depth == 0 and i == t.blk.end - 1 and not keep:
            self.spill_for_call()
            t.cond = c
            return
        dropped = (
            plain
            and t.form not in ("loop", "dowhile", "func")
            and len(t.results) == 1
            and self.cur + 1 < len(self.ops)
            and self.ops[self.cur + 1] == 0x1A
        )
        # a value the fall-through path drops right away needs no temporary
        vals = self.branch_values(depth, consume=dropped)
        self.spill_for_call()
        if t.form == "ifconv" and depth == 0 and not vals and self.tail_return(t, vals) is None:
            self.emit(f"if ({self.cond_text(c, negate=True)}) {{")
            t.heads.append(len(self.out))
            t.opened += 1
            t.branched = True
            self.extra += 1
            return
        lines = self.branch(depth, vals)
        if (
            len(lines) == 2
            and len(t.res_vars) == 1
            and t.form not in ("loop", "dowhile", "func")
            and lines[0].startswith(t.res_vars[0] + " = ")
            and (lines[1] == "break;" or lines[1].startswith("goto "))
        ):
            # the block's result variable is read only after the block: assign it before
            # the test, so the branch is a one-line `if (c) break;`
            self.emit(lines[0])
            lines = lines[1:]
        if dropped:
            self.stack.append(_E("0", 0, t.results[0], const=0))
        ct = self.cond_text(c)
        if len(lines) == 1:
            line = lines[0]
            if line == "break;":
                lf = self.frames[self.brk_frame]
                out = self.out
                if lf.form == "loop" and not lf.headed and len(out) == lf.cond + 2:
                    # the loop's first statement is its exit test: `while (!c) {`
                    hl = out[lf.cond + 1]
                    if hl is not None and hl.endswith("while (1) {"):
                        out[lf.cond + 1] = hl[: -len("1) {")] + self.cond_text(c, True) + ") {"
                        lf.headed = True
                        return
            self.emit(f"if ({ct}) {line}")
            if line == "continue;":
                t.last_cont = (len(self.out) - 1, ct)
        else:
            self.emit(f"if ({ct}) {{")
            for line in lines:
                self.emit("  " + line)
            self.emit("}")

    def case_heads(self, ks: list[int], default: bool) -> list[str]:
        heads = [f"case {k}:" for k in ks] + (["default:"] if default else [])
        return [" ".join(heads[j : j + 8]) for j in range(0, len(heads), 8)]

    def br_table(self, i, labels, default):
        idx = self.pop()
        n_vals = self.branch_values(default, consume=False)
        frames = self.frames
        for d in set(labels):
            if d >= len(frames):
                raise LiftError(f"branch depth {d} out of range")
            t = frames[-1 - d]
            if len(t.params if t.form in ("loop", "dowhile") else t.results) != len(n_vals):
                raise LiftError("br_table targets of different arities")
        self.spill_for_call()
        members = self.switches.get(i)
        if members is not None:
            self.switch_chain(idx, labels, default, len(members))
            return
        groups: dict[int, list[int]] = {}
        for k, d in enumerate(labels):
            groups.setdefault(d, []).append(k)
        if not groups:
            for line in self.branch(default, n_vals):
                self.emit(line)
            self.dead = True
            return
        self.emit(f"switch ({idx.text}) {{")
        top = self.frames[-1]
        nxt_end = i + 1 < len(self.ops) and self.ops[i + 1] == 0x0B
        order = sorted(groups.items(), key=lambda kv: kv[1][0])
        entries = [(d, ks) for d, ks in order if d != default] + [(default, None)]
        for d, ks in entries:
            if ks is None:
                head = "default:"
            else:
                heads = [f"case {k}:" for k in ks]
                if len(heads) > 8:
                    for j in range(0, len(heads) - 8, 8):
                        self.emit("  " + " ".join(heads[j : j + 8]))
                    heads = heads[(len(heads) - 1) // 8 * 8 :]
                head = " ".join(heads)
            t = self.frames[-1 - d]
            if (
                d == 0
                and nxt_end
                and t is top
                and t.form not in ("loop", "dowhile", "func")
                and not (t.res_vars or t.par_vars)
            ):
                t.branched = True
                lines = ["break;"]
            else:
                lines = self.branch(d, n_vals, in_switch=True)
            self.emit(f"  {head} " + " ".join(lines))
        self.emit("}")
        self.dead = True


def c_ident_path(text: str) -> str:
    """A hook result like ``p->field_8`` or ``p->a.b``: keep ``->``/``.`` between identifiers."""
    out = []
    for part in text.replace("->", "\x00->\x00").replace(".", "\x00.\x00").split("\x00"):
        out.append(part if part in ("->", ".") else c_ident(part))
    return "".join(out)


#: i32.sub / i32.add, the ops of a shadow-stack prologue ``global.get SP; i32.const N; i32.sub``
_I32_SUB: Final = 0x6B
_I32_ADD: Final = 0x6A


def _frame_regions(ops: list[int], args: list[tuple], sp_hint: int) -> list[tuple[int, int, int, int]]:
    """Shadow-stack frames of clang/Emscripten/Rust code: ``(F, start, end, size)`` per
    prologue ``global.get SP; i32.const N; i32.sub; local.tee/set F`` (also through locals,
    as at -O0), confirmed by a ``global.set SP`` of that value or by SP being ``sp_hint``
    (the module's first mutable i32 global: leaf functions never write SP back). Within
    ``start..end`` (instruction indices) local F holds the frame base: the region ends at
    the end of the block around the prologue, at the next assignment of F, or at the head
    of a loop that contains that assignment (its back edge would reach earlier uses)."""
    # symbolic values: ("g", g) global g; ("c", n) constant; ("f", g, n) g - n; None unknown
    stk: list[tuple | None] = []
    lsym: dict[int, tuple] = {}
    cands: list[list[int]] = []  # [pos, F, n, g, block start, confirmed]
    cand_locals: set[int] = set()
    sets: dict[int, list[tuple[int, tuple[int, ...]]]] = {}  # F -> (pos, loop starts open there)
    bstack: list[tuple[int, bool]] = [(-1, False)]
    ends: dict[int, int] = {-1: len(ops)}
    for i in range(len(ops)):
        op = ops[i]
        if op == 0x23:
            stk.append(("g", args[i][0]))
        elif op == 0x41:
            stk.append(("c", args[i][0]))
        elif op == 0x20:
            stk.append(lsym.get(args[i][0]))
        elif op == _I32_SUB or op == _I32_ADD:
            b = stk.pop() if stk else None
            a = stk.pop() if stk else None
            r: tuple | None = None
            if a is not None and b is not None and a[0] == "g" and b[0] == "c":
                n = b[1] if op == _I32_SUB else -b[1]
                if 0 < n < (1 << 24):
                    r = ("f", a[1], n)
            stk.append(r)
        elif op == 0x21 or op == 0x22:
            x = args[i][0]
            v = stk[-1] if stk else None
            if op == 0x21 and stk:
                stk.pop()
            if x in cand_locals:
                opened = tuple(s for s, lp in bstack if lp)
                sets.setdefault(x, []).append((i, opened))
            if v is None:
                lsym.pop(x, None)
            else:
                lsym[x] = v
                if v[0] == "f":
                    cands.append([i, x, v[2], v[1], bstack[-1][0], 0])
                    cand_locals.add(x)
        elif op == 0x24:
            v = stk.pop() if stk else None
            g = args[i][0]
            if v is not None and v[0] == "f" and v[1] == g:
                for c in cands:
                    if c[3] == g and c[2] == v[2] and lsym.get(c[1]) == v:
                        c[5] = 1
            lsym = {k: w for k, w in lsym.items() if w[0] == "c"}
        else:
            stk.clear()
            if op in _OPENERS:
                bstack.append((i, op == 0x03))
                lsym.clear()
            elif op == 0x0B:
                if len(bstack) > 1:
                    ends[bstack.pop()[0]] = i
                lsym.clear()
            elif 0x05 <= op <= 0x0E or op == 0x18 or op == 0x19:
                lsym.clear()
    out: list[tuple[int, int, int, int]] = []
    for pos, x, n, g, bs, ok in cands:
        if not ok and g != sp_hint:
            continue
        end = ends.get(bs, len(ops))
        for q, loops in sets.get(x, []):
            if q > pos:
                if q < end:
                    end = q
                for ls in loops:
                    if pos < ls < end:
                        end = ls
                break
        if end > pos + 1:
            out.append((x, pos + 1, end, n))
    return out


_CT_SIZE: Final = {
    "int8_t": 1,
    "uint8_t": 1,
    "int16_t": 2,
    "uint16_t": 2,
    "int32_t": 4,
    "uint32_t": 4,
    "float": 4,
    "int64_t": 8,
    "double": 8,
}
_FLOAT_CT: Final = frozenset(("float", "double"))
_CT_TAG: Final = {
    "int8_t": "i8",
    "uint8_t": "i8",
    "int16_t": "i16",
    "uint16_t": "i16",
    "int32_t": "i32",
    "uint32_t": "i32",
    "float": "f32",
    "int64_t": "i64",
    "double": "f64",
}
_MEMOPS: Final = frozenset(i for i, n in enumerate(MNEMONICS) if n in _LOAD_CT or n in _STORE_CT)
#: per op: (C type, wasm result type, widened to int64_t) for plain loads, else None
_LOAD_INFO: Final[list] = [None] * len(MNEMONICS)
for _op, _n in enumerate(MNEMONICS):
    if _n in _LOAD_CT:
        _LOAD_INFO[_op] = (_LOAD_CT[_n], _n[:3], _n[:3] == "i64" and _LOAD_CT[_n] != "int64_t")

#: per op, the inline path of :meth:`_Lifter.run`: 1 local.get, 2 table op, 3 plain load,
#: 4 i32.const, 0 a handler
_RUN_KIND: Final = [0] * len(MNEMONICS)
_RUN_KIND[0x20] = 1
_RUN_KIND[0x41] = 4
for _op in range(len(MNEMONICS)):
    if CTABLE[_op] is not None:
        _RUN_KIND[_op] = 2
    elif _LOAD_INFO[_op] is not None:
        _RUN_KIND[_op] = 3
#: ... and the direct calls after it: 5 local.set/tee, 6 call, 7 block/loop/if, 8 end,
#: 9 else, 10 br, 11 drop, 12 select, 13 global.get, 14 br_if, 15 store; 0 :meth:`step`
for _k, _ops in (
    (5, (0x21, 0x22)),
    (6, (0x10,)),
    (7, (0x02, 0x03, 0x04)),
    (8, (0x0B,)),
    (9, (0x05,)),
    (10, (0x0C,)),
    (11, (0x1A,)),
    (12, (0x1B,)),
    (13, (0x23,)),
    (14, (0x0D,)),
    (15, tuple(range(0x36, 0x3F))),
):
    for _op in _ops:
        assert _RUN_KIND[_op] == 0
        _RUN_KIND[_op] = _k
_RUN_KINDS: Final = bytes(_RUN_KIND)

# ----------------------------------------------------------------------------- entry


def _decode(data: bytes, start: int, end: int, budget: _Budget) -> tuple:
    """Decode a body into two parallel lists, opcodes and immediates (a tuple each; ``()``
    when none; an ``f32.const`` carries ``(value, raw bits)``), plus the indices of the
    control instructions. No offsets and no per-instruction tuple: they cost allocations
    in the hottest loop and no later pass needs them.

    Inline fast paths cover the common shapes with one- or two-byte LEBs (no immediate;
    local/global/label/call index; ``i32.const``; memarg; empty block type); anything else
    (and any shape near ``end``) goes through the shared careful decoder.
    """
    decls, p = read_local_decls(data, start, end)
    ops: list[int] = []
    args: list[tuple] = []
    ctrl: list[int] = []
    oappend = ops.append
    append = args.append
    cappend = ctrl.append
    fast = _FAST_BYTES
    is_ctrl = _CTRL_BYTES
    n = 0
    lim = end - 3  # fast paths read at most three bytes after the opcode
    while p < end:
        b = data[p]
        k = fast[b]
        imms: tuple | None = None  # set by a fast path, else the careful decoder runs
        q = p
        if k == 1:
            imms = ()
            q = p + 1
        elif k and p < lim:
            b1 = data[p + 1]
            b2 = data[p + 2]
            if k == 2:  # one uleb
                if b1 < 0x80:
                    imms = (b1,)
                    q = p + 2
                elif b2 < 0x80:
                    imms = ((b1 & 0x7F) | (b2 << 7),)
                    q = p + 3
            elif k == 3:  # i32.const
                if b1 < 0x80:
                    imms = (b1 - 0x80 if b1 & 0x40 else b1,)
                    q = p + 2
                elif b2 < 0x80:
                    v = (b1 & 0x7F) | (b2 << 7)
                    imms = (v - 0x4000 if v & 0x2000 else v,)
                    q = p + 3
                elif data[p + 3] < 0x80:
                    v = (b1 & 0x7F) | ((b2 & 0x7F) << 7) | (data[p + 3] << 14)
                    imms = (v - 0x200000 if v & 0x100000 else v,)
                    q = p + 4
            elif k == 4:  # memarg: align < 0x40 (no memory index), offset
                if b1 < 0x40:
                    if b2 < 0x80:
                        imms = (b1, b2, 0)
                        q = p + 3
                    elif data[p + 3] < 0x80:
                        imms = (b1, (b2 & 0x7F) | (data[p + 3] << 7), 0)
                        q = p + 4
            elif b1 == 0x40:  # block / loop / if with an empty block type
                imms = ("",)
                q = p + 2
        if imms is None:
            op, q, imms = decode_one(data, p, end)
            if op == 0x43:  # f32.const: keep the raw bits (a NaN payload)
                imms = (imms[0], int.from_bytes(data[p + 1 : p + 5], "little"))
            oappend(op)
        else:
            oappend(b)
        append(imms)
        p = q
        if is_ctrl[b]:
            cappend(n)
        n += 1
        if not n & 0xFFF:
            if n > MAX_INSTRUCTIONS:
                raise LiftError(f"more than {MAX_INSTRUCTIONS} instructions")
            budget.spend(0)
    return decls, ops, args, ctrl


def _stack_effects() -> list:
    """(pops, pushes) per op for the tee-folding lookahead; pushes -1: control flow that
    leaves values behind (no fold), -2: control flow consuming its operand as a condition;
    None: unknown (no fold). Calls (0x10) are looked up by type."""
    eff: list = [None] * len(MNEMONICS)
    for op, ent in enumerate(CTABLE):
        if ent is not None:
            eff[op] = (len(ent[1]), len(ent[2]))
    for op in range(0x28, 0x36):
        eff[op] = (1, 1)
    for op in range(0x36, 0x3F):
        eff[op] = (2, 0)
    for op in (0x23, 0x3F, 0x41, 0x42, 0x43, 0x44):
        eff[op] = (0, 1)
    eff[0x24] = (1, 0)
    eff[0x21] = (1, 0)
    eff[0x22] = (1, 1)
    eff[0x40] = (1, 1)
    eff[0x1A] = (1, 0)
    eff[0x1B] = (3, 1)  # select: C evaluates one arm only, never fold into it
    for op in (0x0D, 0x04, 0x0E):
        eff[op] = (1, -2)
    for op in (0x00, 0x02, 0x03, 0x05, 0x0B, 0x0C, 0x0F):
        eff[op] = (0, -1)
    return eff


_STACK_EFFECT: Final = _stack_effects()

#: single-byte opcodes without immediates
_NO_IMM: Final = frozenset(b for b in range(0xFB) if BYTE_KIND[b] == K_NONE)
#: control instructions the structurer looks at (openers, else/catch, ends, branches)
#: (by first byte; 0xD5/0xD6 br_on_null/non_null, 0xFB GC ops incl. br_on_cast)
_CTRL: Final = frozenset(
    {0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0B, 0x0C, 0x0D, 0x0E, 0x18, 0x19, 0x1F, 0xD5, 0xD6, 0xFB}
)
#: fast decode shape per first byte: 1 none, 2 one uleb, 3 i32.const, 4 memarg, 5 block
_FAST: Final = [0] * 256
for _b in _NO_IMM:
    _FAST[_b] = 1
for _b in (0x0C, 0x0D, 0x10, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24):
    _FAST[_b] = 2
_FAST[0x41] = 3
for _b in range(0x28, 0x3F):
    _FAST[_b] = 4
for _b in (0x02, 0x03, 0x04):
    _FAST[_b] = 5
_FAST_BYTES: Final = bytes(_FAST)
_CTRL_BYTES: Final = bytes(1 if _b in _CTRL else 0 for _b in range(256))


def _sign_table() -> bytes:
    """Per op, how the local-typing pass (:func:`_local_signs`) sees it: 1 i32 arithmetic
    whose result carries its operands' C type (+ - * & | ^), 2 shl (the value operand), 3
    unsigned on both operands, 4 signed on both, 5 shr_u, 6 shr_s, 7 unsigned on its one
    operand (extend/convert _u), 8 signed on it, 9 select, 10 a 0/1 result (a comparison)."""
    t = [0] * len(MNEMONICS)
    for op, name in enumerate(MNEMONICS):
        if not name:
            continue
        ty, _, rest = name.partition(".")
        if name == "select":
            t[op] = 9
        elif ty == "i32" and rest in ("add", "sub", "mul", "and", "or", "xor"):
            t[op] = 1
        elif name == "i32.shl":
            t[op] = 2
        elif ty == "i32" and rest in ("div_u", "rem_u", "lt_u", "gt_u", "le_u", "ge_u"):
            t[op] = 3
        elif ty == "i32" and rest in ("div_s", "rem_s", "lt_s", "gt_s", "le_s", "ge_s"):
            t[op] = 4
        elif name == "i32.shr_u":
            t[op] = 5
        elif name == "i32.shr_s":
            t[op] = 6
        elif name in ("i64.extend_i32_u", "f32.convert_i32_u", "f64.convert_i32_u"):
            t[op] = 7
        elif name in ("i64.extend_i32_s", "f32.convert_i32_s", "f64.convert_i32_s"):
            t[op] = 8
        if ty in ("i32", "i64", "f32", "f64") and (
            rest in ("eqz", "eq", "ne", "lt", "gt", "le", "ge")
            or rest[:3] in ("lt_", "gt_", "le_", "ge_")
        ):
            t[op] = 10 if t[op] == 0 else t[op]
    return bytes(t)


_SIGN_OP: Final = _sign_table()
_NO_ORIGIN: Final[frozenset[int]] = frozenset()


def _local_signs(
    ops: list[int], args: list[tuple], local_types: list[str], n_params: int, ftypes: list
) -> list[int]:
    """C types of the function's i32 locals (not parameters: prototypes stay as the wasm
    type says): 1 ``uint32_t`` when more of the uses that care read it unsigned (``<u``,
    ``/u``, ``>>u``, extend/convert ``_u``, also through ``+ - * & | ^ <<``) than signed;
    2 ``bool`` when every value stored in it is 0 or 1 (a comparison, ``0``/``1``, or
    ``& | ^`` / select of those) and at least one is a comparison; else 0 (``int32_t``).
    One pass simulating the value stack inside straight-line code (values crossing a
    control instruction are unknown, which only ever keeps the default)."""
    n = len(local_types)
    out = [0] * n
    cand = [x >= n_params and local_types[x] == "i32" for x in range(n)]
    if not any(cand):
        return out
    uv = [0] * n
    sv = [0] * n
    strong = [False] * n
    notbool = [False] * n
    orig: list[frozenset[int]] = []  # per stack value: candidate locals its C type follows
    b01: list[int] = []  # per stack value: 0 unknown, 1 0/1 (a constant, or the locals in
    # its ``orig`` are bool), 2 a comparison (0/1 once those locals are bool)
    deps: dict[int, set[int]] = {}  # local -> locals whose values were stored in it
    sign = _SIGN_OP
    effects = _STACK_EFFECT
    none = _NO_ORIGIN
    for i in range(len(ops)):
        op = ops[i]
        k = sign[op] if op < len(sign) else 0
        if op == 0x20:
            x = args[i][0]
            c = x < n and cand[x]
            orig.append(frozenset((x,)) if c else none)
            b01.append(1 if c else 0)  # 0/1 if x turns out bool (its deps)
            continue
        if op == 0x41:
            orig.append(none)
            b01.append(1 if args[i][0] in (0, 1) else 0)
            continue
        if op == 0x21 or op == 0x22:
            x = args[i][0]
            bv = b01.pop() if b01 else 0
            ov = orig.pop() if orig else none
            c = x < n and cand[x]
            if c:
                if bv == 0:
                    notbool[x] = True
                else:
                    if bv == 2:
                        strong[x] = True
                    if ov:
                        deps.setdefault(x, set()).update(ov)
            if op == 0x22:
                orig.append(frozenset((x,)) if c else none)
                b01.append(1 if c else 0)
            continue
        if k:
            if k == 1 or k == 3 or k == 4 or k == 10 and op != 0x45 and op != 0x50:
                cmp = 0 if k == 1 or 0x6D <= op <= 0x70 else 2  # div/rem are not 0/1
                if len(orig) < 2:
                    orig.clear()
                    b01.clear()
                    orig.append(none)
                    b01.append(cmp)
                    continue
                ob = orig.pop()
                oa = orig.pop()
                bb = b01.pop()
                ba = b01.pop()
                if k == 1:
                    u = oa | ob
                    big = len(u) > 8
                    orig.append(none if big else u)
                    # & | ^ of 0/1 values is 0/1 (when the locals it reads are bool)
                    ok = ba and bb and not big and 0x71 <= op <= 0x73
                    b01.append(min(ba, bb) if ok else 0)
                    continue
                if k == 3 or k == 4:
                    votes = uv if k == 3 else sv
                    for x in oa | ob:
                        votes[x] += 1
                orig.append(none)
                b01.append(cmp)
                continue
            if k == 2 or k == 5 or k == 6:
                if len(orig) < 2:
                    orig.clear()
                    b01.clear()
                    orig.append(none)
                    b01.append(0)
                    continue
                orig.pop()
                oa = orig.pop()
                b01.pop()
                b01.pop()
                if k == 5 or k == 6:
                    votes = uv if k == 5 else sv
                    for x in oa:
                        votes[x] += 1
                    oa = none
                orig.append(oa)
                b01.append(0)
                continue
            if k == 7 or k == 8 or k == 10:  # unary (eqz is 10)
                oa = orig.pop() if orig else none
                if b01:
                    b01.pop()
                if k != 10:
                    votes = uv if k == 7 else sv
                    for x in oa:
                        votes[x] += 1
                orig.append(none)
                b01.append(2 if k == 10 else 0)
                continue
            if k == 9 and len(orig) >= 3:
                orig.pop()
                ob = orig.pop()
                oa = orig.pop()
                b01.pop()
                bb = b01.pop()
                ba = b01.pop()
                u = oa | ob
                big = len(u) > 8
                orig.append(none if big else u)
                b01.append(min(ba, bb) if ba and bb and not big else 0)
                continue
        if op == 0x10:
            callee = args[i][0]
            t = ftypes[callee] if callee < len(ftypes) else None
            eff = (len(t.params), len(t.results)) if t is not None else None
        else:
            eff = effects[op] if op < len(effects) else None
        if eff is None or eff[1] < 0 or eff[0] > len(orig):
            orig.clear()
            b01.clear()
            continue
        if eff[0]:
            del orig[-eff[0] :]
            del b01[-eff[0] :]
        for _ in range(eff[1]):
            orig.append(none)
            b01.append(0)
    isbool = {x for x in range(n) if cand[x] and strong[x] and not notbool[x]}
    changed = True
    while changed:  # a value read from another local is 0/1 only if that one is bool
        changed = False
        for x in list(isbool):
            if not deps.get(x, isbool) <= isbool:
                isbool.discard(x)
                changed = True
    for x in range(n):
        if x in isbool:
            out[x] = 2
        elif cand[x] and uv[x] > sv[x]:
            out[x] = 1
    return out


def _setup_frame(
    lf: _Lifter, lm: LiftModule, ops: list[int], args: list[tuple], locals_c: list[str]
) -> None:
    """Find the function's shadow-stack frames (:func:`_frame_regions`) and prepare the
    frame struct its slots are named in."""
    sp_hint = -1
    for g, gl in enumerate(lm.module.globals):
        if gl.mutable and gl.valtype == "i32":
            sp_hint = g
            break
    regions = _frame_regions(ops, args, sp_hint)
    if not regions:
        return
    # one pointer names the slots: keep one base local's regions (a nested frame of another
    # local re-points it, and the outer frame's later slots would read the inner frame)
    regions = [r for r in regions if r[0] == regions[0][0]]
    for x, s, e, n in regions:
        lf.fregion.setdefault(x, []).append((s, e, n))
        lf.fstart_at[s - 1] = x
        if n > lf.fsize:
            lf.fsize = n
    name = "frame"
    taken = set(locals_c)
    while name in taken or name in lm.module_idents:
        name += "_"
    lf.fptr = name
    lf.fstruct = c_ident(lm.func_c[lf.fi] + "_frame")


def _frame_struct(lf: _Lifter) -> str:
    """The declaration of the frame struct: named slots at their offsets, the bytes
    between them as arrays (packed, so every slot sits at its wasm offset); slots whose
    bytes overlap (an i64 slot also read as two i32) share an anonymous union, a member
    that starts later wrapped in a struct with leading padding."""
    fields: list[tuple[int, int, str, str]] = [
        (o, t[1], t[0], f"local_{o:02x}") for o, t in lf.fslots.items()
    ]
    for name, ex in lf.fextra.items():
        fields.append((ex[0], ex[2], ex[1], name))
    # an address taken where no slot starts: the object there is a byte array up to the
    # next slot or taken address (the frame's buffers and structs)
    starts = sorted(set(lf.fslots) | lf.fesc)
    for k, o in enumerate(starts):
        if o in lf.fesc and o not in lf.fslots:
            nxt = starts[k + 1] if k + 1 < len(starts) else lf.fsize
            fields.append((o, nxt - o, "uint8_t", f"local_{o:02x}[{nxt - o}]"))
    fields.sort(key=lambda f: (f[0], -f[1], f[3]))
    parts: list[str] = []
    pos = 0
    k = 0
    while k < len(fields):
        o = fields[k][0]
        end = o + fields[k][1]
        j = k + 1
        while j < len(fields) and fields[j][0] < end:
            end = max(end, fields[j][0] + fields[j][1])
            j += 1
        if o > pos:
            parts.append(f"  uint8_t local_{pos:02x}[{o - pos}];")
        if j == k + 1:
            parts.append(f"  {fields[k][2]} {fields[k][3]};")
        else:
            parts.append("  union __attribute__((packed)) {")
            for fo, _sz, ct, name in fields[k:j]:
                if fo == o:
                    parts.append(f"    {ct} {name};")
                else:
                    parts.append(
                        f"    struct __attribute__((packed)) {{ uint8_t pad_{name.split('[', 1)[0]}[{fo - o}]; "
                        f"{ct} {name}; }};"
                    )
            parts.append("  };")
        pos = end
        k = j
    if pos < lf.fsize:
        parts.append(f"  uint8_t local_{pos:02x}[{lf.fsize - pos}];")
    # several members per line, in offset order (a union keeps its own lines); the struct
    # tag is the function's own, so it needs no include guard
    lines: list[str] = []
    for part in parts:
        if (
            lines
            and part.startswith("  ") and not part.startswith("   ")
            and not part.startswith("  union") and part != "  };"
            and lines[-1].startswith("  ") and not lines[-1].startswith("   ")
            and not lines[-1].startswith("  union") and lines[-1] != "  };"
            and len(lines[-1]) + len(part) <= 96
        ):
            lines[-1] += part[1:]
        else:
            lines.append(part)
    body = "\n".join(lines)
    return (
        f"struct __attribute__((packed)) {lf.fstruct} {{ /* shadow-stack frame, {lf.fsize} bytes */"
        f"\n{body}\n}};"
    )


def _pack_decl(lines: list[str], cur: str, stmt: str, ind: str = "  ") -> str:
    """Append declaration ``stmt`` to the pending line ``cur`` (flushed to ``lines``,
    indented by ``ind``, when the two would pass ~96 characters); returns the new pending
    line."""
    if not cur:
        return stmt
    if len(cur) + len(stmt) < 96:
        return f"{cur} {stmt}"
    lines.append(ind + cur)
    return stmt


def _signature(lm: LiftModule, fi: int, param_names: list[str] | None) -> str:
    t = lm.module.func_type(fi)
    ret = "void"
    if len(t.results) == 1:
        ret = c_type(t.results[0])
    elif t.results:
        ret = "struct R_" + type_code(t.results)
    if param_names is None:
        ps = ", ".join(c_type(p) for p in t.params) or "void"
    else:
        ps = ", ".join(f"{c_type(p)} {n}" for p, n in zip(t.params, param_names, strict=True))
        ps = ps or "void"
    return f"{ret} {lm.func_c[fi]}({ps})"


def _local_names(lm: LiftModule, fi: int, n_params: int, n_total: int) -> list[str]:
    given = lm.names.locals.get(fi) or {}
    used: set[str] = set()
    out = []
    for x in range(n_total):
        default = f"p{x}" if x < n_params else f"l{x}"
        raw = given.get(x)
        name = default
        if raw:
            cand = c_ident(raw)

            if (
                cand in C_KEYWORDS
                or cand in PRELUDE_NAMES
                or _GENERATED.match(cand)
                or cand in lm.module_idents
                or cand in used
            ):
                cand = f"{cand}_{x}"
            if cand not in used and cand not in lm.module_idents:
                name = cand
        used.add(name)
        out.append(name)
    return out


def param_c_names(lm: LiftModule, fi: int) -> list[str]:
    """The C names the lifted text gives function ``fi``'s parameters (``p0``... or their
    sanitised names from the module's name section)."""
    n = len(lm.module.func_type(fi).params)
    return _local_names(lm, fi, n, n)


def _header(lm: LiftModule, fi: int) -> str:
    name = lm.func_display(fi)
    sig = lm.module.func_type(fi).text()
    label = f"func[{fi}] <{comment_text(name)}>" if name else f"func[{fi}]"
    return f"/* {label} {sig} */"


def _stub(lm: LiftModule, fi: int, reason: str) -> str:
    t = lm.module.func_type(fi)
    decls = []
    if len(t.results) > 1:
        name = "R_" + type_code(t.results)
        fields = " ".join(f"{c_type(r)} v{k};" for k, r in enumerate(t.results))
        decls.append(f"#ifndef KB_{name}\n#define KB_{name}\nstruct {name} {{ {fields} }};\n#endif")
    names = [f"p{k}" for k in range(len(t.params))]
    return "\n".join(
        [
            _header(lm, fi),
            *decls,
            _signature(lm, fi, names) + " {",
            f"  /* kbtool: not lifted: {comment_text(reason)} */",
            "  wasm_unreachable();",
            "}",
            "",
        ]
    )


def lift_function(
    lm: LiftModule,
    func_index: int,
    *,
    max_seconds: float | None = DEFAULT_SECONDS,
    max_instructions: int = MAX_INSTRUCTIONS,
    max_chars: int = MAX_OUTPUT_CHARS,
) -> LiftResult:
    """Lift one function of a prepared module (see :func:`kbtool.lift.prepare`; raw wasm
    bytes are prepared on the fly) to C.

    Imports give a prototype only. Never raises for a bad body: the result then carries a
    stub with a placeholder comment and ``truncated=True``.
    """
    if not isinstance(lm, LiftModule):
        lm = prepare(lm)
    m = lm.module
    if func_index < 0 or func_index >= m.num_functions:
        raise IndexError(f"function {func_index} out of range")
    t0 = time.perf_counter()
    if func_index < m.num_func_imports:
        text = f"{_header(lm, func_index)}\n{_signature(lm, func_index, None)};\n"
        return LiftResult(func_index, text, stats=LiftStats(lines=2))
    deadline = None if max_seconds is None else t0 + max_seconds
    budget = _Budget(max_instructions * 100, deadline)
    start, end = m.code[func_index - m.num_func_imports]
    try:
        t = m.func_type(func_index)
        decls, ops, args, ctrl = _decode(lm.data, start, end, budget)
        if len(ops) > max_instructions:
            raise LiftError(f"more than {max_instructions} instructions")
        n_locals = len(t.params) + sum(c for c, _ in decls)
        if n_locals > MAX_LOCALS:
            raise LiftError(f"{n_locals} locals")
        local_types = list(t.params)
        for c, ty in decls:
            local_types.extend([ty] * c)
        locals_c = _local_names(lm, func_index, len(t.params), n_locals)
        blocks, open_at, switches = _scan(ops, args, ctrl, budget)
        lf = _Lifter(lm, func_index, budget, max_chars)
        lf.switches = switches
        lf.lsign = _local_signs(ops, args, local_types, len(t.params), lm.func_types)
        if _I32_SUB in ops or _I32_ADD in ops:
            _setup_frame(lf, lm, ops, args, locals_c)
        lf.run(ops, args, blocks, open_at, locals_c, local_types, t)
        lf.ret_type(t.results)  # the signature names it even when no return was lifted
    except (LiftError, WasmFormatError, IndexError, KeyError, ValueError, OverflowError) as e:
        # a malformed body (or a lifter defect) must not take the caller down
        text = _stub(
            lm,
            func_index,
            str(e)
            if isinstance(e, LiftError | WasmFormatError)
            else f"internal error {type(e).__name__}: {e}",
        )
        st = LiftStats(instructions=0, lines=text.count("\n"), seconds=time.perf_counter() - t0)
        return LiftResult(func_index, text, True, str(e), st)
    lines = [_header(lm, func_index)]
    lines += list(lf.decl_types.values())
    # what the body uses, for the compiler: several declarations per line
    dline = ""
    for g in lf.decl_globals:
        ext = f"extern {c_type(m.globals[g].valtype)} {lm.global_c[g]};"
        dline = _pack_decl(lines, dline, ext, "")
    protos = lm.protos
    for f in lf.decl_funcs:
        pr = protos.get(f)
        if pr is None:
            pr = protos[f] = _signature(lm, f, None) + ";"
        dline = _pack_decl(lines, dline, pr, "")
    if dline:
        lines.append(dline)
    lines.append(_signature(lm, func_index, locals_c[: len(t.params)]) + " {")
    head = len(lines)
    decl: dict[str, list[str]] = {}  # one declaration list per C type: locals, then temps
    lsign = lf.lsign
    for x in range(len(t.params), n_locals):
        ct = c_type(local_types[x])
        init = "{0}" if ct == "v128" else "0"
        if lsign[x] == 1:
            ct = "uint32_t"
        elif lsign[x] == 2:
            ct, init = "bool", "false"
        decl.setdefault(ct, []).append(f"{locals_c[x]} = {init}")
    for ct, n in lf.temps:
        decl.setdefault(ct, []).append(n)
    if not lf.fslots and not lf.fesc:
        for k in lf.fused:  # no slot is named: the frame pointer is noise
            lf.out[k] = None
    else:
        lines.insert(head - 1, _frame_struct(lf))
        head += 1
        lines.append(f"  struct {lf.fstruct} *{lf.fptr} = 0;")
    # declarations: several per line (one C type per declaration), up to ~96 characters
    dline = ""
    for ct, items in decl.items():
        cur = f"{ct} "
        for k, item in enumerate(items):
            if k and len(cur) + len(item) > 94:
                dline = _pack_decl(lines, dline, cur[:-2] + ";")
                cur = f"{ct} "
            cur += item + ", "
        dline = _pack_decl(lines, dline, cur[:-2] + ";")
    if dline:
        lines.append("  " + dline)
    lines += [ln for ln in lf.out if ln is not None]
    lines.append("}")
    text = "\n".join(lines) + "\n"
    st = lf.stats
    st.instructions = len(ops)
    st.lines = len(lines)
    st.body_lines = len(lines) - head - 1
    st.temps = len(lf.temps)
    st.seconds = time.perf_counter() - t0
    return LiftResult(func_index, text, False, "", st)
