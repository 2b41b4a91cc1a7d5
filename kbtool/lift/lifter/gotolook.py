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
a line's statement starts with its first character after the indentation and ends with
its last one whenever both are printable ASCII (``str.strip`` removes neither and a note
marker, ``\\x01`` digits ``\\x02``, is neither); the others are read as the full look does.
"""

from __future__ import annotations

from collections.abc import Callable

from .caseplace import _is_exit
from .linetext import _bare, _label_name, _unmark

_LOOPS = ("while (", "for (", "do {", "} while (")


def _strip(line: str) -> str:
    t = line.strip()
    return _unmark(t) if "\x01" in t else t


def _maybe(  # noqa: C901 - one pass over the lines
    lines: list[str],
    tail_plain: Callable[[list[str], int, int], bool],
    switch_tail_look: Callable[[list[str], int], bool],
) -> bool:
    """Whether :func:`.gotoless._hopeful` may say yes for ``lines`` (False: it says no).
    ``tail_plain`` and ``switch_tail_look``: its two looks after a label."""
    n = len(lines)
    stack: list[int] = []
    top = -1  # stack[-1], or -1
    popped = -1  # the line the last `}` line closed
    popped_at = -1  # that `}` line
    defaults: set[int] = set()  # the blocks with a `default:` directly in them
    last_case: dict[int, int] = {}  # block -> the last case head line directly in it
    last_label: dict[int, int] = {}  # block -> the last label line directly in it
    guards: dict[str, list[tuple[int, int]]] = {}  # `if (c) goto L;`: (line, block)
    for k in range(n):
        ln = lines[k]
        m = len(ln)
        if m == 0:
            continue
        e = ord(ln[m - 1])
        i = 0
        while i < m and ord(ln[i]) == 32:
            i += 1
        if i == m:
            continue  # spaces only: no statement
        c0 = ord(ln[i])
        # (characters compared as code points: native ints under mypyc)
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
        gl = guards.get(name)
        if gl is not None:
            prev = _bare(lines[k - 1])
            ok = _is_exit(prev)
            if not ok and prev == "}" and popped_at == k - 1:
                o = _bare(lines[popped])
                ok = o in ("while (1) {", "for (;;) {") or o.startswith("switch (")
            if ok:
                lastl = max(last_label.get(top, -1), last_case.get(top, -1))
                for g, o2 in gl:
                    if o2 == top and lastl < g < k - 1:
                        return True
        last_label[top] = k
        opener = _strip(lines[top])
        if opener.startswith("switch ("):
            if top in defaults and switch_tail_look(lines, k):
                return True
        elif opener.startswith(_LOOPS) and tail_plain(lines, k, n):
            return True
    return False
