"""One ``br_table`` for a table whose default runs a second table on the same value (pass 1).

LLVM lowers a large sparse ``switch`` as a jump table over one range whose default, right
after the table's innermost block, opens the case blocks of a second table over another
range of the same value::

    block ... block block                        ;; E (outer case 1) .. F (outer default)
        local.tee x  i32.const 174  i32.sub  br_table 3 2 2 1 0
      end                                        ;; F: the outer default lands here
      block block block                          ;; G H I: the inner table's case blocks
        local.get x  i32.const 167  i32.sub  br_table 2 4 1 0
      end ...

Lifted as is, that is ``switch (x - 174) { default: switch (x - 167) { case 1: goto L6;
... } ... }``: an inner switch whose cases jump to the outer one's labels. Here the outer
table is folded into the inner one: the inner table takes every value the outer table sent
elsewhere (its depths re-based at the inner table: outer depth ``d >= 1`` is ``d - 1 + n``
for the ``n`` inner case blocks), over the union of both ranges; the outer index arithmetic
and table become no-ops (a ``local.tee`` of the index stays as ``local.set``). Pass 1's
chain then reaches up through the outer case blocks (:func:`.structure._switch_chains`), so
C shows one ``switch (x)`` with every case label, and :func:`.switchmerge.merge_followers`
merges the tests after it as for any chain.

Same semantics by construction: between the two tables there are only block openings and
the inner index (``local.get x``, a constant, a subtraction), the outer innermost block is
branched to by its table only, and at the outer table the stack holds the index alone (so
the block still ends with an empty stack once the table is gone).
"""

from __future__ import annotations

from typing import Any

from .decode import _STACK_EFFECT
from .opnames import (
    OP_BLOCK,
    OP_BR_IF,
    OP_BR_TABLE,
    OP_I32_CONST,
    OP_I32_SUB,
    OP_IF,
    OP_LOCAL_GET,
    OP_LOCAL_SET,
    OP_LOCAL_TEE,
    OP_LOOP,
    OP_NOP,
)
from .switchmerge import OP_I32_EQ, Merged, _index, _wrap

#: the widest merged table (entries): beyond it the two tables stay apart
MAX_ENTRIES = 1 << 12
_I32_MIN = -(1 << 31)
_I32_MAX = (1 << 31) - 1


def _height_before(
    ops: list[int], args: list[tuple], blocks: list[Any], open_at, b: int, h0: int
) -> int | None:
    """The stack height in block ``b`` (from its start) right before instruction ``h0`` at
    its top level, or None when not known (a call, a branch carrying values, an opener
    with a type index)."""
    j = blocks[b].start + 1
    h = 0
    while j < h0:
        op = ops[j]
        if op == OP_BLOCK or op == OP_LOOP or op == OP_IF:
            nb = open_at.get(j, -1)
            if nb < 0:
                return None
            blk = blocks[nb]
            if op == OP_IF:
                h -= 1
            if blk.bt == "":
                pass
            elif isinstance(blk.bt, str):
                h += 1
            else:
                return None
            if h < 0:
                return None
            j = blk.end + 1
            continue
        if op == OP_LOCAL_GET:
            h += 1
        elif op == OP_BR_IF:
            t = b
            for _ in range(args[j][0]):
                t = blocks[t].parent
                if t <= 0:
                    return None
            if blocks[t].bt != "":
                return None
            h -= 1
        else:
            eff = _STACK_EFFECT[op]
            if eff is None or eff[1] < 0:
                return None
            h -= eff[0]
            if h < 0:
                return None
            h += eff[1]
        j += 1
    return h


def _inner(ops: list[int], args: list[tuple], open_at, x: int, j: int) -> tuple | None:
    """The inner table from instruction ``j`` (right after the outer innermost block's
    end): the equality tests on ``x`` before it ((position, value, depth there)), the
    opened blocks (outermost first), the table's position and its index."""
    opened = []
    eqs = []
    n = len(ops)
    while (
        j + 3 < n
        and ops[j] == OP_LOCAL_GET
        and args[j][0] == x
        and ops[j + 1] == OP_I32_CONST
        and ops[j + 2] == OP_I32_EQ
        and ops[j + 3] == OP_BR_IF
    ):
        eqs.append((j, args[j + 1][0], args[j + 3][0]))
        j += 4
    while j < n and ops[j] == OP_BLOCK:
        b = open_at.get(j, -1)
        if b < 0:
            return None
        opened.append(b)
        j += 1
    if len(opened) < 2:
        return None  # a block around a table alone: a follower (.switchmerge) if anything
    # the index: local.get x [i32.const c; i32.sub/add]; then the table
    for t in (j + 1, j + 3):
        if t < n and ops[t] == OP_BR_TABLE:
            ix = _index(ops, args, t, j, False)
            if ix is not None and ix[2] == j:
                return eqs, opened, t, ix
    return None


def _fold(
    ops: list[int],
    args: list[tuple],
    blocks: list[Any],
    open_at: dict[int, int],
    i: int,
    f: int,
    inner_at: dict[int, int],
    tables: list,
) -> bool:
    """Fold the table at ``i`` (innermost block ``f``) into the table right after ``f``'s
    end when the shape holds; True when done."""
    fb = blocks[f]
    if fb.kind != "block" or fb.bt != "" or fb.claimed >= 0 or fb.end != i + 1:
        return False
    if any(s[0] != i for s in fb.sites):
        return False  # another branch lands between the tables
    head = _index(ops, args, i, fb.start + 1, True)
    if head is None:
        return False
    x, c1, h0 = head
    inn = _inner(ops, args, open_at, x, fb.end + 1)
    if inn is None:
        return False
    eqs, opened, j, (x2, c2, h2) = inn
    k = inner_at.get(j, -1)
    if x2 != x or k < 0 or blocks[opened[0]].parent != fb.parent:
        return False
    ib = blocks[opened[-1]]
    if ib.end != j + 1 or ib.claimed >= 0 or any(blocks[b].bt != "" for b in opened):
        return False
    want = 1 if ops[h0] == OP_LOCAL_TEE else 0  # a tee consumes the index's value
    if _height_before(ops, args, blocks, open_at, f, h0) != want:
        return False
    l1, d1 = args[i]
    l2, d2 = args[j]
    n_in = len(opened)
    has_const = h2 + 1 < j
    lo = min(c1, c2) if has_const else 0
    hi = max(c1 + len(l1), c2 + len(l2))
    if lo > c1 or lo < _I32_MIN or hi - 1 > _I32_MAX or hi - lo > MAX_ENTRIES:
        return False

    # the tests between the tables: the first to claim a value keeps it
    eq: dict[int, int] = {}
    for _p, v, d in eqs:
        eq.setdefault(_wrap(v), d + n_in)
    lo = min([lo] + list(eq))
    hi = max([hi] + [v + 1 for v in eq])
    if lo > c1 or hi - lo > MAX_ENTRIES or (lo < c2 and not has_const):
        return False

    def at(v: int) -> int:
        k1 = v - c1
        od = l1[k1] if 0 <= k1 < len(l1) else d1
        if od:
            return od - 1 + n_in
        if v in eq:
            return eq[v]
        k2 = v - c2
        return l2[k2] if 0 <= k2 < len(l2) else d2

    labels = [at(v) for v in range(lo, hi)]
    default = d1 - 1 + n_in if d1 else d2
    # the stack of blocks at the inner table, innermost first: re-aim the branch sites
    stack = list(reversed(opened))
    b = fb.parent
    while len(stack) <= max(labels + [default]) and b > 0:
        stack.append(b)
        b = blocks[b].parent
    if len(stack) <= max(labels + [default]):
        return False
    for d in set(l1) | {d1}:
        t = fb if d == 0 else blocks[stack[d - 1 + n_in]]
        t.sites = [s for s in t.sites if s[0] != i]
    for p, _v, d in eqs:
        t = blocks[stack[d + n_in]]
        t.sites = [s for s in t.sites if s[0] != p + 3]
        ops[p : p + 4] = [OP_NOP] * 4
    targets = {stack[d] for d in set(labels) | {default}}
    for t in tables[k][2] - targets:
        blocks[t].sites = [s for s in blocks[t].sites if s[0] != j]
    for t in targets:
        if not any(s[0] == j for s in blocks[t].sites):
            blocks[t].sites.append((j, OP_BR_TABLE, opened[-1]))
        if blocks[t].kind == "loop":
            for b in opened:  # conservative: the inner blocks are crossed to a loop
                blocks[b].cross_loop += 1
    args[j] = (type(l2)(labels), default)
    if has_const:
        ops[h2 + 2] = OP_I32_SUB
        args[h2 + 1] = (lo,)
    tables[k] = (j, tables[k][1], targets)
    # the outer table and its index arithmetic are gone; a tee of the index stays a set
    for p in range(h0 + 1, i + 1):
        ops[p] = OP_NOP
    if ops[h0] == OP_LOCAL_TEE:
        ops[h0] = OP_LOCAL_SET
    else:
        ops[h0] = OP_NOP
    # marks the inner chain as merged: its cases are printed as values (`switch (x)`)
    ib.merged = Merged([], 0, None, 0)
    return True


def merge_nested(
    ops: list[int], args: list[tuple], blocks: list[Any], open_at: dict[int, int], tables: list
) -> list:
    """``tables`` (pass 1's (instr index, innermost block, target blocks)) without the
    tables folded into a following one on the same value (see the module docstring)."""
    if len(tables) < 2:
        return tables
    inner_at = {t[0]: k for k, t in enumerate(tables)}
    gone: set[int] = set()
    for i, f, _targets in list(tables):
        if _fold(ops, args, blocks, open_at, i, f, inner_at, tables):
            gone.add(i)
    if not gone:
        return tables
    return [t for t in tables if t[0] not in gone]
