"""Pass 1: match blocks, record every branch site and decide each block's C form
(inlined, ``if``-converted, ``do { } while (0)``, ``while``/``do``-``while`` loops, ``switch``
chains, or a label for ``goto``).
"""

from __future__ import annotations

from typing import Any, Final

from .base import _BR_ON, _BR_ON_CAST, _OPENERS, MAX_BREAK_WALK, LiftError, _Budget
from .opnames import (
    OP_BR,
    OP_BR_IF,
    OP_BR_TABLE,
    OP_CATCH,
    OP_CATCH_ALL,
    OP_DELEGATE,
    OP_ELSE,
    OP_END,
)
from .switchmerge import Merged, merge_followers
from .switchnest import merge_nested

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
        "merged",
        "guarded",
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
        # on a switch chain's innermost block: the cases of the tests merged into it
        # (C case value, branch depth at the br_table); see .switchmerge
        self.merged: Merged | None = None
        # on the block of a guarded merged switch's `default:`: the guard and the depth
        # (from the parent) its default values branch to
        self.guarded: tuple[int, str, bool, int, int] | None = None


#: the C-form kind of each opener by op (``_OPENERS``), "" for the other ops below 32
_OPEN_KIND: Final[tuple[str, ...]] = tuple(_OPENERS.get(op, "") for op in range(32))
assert all(op < 32 for op in _OPENERS)


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
        # the openers' kinds by op (all below 32): a tuple read, not a dict look-up per op
        kind = _OPEN_KIND[op] if op < 32 else ""
        if kind:
            b = len(blocks)
            blocks.append(_Blk(kind, i, stack[-1], imms[0]))
            open_at[i] = b
            stack.append(b)
            acc_loop.append(0)
            acc_blk.append(0)
        elif op == OP_END or op == OP_DELEGATE:
            if not stack:
                raise LiftError("unbalanced end")
            if op == OP_DELEGATE and blocks[stack[-1]].kind != "try":
                raise LiftError("delegate outside a try")
            b = stack.pop()
            blk = blocks[b]
            blk.end = i
            blk.cross_loop = cl = acc_loop.pop()
            blk.cross_block = cb = acc_blk.pop()
            if stack:
                # `a[k] = a[k] + x`, not `a[k] += x`: mypyc compiles an indexed `+=` as
                # a generic PyNumber_InPlaceAdd, the plain form as a native int add
                acc_loop[-1] = acc_loop[-1] + cl
                acc_blk[-1] = acc_blk[-1] + cb
            order.append(b)
        elif op == OP_ELSE or op == OP_CATCH or op == OP_CATCH_ALL:
            # the decoder checks nesting only: an else/catch must belong to its if/try
            want = "if" if op == OP_ELSE else "try"
            if len(stack) < 2 or blocks[stack[-1]].kind != want:
                raise LiftError("else outside an if" if op == OP_ELSE else "catch outside a try")
            if blocks[stack[-1]].else_at < 0:
                blocks[stack[-1]].else_at = i
            elif op == OP_ELSE:
                raise LiftError("second else in an if")
        elif op == OP_BR or op == OP_BR_IF or op == OP_BR_TABLE or op in _BR_ON:
            depths: list[int]
            if op == OP_BR_TABLE:
                depths = sorted(set(imms[0]) | {imms[1]})
            else:
                depths = [imms[1] if op in _BR_ON_CAST else imms[0]]
            if op == OP_BR_TABLE and depths[-1] < len(stack):
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
                    acc_loop[-1] = acc_loop[-1] + 1
                    acc_loop[-1 - d] = acc_loop[-1 - d] - 1
                elif op != OP_BR_TABLE and t:
                    # and on the way to a block: a do-while(0) there would eat its break
                    acc_blk[-1] = acc_blk[-1] + 1
                    acc_blk[-1 - d] = acc_blk[-1 - d] - 1
    if stack:
        raise LiftError("function body not closed by end")
    tables = merge_nested(ops, args, blocks, open_at, tables)
    switches = _switch_chains(blocks, tables, ops, args, open_at)
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
            if op == OP_BR_TABLE:
                continue
            recount[inner] = recount[inner] + 1
            recount[t] = recount[t] - 1
        budget.spend(len(bt_.sites))
    for b in order:  # children end before their parents
        if b:
            up = blocks[b].parent
            recount[up] = recount[up] + recount[b]
    for b in order:
        blk = blocks[b]
        if blk.claimed < 0 and blk.kind == "block":
            blk.cross_block = recount[b]
            _decide(blocks, b, budget)
    return blocks, open_at, switches


def _switch_chains(blocks, tables, ops, args, open_at) -> dict[int, list[int]]:
    """``br_table`` as the last instruction of nested plain blocks (LLVM's switch) becomes a
    C ``switch`` whose case labels sit at the block ends: returns {instr index: chain of
    block ids, innermost first}. The chain blocks lose their braces; the outermost one
    closes the switch (form ``switchtail``); the tests following it on the same value
    join it (:func:`.switchmerge.merge_followers`)."""
    out: dict[int, list[int]] = {}
    for i, inner, targets in tables:
        members: list[int] = []
        cur = inner
        while cur > 0:
            b = blocks[cur]
            if b.kind != "block" or b.claimed >= 0:
                break
            if b.bt != "" and (not isinstance(b.bt, str) or cur in targets):
                break  # a value-carrying block joins only as a middle member
            if not members and b.end != i + 1:
                break
            members.append(cur)
            cur = b.parent
        last = max((k for k, m in enumerate(members) if m in targets), default=-1)
        if last < 0:
            continue
        members = members[: last + 1]
        for k, m in enumerate(members):
            # a value-carrying middle member: the branches to its end inside the switch
            # become gotos; worth it only for more cases beyond it than those branches
            if blocks[m].bt != "" and blocks[m].sites:
                gain = sum(1 for x in members[k + 1 :] if x in targets)
                if len(blocks[m].sites) >= gain:
                    members = members[:k]
                    break
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
        # the tests on the same value in its default join it (they are claimed here,
        # before the loop reaches their own tables)
        mg = blocks[members[0]].merged = merge_followers(ops, args, blocks, open_at, i, members)
        gt = mg.guard_test() if mg is not None else None
        if gt is not None:
            blocks[members[gt[0]]].guarded = gt[2]
    return out


def _decide(blocks: list[_Blk], b: int, budget: _Budget) -> None:
    blk = blocks[b]
    bt = blk.bt
    simple = bt == ""
    if blk.kind == "loop":
        s = blk.sites
        if (
            simple
            and len(s) == 1
            and s[0][1] == OP_BR_IF
            and s[0][0] == blk.end - 1
            and s[0][2] == b
        ):
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
        and all(op == OP_BR_IF and inner == b for _i, op, inner in blk.sites)
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
            if op == OP_BR_TABLE:
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
