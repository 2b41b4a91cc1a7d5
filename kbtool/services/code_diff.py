"""The per-function diff: two listings of one logical function aligned line by line, what
changed marked (kind of change, character spans), and a unified diff of the lifted C.

The service path reads the disassembly records (:mod:`kbtool.lift.disasm`) for every field
it compares (mnemonic, operands, note, callee, branch targets) and the renderer
(:mod:`kbtool.render.disasm`) for the text and token positions it shows; it never parses
its own listing. :func:`diff_lines` also takes listings as text (a file, a hand-written
body in a test): those are read by :func:`_lines_from_text`, the one reader of the format.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kbtool.kb import queries
from kbtool.kb.errors import UnknownFunctionError
from kbtool.lift.disasm import Listing
from kbtool.render.disasm import (
    head_lines,
    indent,
    instr_text,
    note_text,
    operand_text,
    operand_tokens,
    tail_lines,
)
from kbtool.services.code_function import function_code
from kbtool.services.code_prepared import code_module

# the immediates' numbers (and a local's name's), normalised in the alignment key
_NUMBER = re.compile(r"-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)|nan|[-+]?inf")


def _kind(mnemonic: str) -> str:
    if mnemonic in ("call", "return_call", "ref.func"):
        return "callee"
    if mnemonic.endswith(".const"):
        return "const"
    if ".load" in mnemonic or ".store" in mnemonic or ".atomic." in mnemonic:
        return "offset"
    if mnemonic.startswith("global."):
        return "global"
    if mnemonic.startswith("call_indirect") or mnemonic.startswith("return_call_indirect"):
        return "type"
    return "operand"


class _Token(NamedTuple):
    """An operand or note token of a line: its character span and text."""

    start: int
    end: int
    text: str


@dataclass(slots=True)
class _Line:
    text: str  # the line without its file offset
    key: str  # indent + mnemonic + operand shape (numbers and names normalised)
    mnemonic: str = ""
    operands: str = ""  # immediates as shown (without the note)
    note: str = ""  # ";; ..." (without the spaces before it)
    tokens: list[_Token] = field(default_factory=list)  # operand and note tokens
    callee: int | None = None  # a callee shown by its index (``func[N] <unnamed>``)
    openers: tuple[int, ...] | None = None  # a branch: the line of each label's opener, or -1


def _raw(line: str) -> _Line:
    """A header, locals or note line: compared as it is."""
    return _Line(line, "\0" + line)


def _lines_from_listing(listing: Listing) -> list[_Line]:
    out = [_raw(line) for line in head_lines(listing)]
    base = len(out)
    for ins in listing.instrs:
        ind, mn = indent(ins), ins.mnemonic
        ops, note = operand_text(ins), note_text(ins)
        ref = ins.ref
        if _kind(mn) == "callee":
            shape = "@"
        else:
            if ref is not None and ref.kind == "global":
                shape = "@" if ref.name else "#"
            elif ref is not None and ref.kind == "local":
                shape = "#" + (f" <{_NUMBER.sub('#', ref.name)}>" if ref.name else "")
            else:
                shape = _NUMBER.sub("#", ins.operands)
            if note:
                shape += "  " if ops else " "
        head = len(ind) + len(mn)
        tokens = []
        pos = head + 1
        for tok in operand_tokens(ins):
            tokens.append(_Token(pos, pos + len(tok), tok))
            pos += len(tok) + 1
        if note:
            pos = head + 1 + len(ops) + 2 if ops else head + 2
            tokens.append(_Token(pos, pos + len(note), note))
        out.append(
            _Line(
                ind + instr_text(ins),
                f"{ind}{mn} {shape}",
                mn,
                ops,
                note,
                tokens,
                ref.index if ref is not None and ref.kind == "func" and not ref.name else None,
                tuple(base + t if t >= 0 else -1 for t in ins.targets) if ins.targets else None,
            )
        )
    out += [_raw(line) for line in tail_lines(listing)]
    return out


# listings given as text: " 011a39:   global.get $__stack_pointer  ;; note"
_LINE = re.compile(r"^ ([0-9a-f]+): ( *)(\S+) ?(.*)$")
_FUNC_REF = re.compile(r"\$\S+|func\[\d+\] <[^>]*>")
_TOKEN = re.compile(r"func\[\d+\] <[^>]*>|;;.*|\S+")
_CALLEE_IDX = re.compile(r"func\[(\d+)\]")


def _lines_from_text(mnemonics: str) -> list[_Line]:
    """Lines of a listing given as text (the service itself passes records)."""
    out = []
    stack: list[int] = []
    for line in mnemonics.splitlines():
        m = _LINE.match(line)
        if m is None:
            out.append(_raw(line))
            continue
        ind, mnemonic, rest = m.group(2), m.group(3), m.group(4)
        cut = (" " + rest).find(" ;; ")
        operands, note = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
        callee = _kind(mnemonic) == "callee"
        shape = "@" if callee else _NUMBER.sub("#", _FUNC_REF.sub("@", operands))
        text = ind + mnemonic + (" " + rest if rest else "")
        x = _Line(
            text,
            f"{ind}{mnemonic} {shape}",
            mnemonic,
            operands.strip(),
            note,
            [
                _Token(t.start(), t.end(), t.group(0))
                for t in _TOKEN.finditer(text, len(ind) + len(mnemonic))
            ],
        )
        ci = _CALLEE_IDX.match(x.operands) if callee else None
        x.callee = int(ci.group(1)) if ci else None
        if mnemonic in _OPENERS:
            stack.append(len(out))
        elif mnemonic == "end":
            if stack:
                stack.pop()
        elif mnemonic in _BRANCHES:
            try:
                depths = [int(t) for t in x.operands.split()]
            except ValueError:
                depths = None
            if depths is not None:
                x.openers = tuple(stack[-1 - d] if d < len(stack) else -1 for d in depths)
        out.append(x)
    return out


def _lines(listing: Listing | str) -> list[_Line]:
    return _lines_from_text(listing) if isinstance(listing, str) else _lines_from_listing(listing)


def _changed_spans(a: _Line, b: _Line) -> tuple[list[list[int]], list[list[int]]]:
    """Character spans of the operand tokens that differ, on each side."""
    if _kind(a.mnemonic) == "callee":  # the whole reference (a name may hold spaces)

        def whole(x: _Line) -> list[list[int]]:
            start = len(x.text) - len(x.text.lstrip(" ")) + len(x.mnemonic) + 1
            return [[start, start + len(x.operands)]]

        return whole(a), whole(b)
    ta, tb = a.tokens, b.tokens
    sa: list[list[int]] = []
    sb: list[list[int]] = []
    for i in range(max(len(ta), len(tb))):
        x = ta[i] if i < len(ta) else None
        y = tb[i] if i < len(tb) else None
        if x is not None and y is not None and x.text == y.text:
            continue
        if x is not None:
            sa.append([x.start, x.end])
        if y is not None:
            sb.append([y.start, y.end])
    return sa, sb


_LOCAL_OPS = ("local.get", "local.set", "local.tee")


def _local_map(la: list[_Line], lb: list[_Line], blocks: list) -> dict[str, str]:
    """Old local -> new local, matched by use: every pair of aligned ``local.*`` lines votes
    for its two numbers; the strongest votes win, one to one (a renumbered local, label or
    temporary then compares equal, so only real differences show)."""
    votes: dict[tuple[str, str], int] = {}
    for tag, i1, i2, j1, j2 in blocks:
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            x, y = la[i], lb[j]
            if x.mnemonic in _LOCAL_OPS and x.mnemonic == y.mnemonic:
                k = (x.operands, y.operands)
                votes[k] = votes.get(k, 0) + 1
    out: dict[str, str] = {}
    taken: set[str] = set()
    for (a, b), _n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if a not in out and b not in taken:
            out[a] = b
            taken.add(b)
    return out


_OPENERS = ("block", "loop", "if", "try", "try_table")
_BRANCHES = ("br", "br_if", "br_table")


def _branch_targets(lines: list[_Line]) -> dict[int, tuple[int, ...]]:
    """Line of each branch -> where each of its targets lands: a loop's own line, else the
    first line after the block's ``end`` that is not itself an ``end`` (leaving nested
    blocks that end together lands at the same place); -1 past the last line."""
    stack: list[int] = []
    ends: dict[int, int] = {}
    for i, x in enumerate(lines):
        m = x.mnemonic
        if m in _OPENERS:
            stack.append(i)
        elif m == "end" and stack:
            ends[stack.pop()] = i

    def land(op: int) -> int:
        if op < 0:
            return -1
        if lines[op].mnemonic == "loop":
            return op
        k = ends.get(op, len(lines)) + 1
        while k < len(lines) and lines[k].mnemonic == "end":
            k += 1
        return k if k < len(lines) else -1

    return {
        i: tuple(land(o) for o in x.openers) for i, x in enumerate(lines) if x.openers is not None
    }


def _same_label(i: int, j: int, ta: dict, tb: dict, lmap_: dict[int, int]) -> bool:
    """Do branch lines ``i`` (old) and ``j`` (new) land at the same (aligned) lines?"""
    if i not in ta or j not in tb or len(ta[i]) != len(tb[j]):
        return False
    return all(
        (x == -1 and y == -1) or (x >= 0 and lmap_.get(x) == y)
        for x, y in zip(ta[i], tb[j], strict=True)
    )


def diff_lines(
    a_mnemonics: Listing | str,
    b_mnemonics: Listing | str,
    *,
    align: bool = True,
    same_callee: Callable[[int, int], bool] | None = None,
) -> dict[str, Any]:
    """Align two listings and mark what changed.

    Lines are aligned by difflib over a key with file offsets dropped and numbers and callee
    names normalised, so a changed constant, memory offset or callee keeps its line paired;
    paired lines whose operands differ are ``changed`` with ``kinds`` (``const``,
    ``offset``, ``callee``, ``global``, ``type``, ``operand``, ``string``) and the character
    spans of the differing tokens (``a_spans``/``b_spans``). Returns ``{rows, summary}``;
    a row is ``{op: equal|changed|replace|delete|insert, a, b, a_line, b_line, kinds,
    a_spans, b_spans}`` (``a_line``/``b_line``: 1-based line numbers in each listing).

    ``align`` (default): locals are matched between the two bodies by use first
    (:func:`_local_map`), so a line that differs only by a renumbered local is ``equal``
    (``summary["aligned"]`` counts them; ``summary["local_map"]`` is the mapping); lines are
    aligned whatever their nesting (a block wrapped around code does not make the code
    inside it a change; in functions over 4,000 lines, where difflib junks popular lines,
    the nesting-aware alignment is kept when it is shorter), branches are compared by where they land (a label depth that
    changed because a block was added around the branch is not a change: ``labels``), and
    with ``same_callee(old_index, new_index)`` (the pairing of the two versions) a call to
    the same function under a shifted index is not a change either (``callees``)."""
    return _diff(_lines(a_mnemonics), _lines(b_mnemonics), align, same_callee)


def _diff(
    la: list[_Line], lb: list[_Line], align: bool, same_callee: Callable[[int, int], bool] | None
) -> dict[str, Any]:

    big = len(la) + len(lb) > 4000  # difflib junks popular lines there

    def opcodes(flat: bool) -> list:
        ka = [x.key.lstrip(" ") if flat else x.key for x in la]
        kb = [x.key.lstrip(" ") if flat else x.key for x in lb]
        return difflib.SequenceMatcher(None, ka, kb, autojunk=big).get_opcodes()

    def cost(ops: list) -> int:
        return sum(max(i2 - i1, j2 - j1) for t, i1, i2, j1, j2 in ops if t != "equal")

    blocks = opcodes(align)
    if align and big:  # with autojunk either key can align better: keep the shorter diff
        nested = opcodes(False)
        if cost(nested) < cost(blocks):
            blocks = nested
    lmap = _local_map(la, lb, blocks) if align else {}
    ta = tb_ = bmap = None
    if align:
        ta, tb_ = _branch_targets(la), _branch_targets(lb)
        bmap = {}  # aligned lines, old -> new
        for tag, i1, i2, j1, j2 in blocks:
            if tag == "equal":
                bmap.update(zip(range(i1, i2), range(j1, j2), strict=True))
    rows: list[dict[str, Any]] = []
    summary = {
        "equal": 0,
        "changed": 0,
        "deleted": 0,
        "inserted": 0,
        "const": 0,
        "offset": 0,
        "callee": 0,
        "global": 0,
        "type": 0,
        "operand": 0,
        "string": 0,
        "aligned": 0,
        "labels": 0,
        "callees": 0,
        "local_map": {a: b for a, b in lmap.items() if a != b},
    }

    def row(op: str, i: int | None, j: int | None, kinds=(), sa=(), sb=()) -> None:
        rows.append(
            {
                "op": op,
                "a": la[i].text if i is not None else None,
                "b": lb[j].text if j is not None else None,
                "a_line": None if i is None else i + 1,
                "b_line": None if j is None else j + 1,
                "kinds": list(kinds),
                "a_spans": list(sa),
                "b_spans": list(sb),
            }
        )

    for tag, i1, i2, j1, j2 in blocks:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                x, y = la[i], lb[j]
                if x.text == y.text or (align and x.text.lstrip(" ") == y.text.lstrip(" ")):
                    summary["equal"] += 1
                    row("equal", i, j)
                    continue
                if align and x.note == y.note and x.mnemonic == y.mnemonic:
                    if x.mnemonic in _BRANCHES and _same_label(i, j, ta, tb_, bmap):
                        summary["equal"] += 1
                        summary["labels"] += 1
                        row("equal", i, j)
                        continue
                    if (
                        same_callee is not None
                        and x.callee is not None
                        and y.callee is not None
                        and same_callee(x.callee, y.callee)
                    ):
                        summary["equal"] += 1
                        summary["callees"] += 1
                        row("equal", i, j)
                        continue
                if (
                    x.mnemonic in _LOCAL_OPS
                    and x.mnemonic == y.mnemonic
                    and x.note == y.note
                    and lmap.get(x.operands) == y.operands
                ):
                    summary["equal"] += 1
                    summary["aligned"] += 1
                    row("equal", i, j)
                    continue
                kinds = []
                if x.operands != y.operands:
                    kinds.append(_kind(x.mnemonic) if x.mnemonic else "operand")
                if x.note != y.note:
                    kinds.append("string")
                for k in kinds:
                    summary[k] += 1
                summary["changed"] += 1
                sa, sb = _changed_spans(x, y)
                row("changed", i, j, kinds, sa, sb)
            continue
        a_n, b_n = i2 - i1, j2 - j1
        paired = min(a_n, b_n) if tag == "replace" else 0
        for k in range(paired):
            summary["deleted"] += 1
            summary["inserted"] += 1
            row(
                "replace",
                i1 + k,
                j1 + k,
                (),
                [[0, len(la[i1 + k].text)]],
                [[0, len(lb[j1 + k].text)]],
            )
        for i in range(i1 + paired, i2):
            summary["deleted"] += 1
            row("delete", i, None, (), [[0, len(la[i].text)]])
        for j in range(j1 + paired, j2):
            summary["inserted"] += 1
            row("insert", None, j, (), (), [[0, len(lb[j].text)]])
    return {"rows": rows, "summary": summary}


def function_diff(
    conn: sqlite3.Connection,
    stable_id: str,
    from_version_id: int,
    to_version_id: int,
) -> dict[str, Any]:
    """One logical function in two versions: both sides' Disassembly objects (``from``,
    ``to``), the aligned listing diff (``rows``, ``summary``: see :func:`diff_lines`) and a
    unified diff of the lifted C (``c_diff``)."""
    queries.require_stable_id(conn, stable_id)
    where = {w["version_id"]: w["index"] for w in queries.functions_by_stable_id(conn, stable_id)}
    idx: list[int] = []
    for vid in (from_version_id, to_version_id):
        queries.get_version(conn, vid)
        if vid not in where:
            raise UnknownFunctionError(
                f"function {stable_id} does not appear in version {vid}"
                f" (it appears in: {', '.join(str(v) for v in sorted(where)) or 'none'})"
            )
        idx.append(where[vid])
    from_index, to_index = idx
    return function_diff_at(conn, from_version_id, from_index, to_version_id, to_index)


def callee_pairing(conn: sqlite3.Connection, va: int, vb: int) -> Callable[[int, int], bool]:
    """``(old index, new index) -> same logical function?`` (by stable id, from the prepared
    versions' identities: no whole-version read per diff)."""
    rows: list[dict] = []

    def same(i: int, j: int) -> bool:
        if not rows:
            rows.extend(code_module(conn, v).rows for v in (va, vb))
        a = rows[0].get(i)
        b = rows[1].get(j)
        return (
            a is not None
            and b is not None
            and a.stable_id is not None
            and a.stable_id == b.stable_id
        )

    return same


def function_diff_at(
    conn: sqlite3.Connection,
    from_version_id: int,
    from_index: int,
    to_version_id: int,
    to_index: int,
) -> dict[str, Any]:
    """:func:`function_diff` for two functions given by index (their identities may differ)."""
    a, ra = function_code(conn, from_version_id, from_index)
    b, rb = function_code(conn, to_version_id, to_index)
    a, b = dict(a), dict(b)
    lines = _diff(
        _records_or_note(ra, a),
        _records_or_note(rb, b),
        True,
        callee_pairing(conn, from_version_id, to_version_id),
    )
    c_diff = "".join(
        difflib.unified_diff(
            a["lifted_c"].splitlines(keepends=True),
            b["lifted_c"].splitlines(keepends=True),
            fromfile=f"v{from_version_id}/func[{from_index}].c",
            tofile=f"v{to_version_id}/func[{to_index}].c",
        )
    )
    return {
        "stable_id": b["stable_id"] or a["stable_id"],
        "from": a,
        "to": b,
        **lines,
        "c_diff": c_diff,
    }


def _records_or_note(listing: Listing | None, d: dict[str, Any]) -> list[_Line]:
    """The lines of a listing's records; a body without them is its one-line note."""
    if listing is None:
        return [_raw(line) for line in d["mnemonics"].splitlines()]
    return _lines_from_listing(listing)
