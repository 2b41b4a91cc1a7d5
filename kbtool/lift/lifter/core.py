"""The walker's state (:class:`_Core`): output lines, the value stack, spills to
temporaries, folded ``local.tee``, names of functions/globals, constants and data labels.
"""

from __future__ import annotations

from typing import Any, Final

from ..context import LiftModule
from ..names import escape_text
from .base import (
    _E,
    _INDENT,
    F_CALL,
    F_EFFECT,
    F_GLOB,
    F_SET,
    MAX_EXPR_CHARS,
    MAX_INDENT,
    LiftError,
    LiftStats,
    _assign_stmt,
    _Budget,
    _i32_text,
    _merge,
    _p,
    c_type,
    i64,
    type_code,
)
from .decode import _EFF_POPS, _EFF_PUSHES
from .linetext import _marks, _note_ids, _unmark
from .opnames import OP_CALL, OP_GLOBAL_SET, OP_LOCAL_GET, OP_LOCAL_SET, OP_LOCAL_TEE, OP_SELECT
from .structure import _Blk


def split_marks(line: str | None) -> tuple[str | None, str]:
    """``line`` without note markers, and its markers (the rewrites of loops and ifs look at
    the bare statement and put the markers on the line they make)."""
    if line is None or "\x01" not in line:
        return line, ""
    return _unmark(line), _marks(line)  # (a note's marker: \x01 digits \x02)


def _reads(locs: tuple[int, ...], idx: int, nx: int) -> bool:
    """``idx in locs or nx in locs`` (the members are ints: compared natively)."""
    for v in locs:
        if v == idx or v == nx:
            return True
    return False


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

    def __init__(
        self,
        blk: _Blk,
        form: str,
        params: tuple[str, ...],
        results: tuple[str, ...],
        height: int,
    ):
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


#: the value stack holds this many placeholders below the function's frame (its height):
#: a list popped to empty frees its storage and one popped below half of it reallocates,
#: which each statement's last pops did (~0.7M reallocs in a sample of ffmpeg); never
#: popped, spilled or read (a constant without locals or flags; every pop stops at a frame)
STACK_FLOOR: Final = 4
_FLOOR_E: Final = _E("0", 0, "i32", const=0)


class _Core:
    def __init__(self, lm: LiftModule, func_index: int, budget: _Budget, max_chars: int):
        self.lm = lm
        self.m = lm.module
        # the module's tables the walk reads per instruction, as native attributes (the
        # same objects: a LiftModule's attribute is a generic lookup under mypyc)
        self.func_types: list = lm.func_types
        self.func_c: list[str] = lm.func_c
        self.global_c: list[str] = lm.global_c
        self.const_text: dict = lm.const_text
        self.data_starts: list = lm.data_starts
        self.fi = func_index
        self.budget = budget
        self.max_chars = max_chars
        self.out: list[str | None] = []
        self.chars = 0
        self.stack: list[_E] = [_FLOOR_E] * STACK_FLOOR
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
        # data items used as objects (memory.py): label -> [address, size, kind, C type,
        # {offset: C type} of the fields, typed C type]; kind: b(ytes) s(calar) f(ields)
        # a(rray) t(yped)
        self.dobj: dict[str, list] = {}
        self.dhook = lm.names.data_hook
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
        self.fextra: dict[
            str, tuple[int, str, int]
        ] = {}  # other views: name -> (offset, type, size)
        self.fsize = 0
        self.fptr = ""  # the C pointer to the frame struct ("frame")
        self.fstruct = ""  # its struct tag
        self.fwait = ""  # "lN = " while the frame pointer's assignment waits for lN's
        self.fused: list[int] = []  # output lines that assign the frame pointer
        # per local: 0 signed, 1 unsigned (uint32_t / uint64_t), 2 bool (.prepass._prepass)
        self.lsign: list[int] = []
        # set by run (the walk): the function's locals, blocks and per-local read cache
        self.locals_c: list[str] = []
        self.local_types: list[str] = []
        self.blocks: list[_Blk] = []
        self.end_of: dict[int, int] = {}
        self.open_at: dict[int, int] = {}
        self.lget: list[_E | None] = []
        # line comments (knowledge at an instruction offset): each goes above the first
        # statement emitted at or after its instruction, as a marker until the text is made
        self.note_at: dict[int, list[int]] = {}  # instruction index -> note ids
        self.notes: list[str] = []  # note id -> its comment line (without indentation)
        self.pending_notes: list[int] = []  # notes waiting for the next statement

    # -- output
    def emit(self, line: str) -> None:
        if self.pending_notes and line[:1] != "}":
            line = "".join([f"\x01{k}\x02" for k in self.pending_notes]) + line
            self.pending_notes = []
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

    def add_marks(self, k: int, marks: str) -> None:
        """Put note markers on output line ``k`` (after its indentation)."""
        line = self.out[k]
        if marks and line is not None:
            ind = len(line) - len(line.lstrip(" "))
            self.out[k] = line[:ind] + marks + line[ind:]

    def take_pending(self) -> str:
        """The markers of the notes waiting for a statement (a rewrite that eats the
        statement puts them on the line it rewrites)."""
        if not self.pending_notes:
            return ""
        marks = "".join([f"\x01{k}\x02" for k in self.pending_notes])
        self.pending_notes = []
        return marks

    def rescue_notes(self, start: int) -> None:
        """The notes on output lines from ``start`` on, which a rewrite is about to drop,
        wait for the next statement instead."""
        if not self.notes:
            return
        ids: list[int] = []
        for ln in self.out[start:]:
            if ln is not None and "\x01" in ln:
                ids += _note_ids(ln)
        self.pending_notes = ids + self.pending_notes

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
            return _E(name, 0, self.local_types[x], 0, (x,), f"!{name}", None, None, 2, nn=True)
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
        return _E(name, 0, e.ty, u=e.u, nn=e.nn)

    def spill_flags(self, mask: int) -> None:
        """Spill what is on the stack whose flags meet ``mask`` (not a constant; a flag test
        inline, no predicate called per value)."""
        st = self.stack
        for k, e in enumerate(st):
            if e.const is None and (e.fl or e.locs) and e.fl & mask:
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
        st = self.stack
        for k, e in enumerate(st):  # the tees of x (inline: no closure)
            if e.const is None and (e.fl or e.locs) and e.fl & F_SET and nx in e.locs:
                st[k] = self.spill(e)
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
            prologue = not (j < len(self.ops) and self.ops[j] == OP_GLOBAL_SET)
        if self.lsign[x] == 2 and type(v.const) is int:
            v = _E("true" if v.const else "false", 0, v.ty)  # 0/1 into a bool local
        text = v.text if v.w is None else v.w[0]  # an i64 local widens a 32-bit value itself
        if not tee or prologue or not self.foldable(x):
            self.emit(_assign_stmt(name, text))
            if tee:
                self.stack.append(self.local_e(x))
            return
        locs = v.locs + (nx,)
        self.pend.add(x)
        t = _E(f"{name} = {text}", 14, self.local_types[x], v.fl | F_SET, locs, tee=x)
        t.u = self.lsign[x] == 1
        t.nn = v.nn
        self.push(t)

    def spill_for_local(self, idx: int) -> None:
        st = self.stack
        nx = ~idx
        for k, e in enumerate(st):
            if e.locs and _reads(e.locs, idx, nx) and e.const is None:
                st[k] = self.spill(e)

    def foldable(self, x: int) -> bool:
        """Whether the ``local.tee x`` at the current instruction may stay an expression:
        a short forward simulation of the stack finds the statement that consumes its
        value before anything reads or writes ``x`` again (else a fold would force a
        temporary later) and before any control flow leaves the value on the stack."""
        ops = self.ops
        args = self.args
        i: i64 = self.cur
        last: i64 = min(len(ops), i + 48)
        d: i64 = 0  # values above the (possibly composed) tee value
        pops_t = _EFF_POPS
        push_t = _EFF_PUSHES
        n_eff: i64 = len(pops_t)
        ftypes = self.func_types
        j: i64
        for j in range(i + 1, last):
            op: i64 = ops[j]
            if op == OP_LOCAL_GET or op == OP_LOCAL_SET or op == OP_LOCAL_TEE:
                y: int = args[j][0]  # a local's index: an int compare, no generic one
                if y == x:
                    return False
                if op == OP_LOCAL_GET:
                    d += 1
                    continue
            pops: i64
            pushes: i64
            if op == OP_CALL:
                callee: int = args[j][0]
                t = ftypes[callee] if callee < len(ftypes) else None
                if t is None:
                    return False
                pops, pushes = len(t.params), len(t.results)
            else:
                if op >= n_eff:
                    return False
                pops = pops_t[op]
                if pops == 255:
                    return False
                pushes = push_t[op] - 2
            if pops <= d:
                if pushes < 0:
                    return False  # control flow with the value still on the stack
                d += pushes - pops
                continue
            # this instruction consumes the value
            if op == OP_SELECT:
                return False
            if pushes == 0 or pushes == -2:
                return True  # a statement (set, store, drop, call, br_if/if condition)
            if pushes != 1:
                return False
            d = 0
        return False

    # -- names
    def fname(self, idx: int) -> str:
        if idx < 0 or idx >= len(self.func_c):
            raise LiftError(f"function index {idx} out of range")
        if idx != self.fi:
            self.decl_funcs[idx] = None
        return self.func_c[idx]

    def gname(self, idx: int) -> str:
        if idx < 0 or idx >= len(self.global_c):
            raise LiftError(f"global index {idx} out of range")
        self.decl_globals[idx] = None
        return self.global_c[idx]

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
    def blocktype(self, bt: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        # typed: the walk unpacks and iterates native tuples (mypyc), not Any
        if bt == "":
            return (), ()
        if isinstance(bt, str):
            return (), (bt,)
        t = self.functype(bt)
        return t.params, t.results

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
        e = _E(f"{_p(c, 12)} ? {_p(a, 12)} : {_p(b, 13)}", 13, a.ty, fl, locs, u=a.u or b.u)
        e.nn = a.nn and b.nn
        self.push(e)

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
            self.spill_flags(F_CALL)
        e = self.gget.get(g)
        if e is None:
            e = self.gget[g] = _E(self.gname(g), 0, self.global_type(g), F_GLOB)
        self.stack.append(e)

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
        """The text of a constant data address: a string's label (``s_usage``, an ``enum``
        declared before the function), else the address of the item's object
        (``ADDR(tbl_1230) + 8``, see :meth:`data_obj`); None if unlabelled."""
        d = self.lm.data_label(addr)
        return None if d is None else self.label_ref(d)

    def label_ref(self, d: tuple) -> str:
        """:meth:`data_ref` of the data label ``d`` (:meth:`LiftModule.data_label`)."""
        ident, start, off, text = d
        if text is None or (self.dhook is not None and self.dhook.item_type(start) is not None):
            self.data_obj(ident, start)
            a = f"ADDR({ident})"
            return f"{a} + {off}" if off else a
        guard = "D_" + ident
        if guard not in self.decl_types:
            self.decl_types[guard] = (
                f"#ifndef KB_{guard}\n#define KB_{guard}\nenum {{ {ident} = {start} }};\n#endif"
            )
        return f"{ident} + {off}" if off else ident

    def data_obj(self, ident: str, start: int) -> list:
        """The object entry of data item ``ident`` (declared before the function as a macro
        over linear memory, see ``memory._data_decls``); its first use registers it as
        plain bytes, a typed item (``kbtool types apply``) as its type."""
        ob = self.dobj.get(ident)
        if ob is None:
            ob = [start, self.lm.data_size(start), "b", "", {}, ""]
            if self.dhook is not None:
                t = self.dhook.item_type(start)
                if t is not None:
                    ob[2] = "t"
                    ob[5] = t[0]
                    if t[1] and t[1] not in self.decl_types:
                        self.decl_types[t[1]] = t[2]
            self.dobj[ident] = ob
        return ob

    def i32_const(self, v: int) -> _E:
        # the module's cache: a value's text, or the data label of a labelled item's start
        # (its text names the item, declared per function by data_ref)
        cache = self.const_text
        cached: str | tuple | None = cache.get(v)
        if cached is None and v >= 256 and self.data_starts:
            d = self.lm.data_label(v)
            if d is not None and d[2] == 0:  # the start of a labelled item
                cached = d
                if len(cache) < 1_000_000:
                    cache[v] = d
        if isinstance(cached, str):
            text = cached
        elif cached is not None:
            text = self.label_ref(cached)
            if cached[3]:
                text += f' /* "{escape_text(cached[3], 60)}" */'
            return _E(text, 0, "i32", const=v)
        else:
            text = _i32_text(v)
            if v >= 256:
                s = self.lm.string_at(v & 0xFFFFFFFF)
                if s:
                    text = f'{text} /* "{escape_text(s, 60)}" */'
            if len(cache) < 1_000_000:
                cache[v] = text
        return _E(text, 0 if v >= 0 else 2, "i32", const=v)
