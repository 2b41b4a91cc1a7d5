"""One C ``switch`` for a chain of ``br_table`` tests on the same value (pass 1).

LLVM splits a sparse ``switch`` into several jump tables, each on the value minus its own
offset, the next one in the first one's default::

    block block ... block                       ;; the first table's case blocks
      local.tee x  i32.const 110  i32.sub  br_table ...  0   ;; default: fall on
    end
    block  local.get x  i32.const 10  i32.sub  br_table ...  0  end   ;; a follower
    local.get x  i32.const 34  i32.eq  br_if d  ;; a single case

When the first table became a ``switch`` chain (:func:`.structure._switch_chains`), the
followers right after its default label join it: ``switch (x)`` with every case re-based
(case ``k`` of ``x - c`` is ``case k + c``), the first test to claim a value keeping it (a
later one never sees it), and the followers' own default (falling on) the merged default.
Their targets are the chain's own case blocks, at the same branch depths, so their cases
land on the chain's labels instead of ``goto`` trampolines. The index arithmetic and the
followers' instructions become ``nop`` for pass 2.
"""

from __future__ import annotations

from typing import Any

from kbtool.wasm.opcodes import OP_BY_NAME

from .opnames import (
    OP_BLOCK,
    OP_BR_IF,
    OP_BR_TABLE,
    OP_I32_ADD,
    OP_I32_CONST,
    OP_I32_SUB,
    OP_LOCAL_GET,
    OP_LOCAL_TEE,
    OP_NOP,
)

OP_I32_EQ = OP_BY_NAME["i32.eq"]
OP_I32_NE = OP_BY_NAME["i32.ne"]


def _wrap(v: int) -> int:
    """``v`` as a signed 32-bit value (a C case label matches the switch value mod 2^32)."""
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


def _index(ops: list[int], args: list[tuple], i: int, lo: int, tee: bool) -> tuple | None:
    """The index of the ``br_table`` at ``i`` as (local, offset, first index instruction):
    ``local.get x`` (or ``local.tee x`` when ``tee``), optionally ``i32.const c`` and
    ``i32.sub``/``i32.add``; none before ``lo``."""
    getters = (OP_LOCAL_GET, OP_LOCAL_TEE) if tee else (OP_LOCAL_GET,)
    j = i - 1
    if j >= lo and ops[j] in getters:
        return args[j][0], 0, j
    if j - 2 >= lo and ops[j] in (OP_I32_SUB, OP_I32_ADD) and ops[j - 1] == OP_I32_CONST:
        c = args[j - 1][0]
        if ops[j - 2] in getters:
            return args[j - 2][0], c if ops[j] == OP_I32_SUB else -c, j - 2
    return None


#: the comparisons a guard may use: (C operator, unsigned)
_CMP = {
    OP_BY_NAME["i32.gt_s"]: (">", False),
    OP_BY_NAME["i32.gt_u"]: (">", True),
    OP_BY_NAME["i32.ge_s"]: (">=", False),
    OP_BY_NAME["i32.ge_u"]: (">=", True),
    OP_BY_NAME["i32.lt_s"]: ("<", False),
    OP_BY_NAME["i32.lt_u"]: ("<", True),
    OP_BY_NAME["i32.le_s"]: ("<=", False),
    OP_BY_NAME["i32.le_u"]: ("<=", True),
}


_NEGATE = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


class Merged:
    """A chain's merged cases: (C case value, branch depth at the first ``br_table``), the
    depth its default values go to, and for a guarded chain the guard (local, C operator,
    unsigned, constant) with the depth its default values go to when the guard holds."""

    __slots__ = ("cases", "default", "guard", "gdefault")

    def __init__(self, cases: list[tuple[int, int]], default: int, guard: Any, gdefault: int):
        self.cases = cases
        self.default = default
        self.guard: tuple[int, str, bool, int] | None = guard
        self.gdefault = gdefault

    def guard_test(self) -> tuple[int, int, tuple[int, str, bool, int, int]] | None:
        """Where the ``default:`` label goes (the nearer of the two defaults) and the test
        under it that sends the other side's values on: (label depth, other depth, (local,
        C operator, unsigned, constant, depth of the other from the label's parent))."""
        g = self.guard
        if g is None or self.gdefault == self.default:
            return None
        lo, hi = sorted((self.default, self.gdefault))
        op = g[1] if self.gdefault == hi else _NEGATE[g[1]]
        return lo, hi, (g[0], op, g[2], g[3], hi - lo - 1)


def _holds(guard: tuple[int, str, bool, int], v: int) -> bool:
    """Whether the guard holds for the switch value ``v`` (a signed 32-bit value)."""
    _x, op, unsigned, k = guard
    if unsigned:
        v &= 0xFFFFFFFF
        k &= 0xFFFFFFFF
    else:
        k = _wrap(k)
    if op == ">":
        return v > k
    if op == ">=":
        return v >= k
    if op == "<":
        return v < k
    return v <= k


def _guard(ops: list[int], args: list[tuple], blocks: list[Any], m0: int, h0: int) -> Any:
    """``local.get x; i32.const K; i32.<cmp>; br_if 0`` opening the chain's innermost block
    right before the first table's index (LLVM's binary search over case ranges): the
    values it holds for skip the first table and go on to the followers."""
    s = blocks[m0].start
    if h0 != s + 5 or ops[s + 1] != OP_LOCAL_GET or ops[s + 2] != OP_I32_CONST:
        return None
    cmp = _CMP.get(ops[s + 3])
    if cmp is None or ops[s + 4] != OP_BR_IF or args[s + 4][0] != 0:
        return None
    return args[s + 1][0], cmp[0], cmp[1], args[s + 2][0]


def _scan_tests(ops, args, blocks, open_at, members, x, j, ne: bool) -> tuple:
    """The tests on local ``x`` from instruction ``j`` on (right after the chain's innermost
    block): a list of (kind, position, {value: raw depth}, raw default, level) with kind
    "fo" (a block around a table), "eq" (``i32.eq; br_if``), "ne" (``i32.ne; br_if``: one
    value falls on; only when ``ne``) or "trail" (a table ending the chain's block
    ``level``), the instructions they use, the blocks they claim and the level reached (the
    code after the tests follows the end of member ``level - 1``)."""
    n = len(ops)
    tests: list[tuple] = []
    used: list[int] = []
    claimed: list[int] = []
    level = 1
    while j < n and level < len(members):
        op = ops[j]
        if op == OP_BLOCK:
            b = open_at.get(j, -1)
            if b < 0:
                break
            fb = blocks[b]
            t = fb.end - 1
            if fb.bt != "" or fb.claimed >= 0 or t <= j or ops[t] != OP_BR_TABLE:
                break
            fo = _index(ops, args, t, j + 1, False)
            if fo is None or fo[0] != x or fo[2] != j + 1:
                break
            lab, dflt = args[t]
            tests.append(("fo", j, {_wrap(k + fo[1]): d for k, d in enumerate(lab)}, dflt, level))
            claimed.append(b)
            used += range(j + 1, t + 1)
            j = fb.end + 1
            continue
        if op != OP_LOCAL_GET or args[j][0] != x:
            break
        t = blocks[members[level]].end - 1
        tail = _index(ops, args, t, j, False) if ops[t] == OP_BR_TABLE else None
        if tail is not None and tail[0] == x and tail[2] == j:
            lab, dflt = args[t]
            tests.append(
                ("trail", j, {_wrap(k + tail[1]): d for k, d in enumerate(lab)}, dflt, level)
            )
            used += range(j, t + 1)
            j = t + 2
            level += 1
            continue
        if (
            j + 3 < n
            and ops[j + 1] == OP_I32_CONST
            and (ops[j + 2] == OP_I32_EQ or (ne and ops[j + 2] == OP_I32_NE))
        ):
            if ops[j + 3] != OP_BR_IF or args[j + 3][0] + level >= len(members):
                break  # a case label only where the chain has one; else keep the `if`
            v, d = _wrap(args[j + 1][0]), args[j + 3][0]
            if ops[j + 2] == OP_I32_EQ:
                tests.append(("eq", j, {v: d}, -1, level))
            else:  # `x != v`: every other value branches, `v` falls on
                tests.append(("ne", j, {v: -1}, d, level))
            used += range(j, j + 4)
            j += 4
            continue
        break
    return tests, used, claimed, level


def _depth(kind: str, raw: int, level: int) -> int:
    """A test's branch depth as a depth at the first table (-1: on to the next test)."""
    if kind == "fo":
        return -1 if raw == 0 else raw - 1 + level
    if (kind == "eq" or kind == "ne") and raw < 0:
        return -1
    return raw + level


def merge_followers(
    ops: list[int],
    args: list[tuple],
    blocks: list[Any],
    open_at: dict[int, int],
    first: int,
    members: list[int],
) -> Merged | None:
    """Join the tests following the chain ``members`` of the ``br_table`` at ``first``, or
    None when nothing joins. Claims the followers' blocks and turns their instructions (and
    a guard's) into ``nop``."""
    labels, default = args[first]
    if len(members) < 2:
        return None
    head = _index(ops, args, first, blocks[members[0]].start + 1, True)
    if head is None:
        return None
    x, c1, h0 = head
    guard = _guard(ops, args, blocks, members[0], h0)
    if guard is not None and guard[0] != x:
        return None
    ends = [blocks[m].end for m in members]
    # `x != v` joins a chain switchnest widened only (elsewhere the C stays as it was)
    nested = blocks[members[0]].merged is not None
    tests, used, claimed, lf = _scan_tests(
        ops, args, blocks, open_at, members, x, ends[0] + 1, nested
    )
    if not tests and not nested:
        return None  # (a table :mod:`.switchnest` widened is printed by value even alone)
    # the blocks whose ends lead into the tests: plain, and branched to by the tests only
    consumed = set(used)
    consumed.add(first)
    if guard is not None:
        consumed.update(range(blocks[members[0]].start + 1, h0))
    last = max((t[1] for t in tests), default=-1)
    for k in range(lf):
        b = blocks[members[k]]
        if b.bt != "":
            return None
        # a branch to an end with tests after it would skip them once merged
        if b.end < last and any(i not in consumed for i, _op, _in in b.sites):
            return None
    tests.insert(0, ("first", first, {_wrap(k + c1): d for k, d in enumerate(labels)}, default, 0))
    pos = [t[1] for t in tests]

    def after(d: int) -> int:
        """The first test after the end of member ``d``."""
        e = ends[d]
        return next((k for k, p in enumerate(pos) if p > e), len(tests))

    def final(v: int | None, k: int) -> int:
        """Where the value ``v`` (None: one no test names) lands, from test ``k`` on."""
        while k < len(tests):
            kind, _p, table, dflt, level = tests[k]
            raw = table.get(v, dflt) if v is not None else dflt
            d = _depth(kind, raw, level)
            if d < 0:
                k += 1
            elif d < lf:
                k = after(d)
            else:
                return d
        return lf - 1  # past every test: the code after member lf - 1's end

    default = final(None, 0)
    gdefault = final(None, 1) if guard is not None else default
    if gdefault != default and min(default, gdefault) >= len(members):
        return None  # both defaults outside the chain: no place for the guard's test
    values: set[int] = set()
    for t in tests:
        values.update(t[2])
    cases: list[tuple[int, int]] = []
    for v in sorted(values):
        held = guard is not None and _holds(guard, v)
        d = final(v, 1 if held else 0)
        if d != (gdefault if held else default):
            if d == min(default, gdefault) and guard is not None:
                return None  # its case label would sit above the guard's test
            cases.append((v, d))
    for b in claimed:
        blocks[b].claimed = first
        blocks[b].form = "plain"
    for k in consumed:
        if k != first:
            ops[k] = OP_NOP
    for k in range(h0 + 1, first):  # `switch (x)`, not `switch (x - c)`
        ops[k] = OP_NOP
    return Merged(cases, default, guard, gdefault)
