"""Pass 4's first look (:mod:`.gotoless`): one lean pass over the lines that rules out
most functions before :func:`.gotoless._hopeful` reads every line in full.

Every rewrite of pass 4 starts at a label ``L<n>:;`` inside a block, and each one needs
something next to that label that is rare in lifted code (measured on lightningcss 1.29.1:
553 of 608 looks answered no; in 477 of them no label has any of the three):

* the guarded block: an ``if (c) goto L;`` directly in the label's block before it (no
  label or case head between) and a jump, or the end of a ``while (1)``, ``for (;;)`` or
  ``switch``, right before the label;
* the loop tail: the label directly in a loop and at most a few plain statements after it
  up to the loop's end (:func:`.gotoless._tail_plain`);
* the switch tail: the label directly in a ``switch`` with a ``default:`` before it, its
  code running to the switch's end (:func:`.gotoless._switch_tail_look`).

:func:`_maybe` answers no only when no label has one of them, read the way
:func:`.gotoless._hopeful` reads the lines (the same blocks, case heads, labels and
``if (c) goto L;`` lines), so it says yes wherever that look does: the full look and the
scan still decide, the C is the same. It tracks only the block stack and those few facts
(no goto lists per label), and most lines are read by their first and last characters:
a line's statement starts with its first character after the leading white space and ends with
its last one whenever both are printable ASCII (``str.strip`` removes neither and a note
marker, ``\\x01`` digits ``\\x02``, is neither); the others are read as the full look does.
"""

from __future__ import annotations

from typing import Final

from .caseplace import _is_exit
from .linetext import _bare, _has_call, _label_name, _unmark

#: plain statements of a loop's tail copied before a ``continue``
TAIL_MAX: Final = 2
_LOOPS: Final = ("while (", "for (", "do {", "} while (")


def _strip(line: str) -> str:
    t = line.strip()
    return _unmark(t) if "\x01" in t else t


def _switch_tail_look(lines: list[str], k: int) -> bool:
    """From the label on line ``k`` in a switch: its code runs to the switch's end, then
    only ``case N: break;`` groups (braces counted; the scan decides)."""
    bal = 0
    n = len(lines)
    j = k + 1
    while j < n:
        t = _strip(lines[j])
        if bal == 0:
            if t.startswith("}"):
                return True
            if _label_name(t):
                return False
            if t.startswith(("case ", "default:")):
                while j < n:  # the trailing groups
                    t = _strip(lines[j])
                    if t.startswith("}"):
                        return True
                    if not t.startswith(("case ", "default:")):
                        return False
                    if not t.endswith("break;"):
                        j += 1
                        if j >= n or _strip(lines[j]) != "break;":
                            return False
                    j += 1
                return False
        if t.startswith("}"):
            bal -= 1
        if t.endswith("{"):
            bal += 1
        j += 1
    return False


def _tail_plain(lines: list[str], k: int, n: int) -> bool:
    """From the label on line ``k`` directly in a loop: at most :data:`TAIL_MAX` plain
    statements (the ones :func:`.gotoless._plain` takes), then the loop's end."""
    for j in range(k + 1, min(k + TAIL_MAX + 2, n)):
        t = _strip(lines[j])
        if t.startswith("}"):
            return t != "} while (0);"
        if "{" in t or ":" in t or _has_call(t):
            return False
        s = _bare(lines[j])
        if not s.endswith(";") or s.startswith(("goto ", "break;", "continue;")):
            return False
    return False


def _tail_near_end(lines: list[str], k: int, n: int) -> bool:
    """Whether a line with a ``}`` is among the ones :func:`_tail_plain` reads after the
    label on line ``k`` (it says yes only at a line whose statement starts with one)."""
    for j in range(k + 1, min(k + TAIL_MAX + 2, n)):
        if "}" in lines[j]:
            return True
    return False


def _maybe(lines: list[str]) -> bool:  # noqa: C901 - one pass over the lines
    """Whether :func:`.gotoless._hopeful` may say yes for ``lines`` (False: it says no)."""
    n = len(lines)
    stack: list[int] = []
    top = -1  # stack[-1], or -1
    popped = -1  # the line the last `}` line closed
    popped_at = -1  # that `}` line
    defaults: set[int] = set()  # the blocks with a `default:` directly in them
    last_case: dict[int, int] = {}  # block -> the last case head line directly in it
    last_label: dict[int, int] = {}  # block -> the last label line directly in it
    guards: dict[str, list[tuple[int, int]]] = {}  # `if (c) goto L;`: (line, block)
    kinds: dict[int, int] = {}  # block -> what opens it: 1 a switch, 2 a loop, 0 else
    for k in range(n):
        ln = lines[k]
        m = len(ln)
        if m == 0:
            continue
        e = ord(ln[m - 1])
        # (characters compared as code points: native ints under mypyc)
        st = ln.lstrip()  # (the statement starts where the full look's `strip` has it)
        ms = len(st)
        if ms == 0:
            continue  # white space only: no statement
        c0 = ord(st[0])
        name = ""
        if 32 < c0 < 128 and 32 < e < 128 and c0 != 99 and c0 != 100 and c0 != 76:
            # the statement's first and last characters are c0 and e; no case head
            # (`c`, `d`) and no label (`L`): only a block's start or end, or a guard
            if c0 == 125:  # `}`
                if stack:
                    popped = stack.pop()
                    popped_at = k
                    top = stack[-1] if stack else -1
            elif c0 == 105 and e == 59:  # `i` ... `;`
                if "goto L" in ln or "\x01" in ln:
                    t = _strip(ln)
                    if "goto L" in t and t.startswith("if ("):
                        name = t[t.rfind("goto L") + 5 : -1]
                        gl = guards.get(name)
                        if gl is None:
                            gl = guards[name] = []
                        gl.append((k, top))
                continue
            if e == 123:  # `{`
                stack.append(k)
                top = k
            continue
        if c0 == 76 and e == 59 and ms > 3 and ord(st[ms - 2]) == 58:  # `L` ... `:;`
            j = 1
            while j < ms - 2 and 48 <= ord(st[j]) <= 57:
                j += 1
            if j == ms - 2 and j > 1:  # `L<digits>:;`, read as the full look reads it
                if k == 0 or top < 0:
                    continue
                name = st[:j]
        if not name:
            # the other lines, read exactly as the full look reads them
            goto = -1
            if e == 59:  # `;`
                goto = 1 if "goto L" in ln else 0
                if not goto and ":" not in ln and "}" not in ln and "\x01" not in ln:
                    continue
            elif e == 125 and ln.count(" ") == m - 1:  # a lone `}`
                if stack:
                    popped = stack.pop()
                    popped_at = k
                    top = stack[-1] if stack else -1
                continue
            t = ln.strip()
            if "\x01" in t:
                t = _unmark(t)
                goto = -1
            if not t:
                continue
            c0 = ord(t[0])
            if c0 == 125:  # `}`
                if stack:
                    popped = stack.pop()
                    popped_at = k
                    top = stack[-1] if stack else -1
            elif (c0 == 99 or c0 == 100) and t.startswith(("case ", "default:")):
                last_case[top] = k
                if "default:" in t:
                    defaults.add(top)
            last = ord(t[-1])
            if last == 123:  # `{`
                stack.append(k)
                top = k
                continue
            if last != 59:  # `;`
                continue
            if goto == 1 or (goto < 0 and "goto L" in t):
                if c0 == 105 and t.startswith("if ("):  # `i`
                    name = t[t.rfind("goto L") + 5 : -1]
                    gl = guards.get(name)
                    if gl is None:
                        gl = guards[name] = []
                    gl.append((k, top))
                continue
            if k == 0 or top < 0 or len(t) < 3 or ord(t[-2]) != 58 or not _label_name(t):
                continue  # not a label `L<n>:;` inside a block
            name = t[:-2]
        # a label inside a block: what the three rewrites need next to it
        gl = guards.get(name)
        if gl is not None:
            lastl = max(last_label.get(top, -1), last_case.get(top, -1))
            near = False  # such a guard in the label's block (then the line before decides)
            for g, o2 in gl:
                if o2 == top and lastl < g < k - 1:
                    near = True
                    break
            if near:
                prev = _bare(lines[k - 1])
                ok = _is_exit(prev)
                if not ok and prev == "}" and popped_at == k - 1:
                    o = _bare(lines[popped])
                    ok = o in ("while (1) {", "for (;;) {") or o.startswith("switch (")
                if ok:
                    return True
        last_label[top] = k
        kind = kinds.get(top, -1)
        if kind < 0:
            opener = _strip(lines[top])
            kind = 1 if opener.startswith("switch (") else 2 if opener.startswith(_LOOPS) else 0
            kinds[top] = kind
        if kind == 1:
            if top in defaults and _switch_tail_look(lines, k):
                return True
        elif kind == 2 and _tail_near_end(lines, k, n) and _tail_plain(lines, k, n):
            return True
    return False
