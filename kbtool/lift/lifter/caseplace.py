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

_MARK: Final = re.compile("\x01[0-9]+\x02")
_COMMENT: Final = re.compile(r"/\*.*?\*/")
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_TRAMP: Final = re.compile(r"^((?:(?:case -?\d+|default): )+)goto (L\d+);$")
_LABEL: Final = re.compile(r"^(L\d+):;$")
_GOTO: Final = re.compile(r"\bgoto (L\d+);")
_ESCAPE: Final = re.compile(r"\b(break|continue);")
#: statements after which control never reaches the next line
_EXITS: Final = ("goto ", "return;", "return ", "break;", "continue;", "wasm_unreachable();")
_THROWS: Final = ("wasm_throw(", "wasm_rethrow(", "wasm_throw_ref(")
#: moves per function at most (each one rescans the function)
MAX_MOVES: Final = 400


def _bare(line: str) -> str:
    """The statement without indentation, note markers, comments and string literals."""
    s = _MARK.sub("", line).strip()
    if "/*" in s:
        s = _COMMENT.sub("", s).strip()
    if '"' in s:
        s = _STRING.sub('""', s)
    return s


def _is_exit(s: str) -> bool:
    """Whether the statement ``s`` never falls through to the next line."""
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


class _Scan:
    """One pass over the lines: statement depth, openers, labels and goto counts."""

    def __init__(self, lines: list[str]):
        self.bare = [_bare(ln) for ln in lines]
        n = len(lines)
        self.depth = [0] * n  # brace depth of the statement on the line
        self.opener = [-1] * n  # the line opening the innermost block around the line
        self.closed = [-1] * n  # on a line starting with `}`: the line it closes
        self.labels: dict[str, int] = {}
        self.refs: dict[str, int] = {}
        stack: list[int] = []
        for k, s in enumerate(self.bare):
            closes = s.startswith("}")
            if closes and stack:
                self.closed[k] = stack.pop()
            self.depth[k] = len(stack)
            self.opener[k] = stack[-1] if stack else -1
            net = s.count("{") - s.count("}") + closes
            if net > 0 and s.endswith("{"):
                stack.append(k)
            elif net < 0:
                del stack[len(stack) + net :]
            m = _LABEL.match(s)
            if m is not None:
                self.labels[m.group(1)] = k
            if "goto " in s:
                for t in _GOTO.findall(s):
                    self.refs[t] = self.refs.get(t, 0) + 1

    def tail(self, j: int) -> int:
        """The line of the ``return`` that falling off the block closed on line ``j``
        reaches (through the ends of ``if`` and ``do { } while (0)`` blocks), or -1."""
        bare = self.bare
        for _ in range(4):
            s = bare[j]
            op = self.closed[j]
            if op < 0:
                return -1
            o = bare[op]
            if not (
                (s == "}" and (o.startswith(("if (", "} else {", "} else if ("))))
                or (s == "} while (0);" and o == "do {")
            ):
                return -1
            j += 1
            if j >= len(bare):
                return -1
            s = bare[j]
            if s.startswith(("return;", "return ")) and len(s) < 80 and "{" not in s:
                return j
            if not s.startswith("}"):
                return -1
        return -1

    def region(self, lab: int) -> tuple[int, int]:
        """The last line of the body after the label on line ``lab`` and the line of the
        ``return`` it falls to at the end of its block (-1 when it ends in a jump), or
        (-1, -1) when the body reaches another entry point or leaves its block otherwise,
        or holds a ``break``/``continue`` of a construct outside it."""
        bare = self.bare
        d0 = self.depth[lab]
        inner: list[str] = []  # constructs opened inside the body
        for j in range(lab + 1, len(bare)):
            s = bare[j]
            d = self.depth[j]
            if s.startswith("}") and inner:
                inner.pop()
            if d < d0:
                t = self.tail(j) if j > lab + 1 else -1
                return (j - 1, t) if t >= 0 else (-1, -1)
            if d == d0 and (s.startswith(("case ", "default:")) or _LABEL.match(s)):
                return -1, -1
            if ("break;" in s or "continue;" in s) and not (s.endswith("{") or s.startswith("}")):
                for w in _ESCAPE.findall(s):
                    if "loop" in inner:
                        continue
                    if w == "continue" or "switch" not in inner:
                        return -1, -1
            if s.endswith("{") and s.count("{") > s.count("}") - s.startswith("}"):
                inner.append(_kind(s))
            if d == d0 and _is_exit(s):
                return j, -1
        return -1, -1


def _move(
    lines: list[str], ident: list[int], p: int, lab: int, end: int, tail: int, head: str
) -> tuple[list[str], list[int]]:
    """``lines`` (and ``ident``, their old indices) with the body ``lab + 1 .. end`` under
    the case on line ``p``, and a copy of the ``return`` on line ``tail`` it falls to."""
    src = lines[lab]
    marks = "".join(_MARK.findall(src))
    pind = len(lines[p]) - len(lines[p].lstrip(" "))
    lind = len(src) - len(src.lstrip(" "))
    body = []
    for ln in lines[lab + 1 : end + 1]:
        ind = len(ln) - len(ln.lstrip(" "))
        body.append(" " * max(0, ind - lind + pind + 2) + ln[ind:])
    ids = ident[lab + 1 : end + 1]
    if tail >= 0:
        body.append(" " * (pind + 2) + _MARK.sub("", lines[tail]).lstrip(" "))
        ids.append(-1)
    if marks:
        first = body[0]
        ind = len(first) - len(first.lstrip(" "))
        body[0] = first[:ind] + marks + first[ind:]
    head_line = lines[p][:pind] + "".join(_MARK.findall(lines[p])) + head.rstrip()
    if len(body) == 1 and len(head_line) + len(body[0].lstrip(" ")) < 100:
        case = [head_line + " " + body[0].lstrip(" ")]
        cids = [ids[0]]
    else:
        case = [head_line, *body]
        cids = [ident[p], *ids]
    if lab > p:
        return (
            lines[:p] + case + lines[p + 1 : lab] + lines[end + 1 :],
            ident[:p] + cids + ident[p + 1 : lab] + ident[end + 1 :],
        )
    return (
        lines[:lab] + lines[end + 1 : p] + case + lines[p + 1 :],
        ident[:lab] + ident[end + 1 : p] + cids + ident[p + 1 :],
    )


def place_cases(out: list[str | None], budget: _Budget) -> tuple[list[str | None], int, list[int]]:
    """Move the bodies of ``case N: goto L;`` trampolines into their cases. Returns the new
    lines, how many trampolines went (one ``goto`` and one label each) and the new index of
    each old line (-1: dropped) for the callers that hold line indices."""
    keep = [k for k, ln in enumerate(out) if ln is not None]
    lines: list[str] = [ln for ln in out if ln is not None]
    ident = list(range(len(lines)))  # old index (into keep) of each current line
    if not any("goto L" in ln for ln in lines):
        return out, 0, list(range(len(out)))
    moved = 0
    skip: set[str] = set()
    while moved < MAX_MOVES:
        budget.spend(len(lines))
        scan = _Scan(lines)
        hit = None
        for p, s in enumerate(scan.bare):
            if not s.endswith(";") or "goto L" not in s:
                continue
            m = _TRAMP.match(s)
            if m is None or m.group(2) in skip:
                continue
            lab = scan.labels.get(m.group(2), -1)
            sw = scan.opener[p]
            if (
                lab < 0
                or scan.refs.get(m.group(2)) != 1
                or sw < 0
                or not scan.bare[sw].startswith("switch (")
                or lab == p + 1
                or scan.depth[lab - 1] != scan.depth[lab]
                or not _is_exit(scan.bare[lab - 1])
            ):
                skip.add(m.group(2))
                continue
            end, tail = scan.region(lab)
            if end < 0 or (lab < p <= end) or (lab < sw <= end):
                skip.add(m.group(2))
                continue
            hit = (p, lab, end, tail, m.group(1))
            break
        if hit is None:
            break
        p, lab, end, tail, head = hit
        lines, ident = _move(lines, ident, p, lab, end, tail, head)
        moved += 1
    if not moved:
        return out, 0, list(range(len(out)))
    where = [-1] * len(out)
    for new, old in enumerate(ident):
        if old >= 0:
            where[keep[old]] = new
    res: list[str | None] = list(lines)
    return res, moved, where
