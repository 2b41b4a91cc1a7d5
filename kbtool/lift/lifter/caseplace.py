"""Pass 3: case bodies placed inside their ``case`` (issue 28 point 2).

A ``br_table`` whose targets lie outside the construct around it (typically a ``switch``
inside a ``while (1)`` whose cases leave the loop, as in sqlite's expression coder) comes out
of pass 2 as ``case 26: goto L63;`` trampolines, the bodies after the loop. A body that

* is entered only by that case (its label has this one ``goto`` and the statement before
  the label never falls into it),
* ends in a jump that means the same everywhere (``goto``, ``return``, a trap) before any
  other entry point (another label, a ``case``) or the end of its block, and
* has no ``break``/``continue`` that would bind to a different construct once moved

is moved under its case, re-indented, and its label dropped: the same statements run in the
same order, C just reaches them without the jump. Nothing is duplicated; everything else
stays a ``goto``. The pass works on pass 2's output lines (brace structure, not
indentation, which is capped) and keeps the note markers on the lines they belong to.
"""

from __future__ import annotations

import re
from typing import Final

from .base import _Budget
from .linetext import (
    _bare,
    _escapes,
    _gotos,
    _has_call,
    _label_name,
    _marks,
    _tramp,
    _unhead,
    _unmark,
)

_LABEL: Final = re.compile(r"^(L\d+):;$")
_GOTO: Final = re.compile(r"\bgoto (L\d+);")
#: statements after which control never reaches the next line
_EXITS: Final = ("goto ", "return;", "return ", "break;", "continue;", "wasm_unreachable();")
_THROWS: Final = ("wasm_throw(", "wasm_rethrow(", "wasm_throw_ref(")
_NONE: Final[list[str]] = []  # no gotos on a line (shared, never changed)
#: moves per function at most (each one rescans the function)
MAX_MOVES: Final = 400


def _is_exit(s: str) -> bool:
    """Whether the statement ``s`` never falls through to the next line."""
    if not s:
        return False
    c = ord(s[0])  # each of _EXITS and _THROWS starts with g, r, b, c or w
    if c != 103 and c != 114 and c != 98 and c != 99 and c != 119:
        return False
    return s.startswith(_EXITS) or (s.startswith(_THROWS) and s.endswith(");"))


def _kind(s: str) -> str:
    """What a line ending in ``{`` opens: loop, switch or block."""
    if s.startswith("}"):
        s = s[1:].lstrip()
    if s.startswith(("while (", "for (", "do {")):
        return "loop"
    if s.startswith("switch ("):
        return "switch"
    return "block"


class _Plan:
    """How a body moves: its last line, the statement appended after it (the ``return`` or
    ``goto`` its fall off its block reaches, or ""), the lines whose ``break`` leaves a
    construct outside it (with the statement it becomes) and the gotos those add."""

    __slots__ = ("end", "tail", "repl", "gotos")

    def __init__(self, end: int, tail: str, repl: dict[int, str]):
        self.end = end
        self.tail = tail
        self.repl = repl
        self.gotos = tail.startswith("goto ") + sum(1 for v in repl.values() if "goto " in v)


def _info(line: str) -> tuple[str, bool, int, str, list[str]]:
    """What the scan needs of one line: the bare statement, whether it starts with ``}``,
    its brace balance (opening a block: > 0 and ends in ``{``), its label, its gotos."""
    s = _bare(line)
    n = len(s)
    # (characters compared as code points: native ints under mypyc, no method call)
    closes = n > 0 and ord(s[0]) == 125  # `}`
    net = s.count("{") - s.count("}") + closes
    if net > 0 and ord(s[n - 1]) != 123:  # not ending in `{`
        net = 0
    label = _label_name(s) if n > 1 and ord(s[n - 1]) == 59 and ord(s[n - 2]) == 58 else ""
    gotos = _gotos(s) if "goto L" in s else _NONE
    return s, closes, net, label, gotos


class _Scan:
    """One pass over the lines: statement depth, openers, labels and goto counts (``memo``:
    the lines seen by earlier scans of the same function)."""

    def __init__(self, lines: list[str], memo: dict[str, tuple[str, bool, int, str, list[str]]]):
        self.lines = lines
        n = len(lines)
        self.bare: list[str] = []
        self.depth = [0] * n  # brace depth of the statement on the line
        self.opener = [-1] * n  # the line opening the innermost block around the line
        self.closed = [-1] * n  # on a line starting with `}`: the line it closes
        self.close_of: dict[int, int] = {}  # opening line -> its closing line
        self.labels: dict[str, int] = {}
        self.refs: dict[str, int] = {}
        self.fresh: dict[int, str] = {}  # line -> a new label to put before it
        self.next_id = 1  # the next free label number
        self.jumps: list[int] = []  # the lines with a goto (every trampoline is one)
        jumps = self.jumps
        bare = self.bare
        depth = self.depth
        opener = self.opener
        closed = self.closed
        refs = self.refs
        stack: list[int] = []
        top = -1  # stack[-1], or -1
        for k, ln in enumerate(lines):
            info = memo.get(ln)
            if info is None:
                info = memo[ln] = _info(ln)
            s, closes, net, label, gotos = info
            bare.append(s)
            if closes and stack:
                o = closed[k] = stack.pop()
                self.close_of[o] = k
                top = stack[-1] if stack else -1
            depth[k] = len(stack)
            opener[k] = top
            if net > 0:
                stack.append(k)
                top = k
            elif net < 0:
                del stack[len(stack) + net :]
                top = stack[-1] if stack else -1
            if label:
                self.labels[label] = k
                if label[1:].isdigit() and int(label[1:]) >= self.next_id:
                    self.next_id = int(label[1:]) + 1
            if gotos:
                jumps.append(k)
                for t in gotos:
                    refs[t] = refs.get(t, 0) + 1

    def arrive(self, j: int) -> str:
        """A statement that does what arriving at line ``j`` does, valid anywhere: the
        ``return`` or ``goto`` found there or ``goto`` the label found (or put: see
        :meth:`fresh_goto`) there, through case heads and the ends of ``if``/``else``,
        ``switch`` and ``do { } while (0)`` blocks; "" when none."""
        bare = self.bare
        for _ in range(6):
            if j >= len(bare):
                return ""
            s = bare[j]
            if s.startswith(("case ", "default:")):  # on into the next case's code
                s = _unhead(s)
                if not s:
                    j += 1
                    continue
            name = _label_name(s)
            if name:
                return f"goto {name};"
            if (
                s.startswith(("return;", "return ")) and len(s) < 80 and "{" not in s
            ) or _GOTO.fullmatch(s):
                # the line as written (its comments kept), without its notes and case heads
                return _unhead(_unmark(self.lines[j]).strip())
            op = self.closed[j]
            if op < 0:  # a plain statement: a new label there
                return "" if s != bare[j] else self.fresh_goto(j)
            o = bare[op]
            if not (
                (s == "}" and o.startswith(("if (", "} else {", "} else if (", "switch (")))
                or (s == "} while (0);" and o == "do {")
            ):
                return ""
            j += 1
        return ""

    def sealed(self, j: int) -> bool:
        """Whether control never falls past line ``j``: a jump, or the end of a
        ``while (1)`` loop no ``break`` leaves."""
        s = self.bare[j]
        if _is_exit(s):
            return True
        o = self.closed[j]
        if s != "}" or o < 0 or self.bare[o] not in ("while (1) {", "for (;;) {"):
            return False
        bare = self.bare
        for k in range(o + 1, j):
            if "break;" in bare[k] and not bare[k].startswith("}"):
                q = self.opener[k]
                while q >= 0 and _kind(bare[q]) == "block":
                    q = self.opener[q]
                if q == o:
                    return False
        return True

    def fresh_goto(self, j: int) -> str:
        """``goto`` a new label put right before line ``j`` (the same one for every body
        that lands there); the label is written only if a moved body keeps that goto."""
        name = self.fresh.get(j)
        if name is None:
            name = self.fresh[j] = f"L{self.next_id}"
            self.next_id += 1
        return f"goto {name};"

    def leave(self, lab: int) -> str:
        """What ``break`` does at line ``lab`` as a statement valid anywhere, or ""."""
        o = self.opener[lab]
        while o >= 0 and _kind(self.bare[o]) == "block":
            o = self.opener[o]
        c = self.close_of.get(o, -1) if o >= 0 else -1
        return self.arrive(c + 1) if c >= 0 else ""

    def region(self, lab: int) -> _Plan | None:
        """How the body after the label on line ``lab`` moves (see :meth:`_region`), or
        None; a body whose rest cannot move may still move up to the first label in it."""
        plan, joins, repl = self._region(lab)
        if plan is not None:
            return self._cut(lab, plan, joins)
        if joins:
            return self._cut(lab, _Plan(joins[0] - 1, "", repl), joins[:1])
        return None

    def _region(self, lab: int) -> tuple[_Plan | None, list[int], dict[int, str]]:
        """The body after the label on line ``lab`` up to its jump (None when it reaches a
        ``case`` or leaves its block or the constructs around it in a way no single
        statement says), the labels in it at its own level and its ``break`` rewrites."""
        bare = self.bare
        d0 = self.depth[lab]
        inner: list[str] = []  # constructs opened inside the body
        repl: dict[int, str] = {}
        joins: list[int] = []  # labels in the body at its own level
        out = ""  # what `break` at the label does, once asked
        for j in range(lab + 1, len(bare)):
            s = bare[j]
            d = self.depth[j]
            if s.startswith("}") and inner:
                inner.pop()
            if d < d0:
                t = self.arrive(j) if j > lab + 1 else ""
                return (_Plan(j - 1, t, repl) if t else None), joins, repl
            if d == d0:
                if s.startswith(("case ", "default:")):
                    # the body runs on into the next case: ends where that code goes
                    prev = bare[j - 1]
                    if j == lab + 1 or prev.startswith("}"):
                        return None, joins, repl
                    t = "" if _is_exit(prev) else self.arrive(j)
                    if t or _is_exit(prev):
                        return _Plan(j - 1, t, repl), joins, repl
                    return None, joins, repl
                if _label_name(s):
                    joins.append(j)
            if ("break;" in s or "continue;" in s) and not (s.endswith("{") or s.startswith("}")):
                for w in _escapes(s):
                    if "loop" in inner or (w == "break" and "switch" in inner):
                        continue
                    if w == "continue" or self.lines[j].count("break;") != 1:
                        return None, joins, repl
                    out = out or self.leave(lab)
                    if not out:
                        return None, joins, repl
                    repl[j] = self.lines[j].replace("break;", out)
            if s.endswith("{") and s.count("{") > s.count("}") - s.startswith("}"):
                inner.append(_kind(s))
            if d == d0 and (_is_exit(s) or (s == "}" and self.sealed(j))):
                return _Plan(j, "", repl), joins, repl
        return None, joins, repl

    def _cut(self, lab: int, plan: _Plan, joins: list[int]) -> _Plan | None:
        """``plan`` up to the first label in the body that jumps from outside it reach too
        (that shared code stays; the body ends in a ``goto`` to it), or None when the line
        before that label is a block's end (it may never fall through)."""
        body = None
        for j in joins:
            name = self.bare[j][:-2]
            if body is None:
                body = "\n".join(self.bare[lab + 1 : plan.end + 1])
            if j <= plan.end and body.count(f"goto {name};") == self.refs.get(name, 0):
                continue
            sealed = self.bare[j - 1] == "}" and self.sealed(j - 1)
            if j == lab + 1 or (self.bare[j - 1].startswith("}") and not sealed):
                return None
            tail = "" if sealed or _is_exit(self.bare[j - 1]) else f"goto {name};"
            return _Plan(j - 1, tail, {k: v for k, v in plan.repl.items() if k < j})
        return plan

    def small_tail(self, lab: int) -> int:
        """The last line of a short body after the label on line ``lab`` that ends in a
        ``return`` (at most one plain assignment before it, no calls), or -1: copied into
        a case, it duplicates no real code."""
        bare = self.bare
        d0 = self.depth[lab]
        for j in range(lab + 1, min(lab + 3, len(bare))):
            s = bare[j]
            if self.depth[j] != d0 or "{" in s or "}" in s or _has_call(s):
                return -1
            if s.startswith(("return;", "return ")):
                return j
            if " = " not in s or not s.endswith(";") or _label_name(s) or ":" in s:
                return -1
        return -1


def _reindent(lines: list[str], lab: int, first: int, end: int, pind: int) -> list[str]:
    """Lines ``first .. end`` re-indented from the label's level to a case body's."""
    src = lines[lab]
    lind = len(src) - len(src.lstrip(" "))
    body = []
    for ln in lines[first : end + 1]:
        ind = len(ln) - len(ln.lstrip(" "))
        body.append(" " * max(0, ind - lind + pind + 2) + ln[ind:])
    return body


def _case(lines: list[str], p: int, head: str, body: list[str]) -> list[str]:
    """The case on line ``p`` with ``body`` under its head (one line when it is short)."""
    pind = len(lines[p]) - len(lines[p].lstrip(" "))
    head_line = lines[p][:pind] + _marks(lines[p]) + head.rstrip()
    if len(body) == 1 and len(head_line) + len(body[0].lstrip(" ")) < 100:
        return [head_line + " " + body[0].lstrip(" ")]
    return [head_line, *body]


def _moved_case(
    lines: list[str], ident: list[int], p: int, lab: int, plan: _Plan, head: str
) -> tuple[list[str], list[int]]:
    """The case on line ``p`` with the body after the label on line ``lab`` under it, as
    ``plan`` says, and the old index of each of its lines."""
    end = plan.end
    work = lines[: end + 1]
    for j, text in plan.repl.items():
        work[j] = text
    pind = len(lines[p]) - len(lines[p].lstrip(" "))
    body = _reindent(work, lab, lab + 1, end, pind)
    ids = ident[lab + 1 : end + 1]
    if plan.tail:
        body.append(" " * (pind + 2) + plan.tail)
        ids.append(-1)
    marks = _marks(lines[lab])
    if marks:
        first = body[0]
        ind = len(first) - len(first.lstrip(" "))
        body[0] = first[:ind] + marks + first[ind:]
    case = _case(lines, p, head, body)
    return case, ([ids[0]] if len(case) == 1 else [ident[p], *ids])


def _move(
    lines: list[str],
    ident: list[int],
    batch: list[tuple[int, int, _Plan, str]],
    fresh: dict[int, str],
) -> tuple[list[str], list[int]]:
    """``lines`` (and ``ident``, their old indices) with each body of ``batch`` (case
    line, label line, plan, case head; the bodies apart, no case line in a body) under
    its case, and the new labels ``fresh`` (line -> name) before their lines."""
    cases: dict[int, tuple[int, _Plan, str]] = {}
    gone: set[int] = set()
    for p, lab, plan, head in batch:
        cases[p] = (lab, plan, head)
        gone.update(range(lab, plan.end + 1))
    new: list[str] = []
    nid: list[int] = []
    for k, ln in enumerate(lines):
        if k in gone:
            continue
        if k in fresh:
            new.append(ln[: len(ln) - len(ln.lstrip(" "))] + fresh[k] + ":;")
            nid.append(-1)
        c = cases.get(k)
        if c is None:
            new.append(ln)
            nid.append(ident[k])
            continue
        case, cids = _moved_case(lines, ident, k, c[0], c[1], c[2])
        new += case
        nid += cids
    return new, nid


def _copy(
    lines: list[str], ident: list[int], p: int, lab: int, end: int, head: str, drop: bool
) -> tuple[list[str], list[int]]:
    """The short ``return`` body after the label on line ``lab`` copied under the case on
    line ``p``; the label line goes when ``drop`` (no other ``goto`` left)."""
    pind = len(lines[p]) - len(lines[p].lstrip(" "))
    body = [_unmark(ln) for ln in _reindent(lines, lab, lab + 1, end, pind)]
    case = _case(lines, p, head, body)
    cids = [ident[p]] + [-1] * (len(case) - 1)
    lines = lines[:p] + case + lines[p + 1 :]
    ident = ident[:p] + cids + ident[p + 1 :]
    if drop:
        k = lab if lab < p else lab + len(case) - 1
        marks = _marks(lines[k])
        del lines[k]
        del ident[k]
        if marks and k < len(lines):  # its notes go to the statement after it
            ln = lines[k]
            ind = len(ln) - len(ln.lstrip(" "))
            lines[k] = ln[:ind] + marks + ln[ind:]
    return lines, ident


def _loop_end(lines: list[str], j: int) -> bool:
    """Whether the ``}`` on line ``j`` seems to close a ``while (1)`` (braces counted
    back over at most 4000 lines: a cheap look, :meth:`_Scan.sealed` decides)."""
    depth = 0
    for k in range(j, max(-1, j - 4000), -1):
        ln = lines[k]
        depth += ln.count("}") - ln.count("{")
        if depth <= 0:
            s = ln.strip()
            return s.endswith(("while (1) {", "for (;;) {"))
    return False


def _first_look(out: list[str | None]) -> tuple[list[str], list[int]]:
    """The trampolines' labels in ``out`` and the indices (among the lines that are not
    None) of the lines that may be labels: one pass, one one-character search per line."""
    tramps: list[str] = []
    marks: list[int] = []  # lines that may be labels
    k = 0
    for ln in out:
        if ln is None:
            continue
        if ":" in ln:  # most lines have none
            if ": goto L" in ln:
                name = _tramp(_bare(ln))[1]
                if name:
                    tramps.append(name)
            elif ln.endswith(":;") and "goto L" not in ln:
                marks.append(k)
        k += 1
    return tramps, marks


def _hopeful(lines: list[str], tramps: list[str], marks: list[int]) -> bool:
    """Whether some trampoline (``tramps``, their labels; ``marks``: the lines that may be
    labels, :func:`_first_look`) may move or copy: a cheap look (its label has one
    ``goto`` and a jump before it, or a ``return`` right after it) before the full scan.
    The ``goto`` counts are taken only when some label passes the other looks."""
    want = set(tramps)
    labels: dict[str, int] = {}
    for k in marks:
        name = _label_name(_bare(lines[k]))
        if name and name in want:
            labels[name] = k
    if not labels:
        return False
    sealed: list[str] = []  # trampolines whose label has a jump before it
    for name in tramps:
        lab = labels.get(name, -1)
        if lab <= 0:
            continue
        for j in range(lab + 1, min(lab + 3, len(lines))):
            s = _bare(lines[j])
            if s.startswith("return;") or s.startswith("return "):  # (no tuple: native)
                return True
        prev = _bare(lines[lab - 1])
        if _is_exit(prev) or (prev == "}" and _loop_end(lines, lab - 1)):
            sealed.append(name)
    if not sealed:
        return False
    once = set(sealed)
    refs: dict[str, int] = {}
    # the gotos of all lines: a search of the joined text finds each `goto L` (a goto
    # never spans lines; `\b` reads the newline before a line as its start)
    body = "\n".join(lines)
    i = body.find("goto L")
    while i >= 0:
        m = _GOTO.match(body, i)
        if m is not None:
            t = m.group(1)
            if t in once:
                refs[t] = refs.get(t, 0) + 1
        i = body.find("goto L", i + 6)
    return any(refs.get(name) == 1 for name in sealed)


def _targets(plan: _Plan) -> set[str]:
    """The labels the gotos a plan adds jump to."""
    out = set(_GOTO.findall(plan.tail))
    for text in plan.repl.values():
        out.update(_GOTO.findall(text))
    return out


def _pick(
    scan: _Scan, ident: list[int], skip: set[int]
) -> tuple[list, tuple | None, dict[int, str]]:
    """The trampolines to rewrite after this scan: bodies to move that do not meet (each
    (case line, label line, plan, head)), or else one short ``return`` to copy ((case
    line, label line, last line, head)); the ones that stay go into ``skip`` (by original
    line), the ones in the way of another wait for the next scan; and the new labels the
    bodies' gotos need."""
    batch: list[tuple[int, int, _Plan, str]] = []
    taken: list[tuple[int, int]] = []  # the lines the batch's bodies span
    names: set[str] = set()  # the labels the batch drops
    aimed: set[str] = set()  # the labels its added gotos jump to
    landing: dict[int, str] = {}  # the new labels its gotos need (line -> name)
    bare = scan.bare
    for p in scan.jumps:  # a trampoline's line has a goto
        s = bare[p]
        if not s.endswith(";") or ": goto L" not in s or ident[p] in skip:
            continue
        heads, name = _tramp(s)
        if not name:
            continue
        lab = scan.labels.get(name, -1)
        sw = scan.opener[p]
        if lab < 0 or sw < 0 or not scan.bare[sw].startswith("switch (") or lab == p + 1:
            skip.add(ident[p])
            continue
        if any(a <= p <= b for a, b in taken):
            continue
        if (
            scan.refs.get(name) == 1
            and scan.depth[lab - 1] == scan.depth[lab]
            and scan.sealed(lab - 1)
        ):
            plan = scan.region(lab)
            if (
                plan is not None
                and plan.gotos <= 1
                and not (lab < p <= plan.end)
                and not (lab < sw <= plan.end)
            ):
                tg = _targets(plan)
                lands = {j: t for j, t in scan.fresh.items() if t in tg}
                if (
                    any(not (plan.end < a or lab > b) for a, b in taken)
                    or any(lab <= q <= plan.end for q, _l, _p, _h in batch)
                    or any(lab <= q <= plan.end for q in landing)
                    or any(a <= q <= b for q in lands for a, b in [*taken, (lab, plan.end)])
                    or name in aimed
                    or tg & names
                ):
                    continue  # next scan
                batch.append((p, lab, plan, heads))
                taken.append((lab, plan.end))
                names.add(name)
                aimed |= tg
                landing.update(lands)
                continue
        end = scan.small_tail(lab)
        if end >= 0 and not (lab < p <= end):
            if batch:
                continue  # next scan
            return batch, (p, lab, end, heads), landing
        skip.add(ident[p])
    return batch, None, landing


def _candidates(
    lines: list[str],
    ident: list[int],
    skip: set[int],
    memo: dict[str, tuple[str, bool, int, str, list[str]]],
) -> bool:
    """Whether :func:`_pick` would look at some trampoline of ``lines`` (one not in
    ``skip``): when none is left, the scan after a move finds nothing. A line whose text
    has no ``:``, or no ``: goto L``, note mark or comment, has none in its bare statement
    either (taking marks, comments and strings out adds no ``:``)."""
    for p, ln in enumerate(lines):
        if ":" not in ln:  # most lines: one one-character search
            continue
        if ": goto L" not in ln and "\x01" not in ln and "/*" not in ln:
            continue
        info = memo.get(ln)
        s: str = info[0] if info is not None else _bare(ln)
        if s.endswith(";") and ": goto L" in s and ident[p] not in skip:
            if _tramp(s)[1]:
                return True
    return False


def place_cases(
    out: list[str | None],
    budget: _Budget,
    memo: dict[str, tuple[str, bool, int, str, list[str]]] | None = None,
) -> tuple[list[str | None], int, int, list[int]]:
    """Put the bodies of ``case N: goto L;`` trampolines under their cases. Returns the new
    lines (``out`` itself when nothing changed), the gotos and labels that went, and the
    new index of each old line (-1: dropped) for the callers that hold line indices.
    ``memo``: what the scans read of each line (:func:`_info`), kept for the next pass."""
    tramps, marks = _first_look(out)
    if not tramps:
        return out, 0, 0, []  # the common case: no trampoline
    lines: list[str] = [ln for ln in out if ln is not None]
    if not _hopeful(lines, tramps, marks):
        return out, 0, 0, []
    keep = [k for k, ln in enumerate(out) if ln is not None]
    ident = list(range(len(lines)))  # old index (into keep) of each current line
    gotos = labels = moves = 0
    skip: set[int] = set()
    if memo is None:
        memo = {}
    while moves < MAX_MOVES and budget.units > 4 * len(lines):
        # (a function near its work budget keeps its trampolines rather than its body)
        budget.spend(len(lines))
        scan = _Scan(lines, memo)
        batch, copy, landing = _pick(scan, ident, skip)
        if batch:
            moves += len(batch)
            lines, ident = _move(lines, ident, batch, landing)
            gotos += sum(1 - plan.gotos for _p, _l, plan, _h in batch)
            labels += len(batch) - len(landing)
        elif copy is not None:
            moves += 1
            p, lab, end, head = copy
            drop = scan.refs.get(scan.bare[lab][:-2]) == 1
            lines, ident = _copy(lines, ident, p, lab, end, head, drop)
            gotos += 1
            labels += drop
        else:
            break
        if not _candidates(lines, ident, skip, memo):
            # the next scan's pick would find nothing: spend its budget, skip the scan
            if moves < MAX_MOVES and budget.units > 4 * len(lines):
                budget.spend(len(lines))
            break
    if not moves:
        return out, 0, 0, []
    return _moved(out, keep, ident, lines, gotos, labels)


def _moved(
    out: list[str | None],
    keep: list[int],
    ident: list[int],
    lines: list[str],
    gotos: int,
    labels: int,
) -> tuple[list[str | None], int, int, list[int]]:
    """A pass's answer after its edits: the new lines, the gotos and labels that went, and
    the new index of each old line of ``out`` (-1: dropped; ``ident``: the old index, into
    ``keep``, of each current line)."""
    where = [-1] * len(out)
    for new, old in enumerate(ident):
        if old >= 0:
            where[keep[old]] = new
    res: list[str | None] = list(lines)
    return res, gotos, labels, where
