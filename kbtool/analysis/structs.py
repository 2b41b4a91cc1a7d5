"""Struct recovery (pure): constant-offset accesses from one base grouped into structs.

A small abstract interpretation of each walked body tracks values of the form
``base + const`` where a base is ``p<k>`` (parameter k, never reassigned) or
``<base>@<off>`` (the i32 loaded from ``base + off``, up to ``MAX_DEPTH`` levels).
Loads and stores through such a value record a field ``(offset, size, type)``; a call
whose argument j is exactly a base links the callee's ``p<j>`` to it, and linked bases
are merged into one struct (union-find). Unknown effects clear the abstract stack (a pop
of an empty stack is "unknown"), and join points (``loop``/``else``/``end``) forget the
locals that are assigned anywhere in the body, so a value is attributed only when the
straight-line code proves it. Work is bounded: bodies above ``MAX_BODY`` instructions
are skipped and at most ``budget`` instructions are walked per module (in index order).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from kbtool.wasm import ModuleAnalysis
from kbtool.wasm.opcodes import MNEMONICS

from .body import decode_body

MAX_BODY = 3000
MAX_DEPTH = 3
MAX_OFFSET = 1 << 16
DEFAULT_BUDGET = 600_000  # instructions walked per module (keeps analyze under ingest time:
# lightningcss measured 1.02x / 0.96x of ingest at 800k on the shared 2-core machine)

# --- per-op handling codes
(
    _RESET,
    _LGET,
    _LSET,
    _LTEE,
    _CONST,
    _ADD,
    _SUB,
    _LOAD,
    _STORE,
    _CALL,
    _CALLI,
    _JOIN,
    _GEN,
    _IF,
    _BRIF,
) = range(15)

_UNARY = (
    "eqz",
    "clz",
    "ctz",
    "popcnt",
    "abs",
    "neg",
    "sqrt",
    "ceil",
    "floor",
    "trunc",
    "nearest",
    "wrap",
    "extend",
    "convert",
    "demote",
    "promote",
    "reinterpret",
)
_BINARY = (
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "and",
    "or",
    "xor",
    "shl",
    "shr",
    "rotl",
    "rotr",
    "min",
    "max",
    "copysign",
    "eq",
    "ne",
    "lt",
    "gt",
    "le",
    "ge",
)


def _classify(op: int, mn: str):
    """``(code, pops, pushes, width, type)`` for one op id."""
    if not mn:
        return (_RESET, 0, 0, 0, "")
    if op == 0x20:
        return (_LGET, 0, 1, 0, "")
    if op == 0x21:
        return (_LSET, 1, 0, 0, "")
    if op == 0x22:
        return (_LTEE, 1, 1, 0, "")
    if op == 0x41:
        return (_CONST, 0, 1, 0, "")
    if op == 0x6A:
        return (_ADD, 2, 1, 0, "")
    if op == 0x6B:
        return (_SUB, 2, 1, 0, "")
    if op == 0x10:
        return (_CALL, 0, 0, 0, "")
    if op == 0x11:
        return (_CALLI, 0, 0, 0, "")
    if op in (0x03, 0x05, 0x0B):  # loop, else, end
        return (_JOIN, 0, 0, 0, "")
    if op == 0x04:
        return (_IF, 1, 0, 0, "")
    if op == 0x0D:
        return (_BRIF, 1, 0, 0, "")
    if op in (0x01, 0x02):  # nop, block
        return (_GEN, 0, 0, 0, "")
    head, _, tail = mn.partition(".")
    if "_lane" in mn or mn.startswith("memory.atomic") or mn == "atomic.fence":
        return (_RESET, 0, 0, 0, "")
    if ".load" in mn or ".store" in mn or ".atomic.rmw" in mn:
        t = _access_type(mn)
        w = _access_width(mn)
        if ".atomic.rmw" in mn:
            pops = 3 if mn.endswith("cmpxchg") or mn.endswith("cmpxchg_u") else 2
            return (_LOAD, pops, 1, w, t)
        if ".load" in mn and "splat" not in mn and "zero" not in mn and "x" not in tail:
            return (_LOAD, 1, 1, w, t)
        if ".store" in mn:
            return (_STORE, 2, 0, w, t)
        return (_RESET, 0, 0, 0, "")
    if tail == "const":
        return (_GEN, 0, 1, 0, "")
    if mn == "global.get" or mn == "memory.size":
        return (_GEN, 0, 1, 0, "")
    if mn in ("global.set", "drop"):
        return (_GEN, 1, 0, 0, "")
    if mn in ("select", "select t"):
        return (_GEN, 3, 1, 0, "")
    if mn == "memory.grow":
        return (_GEN, 1, 1, 0, "")
    if mn in ("memory.fill", "memory.copy", "memory.init"):
        return (_GEN, 3, 0, 0, "")
    if head in ("i32", "i64", "f32", "f64") and tail:
        opname = tail.split("_")[0]
        if opname in _UNARY:
            return (_GEN, 1, 1, 0, "")
        if opname in _BINARY:
            return (_GEN, 2, 1, 0, "")
    return (_RESET, 0, 0, 0, "")


def _access_width(mn: str) -> int:
    for token, w in (("8", 1), ("16", 2), ("32_", 4)):
        if f"load{token}" in mn or f"store{token}" in mn or f"rmw{token}" in mn:
            return w
    head = mn.split(".")[0]
    return {"i32": 4, "i64": 8, "f32": 4, "f64": 8, "v128": 16}.get(head, 0)


def _access_type(mn: str) -> str:
    head = mn.split(".")[0]
    w = _access_width(mn)
    if head in ("f32", "f64", "v128"):
        return head
    if w < (4 if head == "i32" else 8):
        sign = "u" if mn.endswith("_u") else "i"
        return f"{sign}{w * 8}"
    return head


_TABLE = [_classify(i, m) for i, m in enumerate(MNEMONICS)]


def _walk(data: bytes, a: ModuleAnalysis, f, fields, links) -> None:
    """Interpret one body; add ``fields[(func, base)]`` entries and call ``links``."""
    body = decode_body(data, f)
    m = a.module
    ftype = m.func_type(f.index)
    assigned = {imms[0] for op, imms in body if op in (0x21, 0x22)}
    params = {
        k: (f"p{k}", 0) for k, t in enumerate(ftype.params) if t == "i32" and k not in assigned
    }
    loc: dict[int, tuple | None] = dict(params)
    stack: list = []
    pop = stack.pop
    push = stack.append
    fi = f.index
    for op, imms in body:
        code, pops, pushes, width, typ = _TABLE[op]
        if code == _GEN:
            for _ in range(pops):
                if stack:
                    pop()
            for _ in range(pushes):
                push(None)
        elif code == _LGET:
            push(loc.get(imms[0]))
        elif code == _CONST:
            push(("#", imms[0]))
        elif code == _LSET or code == _LTEE:
            v = pop() if stack else None
            loc[imms[0]] = v
            if code == _LTEE:
                push(v)
        elif code == _ADD or code == _SUB:
            b = pop() if stack else None
            x = pop() if stack else None
            r = None
            if x is not None and b is not None:
                if b[0] == "#" and x[0] != "#":
                    r = (x[0], x[1] + b[1] if code == _ADD else x[1] - b[1])
                elif x[0] == "#" and b[0] != "#" and code == _ADD:
                    r = (b[0], b[1] + x[1])
            push(r)
        elif code == _LOAD:
            for _ in range(pops - 1):
                if stack:
                    pop()
            addr = pop() if stack else None
            r = None
            if addr is not None and addr[0] != "#":
                off = addr[1] + imms[1]
                if 0 <= off < MAX_OFFSET:
                    fields[(fi, addr[0])].append((off, width, typ))
                    if width == 4 and typ == "i32" and addr[0].count("@") < MAX_DEPTH:
                        r = (f"{addr[0]}@{off}", 0)
            push(r)
        elif code == _STORE:
            val = pop() if stack else None
            addr = pop() if stack else None
            if addr is not None and addr[0] != "#":
                off = addr[1] + imms[1]
                if 0 <= off < MAX_OFFSET:
                    ptr = val is not None and val[0] != "#" and val[1] == 0 and width == 4
                    fields[(fi, addr[0])].append((off, width, "ptr" if ptr else typ))
        elif code == _CALL or code == _CALLI:
            callee = imms[0]
            if code == _CALL:
                t = m.func_type(callee) if callee < m.num_functions else None
            else:
                t = m.types[callee] if callee < len(m.types) else None
                if stack:
                    pop()
            np = len(t.params) if t is not None else 0
            args = [pop() if stack else None for _ in range(np)][::-1]
            if code == _CALL:
                for j, v in enumerate(args):
                    if v is not None and v[0] != "#" and v[1] == 0:
                        links.append(((fi, v[0]), (callee, f"p{j}")))
            if t is None:
                stack.clear()
            else:
                for _ in t.results:
                    push(None)
        elif code == _JOIN:
            stack.clear()
            for k in assigned:
                loc.pop(k, None)
        elif code == _IF or code == _BRIF:
            if stack:
                pop()
            if code == _IF:
                stack.clear()
        else:  # _RESET
            stack.clear()


class _UF:
    def __init__(self) -> None:
        self.p: dict = {}

    def find(self, x):
        p = self.p
        p.setdefault(x, x)
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, x, y) -> None:
        rx, ry = self.find(x), self.find(y)
        if rx != ry:
            if ry < rx:
                rx, ry = ry, rx
            self.p[ry] = rx


def recover_structs(
    a: ModuleAnalysis, data: bytes, budget: int = DEFAULT_BUDGET, progress=None
) -> list[dict]:
    """Structs as plain dicts (see :mod:`kbtool.analysis` for the shape)."""
    m = a.module
    fields: dict[tuple[int, str], list] = defaultdict(list)
    links: list = []
    spent = 0
    todo = [
        f
        for f in a.functions
        if not f.imported
        and f.instr_count <= MAX_BODY
        and f.mem_ops
        and "i32" in m.func_type(f.index).params
    ]
    for n, f in enumerate(todo):
        if spent + f.instr_count > budget:
            break
        spent += f.instr_count
        _walk(data, a, f, fields, links)
        if progress is not None and n % 512 == 0:
            progress(n, len(todo))
    # a derived base "b@off" used as an address means field off of b holds a pointer
    for func, base in list(fields):
        if "@" in base:
            parent, _, off = base.rpartition("@")
            fields[(func, parent)].append((int(off), 4, "ptr"))
    uf = _UF()
    for node in fields:
        uf.find(node)
    for x, y in links:
        uf.union(x, y)
    groups: dict = defaultdict(list)
    for node in fields:
        groups[uf.find(node)].append(node)
    out = []
    for _root, nodes in groups.items():
        acc: dict[int, Counter] = defaultdict(Counter)
        for node in nodes:
            for off, w, t in fields[node]:
                acc[off][(w, t)] += 1
        if len(acc) < 2:
            continue
        nodes.sort()
        src = nodes[0]
        flist = []
        for off in sorted(acc):
            c = acc[off]
            (w, t), _ = max(
                c.items(), key=lambda kv: (kv[1], kv[0][1] == "ptr", kv[0][0], kv[0][1])
            )
            if any(tt == "ptr" for (_, tt) in c):
                w, t = 4, "ptr"
            flist.append({"offset": off, "size": w, "type": t, "name": f"field_{off}"})
        out.append(
            {
                "name": f"struct_f{src[0]}_{src[1].replace('@', '_at')}",
                "source_function": src[0],
                "fields": flist,
                "members": [{"func_index": fi, "base": b} for fi, b in nodes],
            }
        )
    out.sort(key=lambda s: (s["source_function"], s["name"]))
    return out
