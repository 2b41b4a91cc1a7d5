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


def merge_followers(
    ops: list[int],
    args: list[tuple],
    blocks: list[Any],
    open_at: dict[int, int],
    first: int,
    members: list[int],
) -> list[tuple[int, int]] | None:
    """Join the tests following the chain ``members`` of the ``br_table`` at ``first``:
    returns the merged cases as (C case value, branch depth at ``first``), or None when
    nothing joins. Claims the followers' blocks and turns their instructions into ``nop``."""
    labels, default = args[first]
    if default != 0 or len(members) < 2:
        return None
    head = _index(ops, args, first, blocks[members[0]].start + 1, True)
    if head is None:
        return None
    x, c1, h0 = head
    cases: dict[int, int] = {}
    for k, d in enumerate(labels):
        if d:
            cases.setdefault(_wrap(k + c1), d)
    n = len(ops)
    j = blocks[members[0]].end + 1
    joined = False
    while j < n:
        op = ops[j]
        if op == OP_BLOCK:
            b = open_at.get(j, -1)
            if b < 0:
                break
            fb = blocks[b]
            t = fb.end - 1
            if fb.bt != "" or fb.claimed >= 0 or t <= j or ops[t] != OP_BR_TABLE:
                break
            lab2, def2 = args[t]
            fo = _index(ops, args, t, j + 1, False)
            if def2 != 0 or fo is None or fo[0] != x or fo[2] != j + 1:
                break
            c2 = fo[1]
            for k, d in enumerate(lab2):
                if d:
                    cases.setdefault(_wrap(k + c2), d)
            fb.claimed = first
            fb.form = "plain"
            for k in range(j + 1, t + 1):
                ops[k] = OP_NOP
            j = fb.end + 1
            joined = True
        elif (
            op == OP_LOCAL_GET
            and args[j][0] == x
            and j + 3 < n
            and ops[j + 1] == OP_I32_CONST
            and ops[j + 2] == OP_I32_EQ
            and ops[j + 3] == OP_BR_IF
        ):
            d = args[j + 3][0] + 1  # from inside the chain's second block
            if d >= len(members) or blocks[members[d]].bt != "":
                break  # a case label only where the chain has one; else keep the `if`
            cases.setdefault(_wrap(args[j + 1][0]), d)
            for k in range(j, j + 4):
                ops[k] = OP_NOP
            j += 4
            joined = True
        else:
            break
    if not joined:
        return None
    for k in range(h0 + 1, first):  # `switch (x)`, not `switch (x - c)`
        ops[k] = OP_NOP
    return sorted(cases.items())
