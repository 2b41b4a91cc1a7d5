"""Pass 4: the gotos pass 3 (:mod:`.caseplace`) leaves, structured away where a reverse
engineer would write the C without them (the shapes clang 14 gives small switches).

Three rewrites, each keeping the same statements in the same order on every path:

* **loop tail copy**: ``goto L;`` where ``L:;`` starts the last few plain statements of the
  loop that the goto is directly in (:data:`TAIL_MAX` at most, no call, no braces) becomes
  a copy of those statements and ``continue;`` (``continue`` reaches the loop's condition
  the way running off the tail does);
* **switch tail hoist**: a label in a ``switch`` whose code runs to the switch's end (then
  only ``case N: break;`` groups) and whose every ``goto`` is a ``break`` of that switch:
  the code goes after the switch, the gotos become ``break;``, and what left the switch
  without it (the other ``break``\\ s, the ``case N: break;`` groups, moved to the front)
  leaves by a copy of the short exit after the switch (:data:`EXIT_MAX` statements ending
  in a ``return``, no call), the way IDA and Ghidra copy a function's return;
* **guarded block**: ``if (c) goto L; S L:;`` where ``S`` never falls through (it ends in
  a jump, a ``while (1)`` no ``break`` leaves or a ``switch`` with a ``default`` whose
  cases never leave it) becomes ``if (!c) { S }``.

Anything else stays a ``goto``. Works on the output lines like pass 3 (its scan), keeps
note markers on the statements they belong to and drops them from copies.
"""

from __future__ import annotations

import re
from typing import Final

from .base import _Budget
from .caseplace import _is_exit, _kind, _moved, _Scan
from .dataindex import balanced
from .gotolook import TAIL_MAX, _maybe, _strip, _switch_tail_look, _tail_plain
from .linetext import (
    _all_heads,
    _bare,
    _has_call,
    _heads_end,
    _label_name,
    _marks,
    _unhead,
    _unmark,
)

#: statements copied for one loop tail in all
COPY_MAX: Final = 4
#: statements of a switch's exit copied for its other ``break``\ s (the last a ``return``)
EXIT_MAX: Final = 2
#: rewrites per function at most (each one rescans the function)
MAX_EDITS: Final = 200
_IDENT: Final = re.compile(r"[A-Za-z_]\w*")


def _ind(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _binder(scan: _Scan, k: int, switch: bool) -> int:
    """The line opening the construct a ``break`` (``switch``) or ``continue`` on line
    ``k`` binds to, or -1."""
    bare = scan.bare
    o = scan.opener[k]
    while o >= 0:
        kind = _kind(bare[o])
        if kind == "loop" or (switch and kind == "switch"):
            return o
        o = scan.opener[o]
    return -1


def _put(line: str, old: str, new: list[str]) -> list[str] | None:
    """``line`` with its last statement ``old`` replaced by the statements ``new``: a
    plain line, one after case heads or under a one-line ``if``; None for other shapes."""
    if not line.endswith(old):
        return None
    pre = line[: len(line) - len(old)]
    ind = " " * _ind(line)
    bare = _unmark(pre).strip()
    if not bare:
        return [pre + new[0], *[ind + s for s in new[1:]]]
    if len(new) == 1:
        if _all_heads(bare) or (bare.startswith("if (") and bare.endswith(")")):
            return [pre + new[0]]
        return None
    if _all_heads(bare):
        return [pre.rstrip(), *[ind + "  " + s for s in new]]
    if bare.startswith("if (") and bare.endswith(")"):
        return [pre + "{", *[ind + "  " + s for s in new], ind + "}"]
    return None


def _plain(scan: _Scan, first: int, end: int, depth: int) -> list[str] | None:
    """The statements of lines ``first .. end - 1`` (no note markers) when each is a plain
    statement at ``depth`` (no braces, label, case head or call), else None."""
    out = []
    for j in range(first, end):
        s = scan.bare[j]
        if scan.depth[j] != depth or "{" in s or "}" in s or ":" in s or _has_call(s):
            return None
        if not s.endswith(";") or s.startswith(("goto ", "break;", "continue;")):
            return None
        out.append(_unmark(scan.lines[j]).strip())
    return out


def _drop_label(lines: list[str], ident: list[int], k: int) -> None:
    """Delete the label line ``k``; its notes go to the statement after it."""
    marks = _marks(lines[k])
    del lines[k]
    del ident[k]
    if marks and k < len(lines):
        ln = lines[k]
        i = _ind(ln)
        lines[k] = ln[:i] + marks + ln[i:]


def _splice(lines: list[str], ident: list[int], k: int, new: list[str]) -> None:
    """Line ``k`` replaced by ``new`` (its first line keeps the old line's index)."""
    lines[k : k + 1] = new
    ident[k : k + 1] = [ident[k]] + [-1] * (len(new) - 1)


Done = tuple[int, int, int]  # (gotos gone, labels gone, first line touched)
_NOTHING: Final = (0, 0, -1)


def _loop_tail(scan: _Scan, lines: list[str], ident: list[int], lab: int, floor: int) -> Done:
    """The loop tail copy for the label on line ``lab`` when it touches no line from
    ``floor`` on (the lists are edited in place)."""
    o = scan.opener[lab]
    if o < 0 or _kind(scan.bare[o]) != "loop":
        return _NOTHING
    c = scan.close_of.get(o, -1)
    if c < 0 or c >= floor or scan.bare[c] == "} while (0);":
        return _NOTHING
    tail = _plain(scan, lab + 1, c, scan.depth[lab])
    if tail is None or len(tail) > TAIL_MAX:
        return _NOTHING
    name = scan.bare[lab][:-2]
    goto = f"goto {name};"
    edits: dict[int, list[str]] = {}
    for g in scan.jumps:
        if o < g < c and scan.bare[g].endswith(goto) and _binder(scan, g, False) == o:
            new = _put(lines[g], goto, [*tail, "continue;"])
            if new is not None:
                edits[g] = new
    if not edits or len(edits) * len(tail) > COPY_MAX:
        return _NOTHING
    drop = len(edits) == scan.refs.get(name, 0)
    if drop:
        if scan.depth[lab - 1] == scan.depth[lab] and _never_falls(scan, lab - 1):
            del lines[lab + 1 : c]  # the tail was reached only by the gotos
            del ident[lab + 1 : c]
        _drop_label(lines, ident, lab)
    for g in sorted(edits, reverse=True):  # every goto is before the label or after it
        _splice(lines, ident, g if g < lab or not drop else g - 1, edits[g])
    return len(edits), int(drop), o


def _exit(scan: _Scan, c: int) -> list[str] | None:
    """The short exit after the block closing on line ``c``: at most :data:`EXIT_MAX`
    plain statements, the last a ``return``, no call (copies keep no notes)."""
    bare = scan.bare
    d = scan.depth[c]
    for j in range(c + 1, min(c + 1 + EXIT_MAX, len(bare))):
        s = bare[j]
        if scan.depth[j] != d or "{" in s or "}" in s or _has_call(s) or len(s) > 80:
            return None
        if s.startswith(("return;", "return ")):
            return [_unhead(_unmark(scan.lines[k]).strip()) for k in range(c + 1, j + 1)]
        if " = " not in s or not s.endswith(";") or ":" in s:
            return None
    return None


def _switch_tail(scan: _Scan, lines: list[str], ident: list[int], lab: int, floor: int) -> Done:
    """The switch tail hoist for the label on line ``lab`` when it touches no line from
    ``floor`` on."""
    bare = scan.bare
    sw = scan.opener[lab]
    if sw < 0 or not bare[sw].startswith("switch ("):
        return _NOTHING
    c = scan.close_of.get(sw, -1)
    d0 = scan.depth[lab]
    if c < 0 or c + EXIT_MAX >= floor:
        return _NOTHING
    # the tail: up to the first case head at its level (then only `case N: break;`)
    t_end = lab + 1
    while t_end < c and not (
        scan.depth[t_end] == d0 and bare[t_end].startswith(("case ", "default:"))
    ):
        s = bare[t_end]
        if scan.depth[t_end] == d0 and _label_name(s):
            return _NOTHING
        if "break;" in s and _binder(scan, t_end, True) == sw:
            return _NOTHING
        t_end += 1
    groups: list[str] = []  # the case heads of the trailing `case N: break;` groups
    j = t_end
    while j < c:
        s = bare[j]
        he = _heads_end(s)
        if he < 0 or scan.depth[j] != d0:
            return _NOTHING
        rest = s[he:]
        if rest == "break;":
            j += 1
        elif not rest and j + 1 < c and bare[j + 1] == "break;":
            j += 2
        else:
            return _NOTHING
        groups.append(s[:he].strip())
    name = bare[lab][:-2]
    goto = f"goto {name};"
    gotos: list[int] = []
    breaks: list[int] = []
    has_default = False
    for k in range(sw + 1, lab):
        s = bare[k]
        if scan.depth[k] == d0 and s.startswith(("case ", "default:")):
            h = _heads_end(s)
            has_default = has_default or (h >= 0 and "default:" in s[:h])
        if "goto " in s and s.endswith(goto):
            if _binder(scan, k, True) != sw or s.count("goto ") != 1:
                return _NOTHING
            gotos.append(k)
        elif "break;" in s and _binder(scan, k, True) == sw:
            if s.count("break;") != 1:
                return _NOTHING
            breaks.append(k)
    if not has_default or not gotos or len(gotos) != scan.refs.get(name, 0):
        return _NOTHING
    exit_ = None
    if breaks or groups:
        exit_ = _exit(scan, c)
        if exit_ is None:
            return _NOTHING
    edits: dict[int, list[str]] = {}
    for k in gotos:
        new = _put(lines[k], goto, ["break;"])
        if new is None:
            return _NOTHING
        edits[k] = new
    for k in breaks:
        assert exit_ is not None
        new = _put(lines[k], "break;", exit_)
        if new is None:
            return _NOTHING
        edits[k] = new
    shift = _ind(lines[lab]) - _ind(lines[sw])
    tail = [ln[min(shift, _ind(ln)) :] for ln in lines[lab + 1 : t_end]]
    tids = ident[lab + 1 : t_end]
    marks = _marks(lines[lab])
    if marks and tail:
        tail[0] = tail[0][: _ind(tail[0])] + marks + tail[0][_ind(tail[0]) :]
    pind = " " * _ind(lines[t_end]) if groups else ""
    if _all_heads(bare[lab - 1]):  # those cases now leave for the tail
        edits[lab - 1] = [lines[lab - 1] + " break;"]
    front: list[str] = []
    if groups:
        assert exit_ is not None
        for hs in groups:
            if len(exit_) == 1:
                front.append(f"{pind}{hs} {exit_[0]}")
            else:
                front += [f"{pind}{hs}", *[pind + "  " + x for x in exit_]]
    new_lines: list[str] = []
    new_ids: list[int] = []
    for k in range(len(lines)):
        if lab <= k < c:
            continue  # the label, the tail, the trailing groups
        e = edits.get(k)
        if e is not None:
            new_lines += e
            new_ids += [ident[k]] + [-1] * (len(e) - 1)
        else:
            new_lines.append(lines[k])
            new_ids.append(ident[k])
        if k == sw:
            new_lines += front
            new_ids += [-1] * len(front)
        elif k == c:
            new_lines += tail
            new_ids += tids
    lines[:] = new_lines
    ident[:] = new_ids
    return len(gotos), 1, sw


def _never_falls(scan: _Scan, j: int, depth: int = 0) -> bool:
    """Whether control never runs past line ``j``: a jump, the end of a ``while (1)`` no
    ``break`` leaves, or of a ``switch`` with a ``default`` nothing leaves."""
    s = scan.bare[j]
    if _is_exit(_unhead(s) if s.startswith(("case ", "default:")) else s):
        return True
    if s != "}" or depth > 8:
        return False
    o = scan.closed[j]
    if o < 0:
        return False
    if scan.sealed(j):
        return True
    if not scan.bare[o].startswith("switch (") or j == o + 1:
        return False
    d0 = scan.depth[o] + 1
    has_default = False
    for k in range(o + 1, j):
        s = scan.bare[k]
        if scan.depth[k] == d0 and s.startswith(("case ", "default:")):
            h = _heads_end(s)
            has_default = has_default or (h >= 0 and "default:" in s[:h])
        if "break;" in s and _binder(scan, k, True) == o:
            return False
    return has_default and _never_falls(scan, j - 1, depth + 1)


def _split_top(c: str) -> tuple[list[int], bool]:
    """Positions of the top-level ``==``/``!=`` of condition ``c`` and whether it has
    another top-level operator that binds looser (``&&``, ``||``, ``?:``, ``=``, ``&``,
    ``|``, ``^``, ``,``) or a comment or string."""
    if "/*" in c or '"' in c or "'" in c:
        return [], True
    depth = 0
    eq: list[int] = []
    i = 0
    n = len(c)
    while i < n:
        ch = c[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            two = c[i : i + 2]
            if two in ("==", "!="):
                eq.append(i)
                i += 2
                continue
            if two in ("<=", ">=", "<<", ">>"):
                i += 2
                continue
            if ch in "&|^?,:" or (ch == "=" and c[i - 1 : i] not in ("<", ">", "!", "=")):
                return eq, True
        i += 1
    return eq, False


def _negate(c: str) -> str:
    """The C condition that is true when ``c`` is false."""
    c = c.strip()
    if _IDENT.fullmatch(c):
        return "!" + c
    if c.startswith("!") and _IDENT.fullmatch(c[1:]):
        return c[1:]
    if c.startswith("(") and c.endswith(")") and balanced(c[1:-1]):
        return "!" + c
    eq, loose = _split_top(c)
    if not loose and len(eq) == 1:
        i = eq[0]
        op = "!=" if c[i] == "=" else "=="
        return c[:i].rstrip() + f" {op} " + c[i + 2 :].lstrip()
    return f"!({c})"


def _if_goto(s: str) -> tuple[str, str]:
    """``_IFGOTO.match(s)``'s condition and label (``if (c) goto L3;``), else ("", "");
    read by code points, not through the regex engine (``.``: anything but a newline,
    ``\\d``: any decimal digit, ``$``: the end or before a last newline)."""
    n = len(s)
    if n > 0 and ord(s[n - 1]) == 10:
        n -= 1
    if n < 14 or not s.startswith("if (") or ord(s[n - 1]) != 59:  # `;`
        return "", ""
    k = n - 2
    while k >= 0:
        c = ord(s[k])
        if 48 <= c <= 57 or (c >= 128 and s[k].isdecimal()):
            k -= 1
        else:
            break
    # s[k] must be the label's `L`, after `) goto ` that ends the condition
    if k == n - 2 or k < 11 or ord(s[k]) != 76 or s[k - 7 : k] != ") goto ":
        return "", ""
    j = k - 7
    if s.find("\n", 4, j) >= 0:
        return "", ""
    return s[4:j], s[k : n - 1]


def _guarded(scan: _Scan, lines: list[str], ident: list[int], g: int, floor: int) -> Done:
    """The guarded block for ``if (c) goto L;`` on line ``g`` when it touches no line
    from ``floor`` on."""
    cond, name = _if_goto(scan.bare[g])
    if not name or not lines[g].endswith(f"goto {name};"):
        return _NOTHING
    if not balanced(cond):
        return _NOTHING
    lab = scan.labels.get(name, -1)
    d = scan.depth[g]
    if lab <= g + 1 or lab >= floor or scan.depth[lab] != d or scan.opener[lab] != scan.opener[g]:
        return _NOTHING
    for k in range(g + 1, lab):
        if scan.depth[k] < d:
            return _NOTHING
        if scan.depth[k] == d and (
            scan.bare[k].startswith(("case ", "default:")) or _label_name(scan.bare[k])
        ):
            return _NOTHING  # another way into the block
    if not _never_falls(scan, lab - 1):
        return _NOTHING
    pre = lines[g][: len(lines[g]) - len(f"goto {name};")].rstrip()
    if not pre.endswith(")") or _unmark(pre).strip() != f"if ({cond})":
        return _NOTHING
    head = pre[: len(pre) - len(cond) - 1] + _negate(cond) + ") {"
    ind = " " * _ind(lines[g])
    body = ["  " + ln for ln in lines[g + 1 : lab]]
    drop = scan.refs.get(name, 0) == 1
    new = [head, *body, ind + "}"]
    ids = [ident[g], *ident[g + 1 : lab], -1]
    lines[g:lab] = new
    ident[g:lab] = ids
    if drop:
        _drop_label(lines, ident, g + len(new))
    return 1, int(drop), g


def _hopeful(lines: list[str]) -> bool:
    """Whether some label of ``lines`` may fit a rewrite: one cheap pass (a block is a
    line ending in ``{`` up to one starting with ``}``) before the full scan decides. Each
    test below is one the scan's rewrite makes too (same C): a loop tail wants a goto whose
    innermost loop is the label's, and plain statements; a guarded block wants the label
    after a jump or after the end of a ``while (1)``, ``for (;;)`` or ``switch``."""
    n = len(lines)
    stack: list[int] = []
    loop_of: list[int] = []  # per stack entry: the innermost loop line around it, or -1
    brk_of: list[int] = []  # per stack entry: the innermost loop or switch line, or -1
    defaults: set[int] = set()  # the blocks with a `default:` directly in them
    last_case: dict[int, int] = {}  # block -> the last case head line directly in it
    switches: list[tuple[str, int, int]] = []  # switch tail looks passed: (label, line, switch)
    guards: dict[str, list[tuple[int, int]]] = {}  # `if (c) goto L;`: (line, block)
    jumps: dict[str, int] = {}  # label -> the first line with a goto to it
    in_loop: dict[str, list[tuple[int, int, int]]] = {}  # label -> (goto, loop, loop/switch)
    last_label: dict[int, int] = {}  # block -> the last label line directly in it
    popped = -1  # the line the last `}` line closed
    popped_at = -1  # that `}` line
    top = -1  # stack[-1], or -1
    cur_loop = -1  # loop_of[-1], or -1
    cur_brk = -1  # brk_of[-1], or -1
    for k in range(n):
        ln = lines[k]
        if not ln:
            continue
        # (characters compared as code points: native ints under mypyc)
        goto = -1  # whether the statement has a `goto L` (-1: not looked for yet)
        e = ord(ln[-1])
        if e == 59:  # `;`
            goto = 1 if "goto L" in ln else 0
            if not goto and ":" not in ln and "}" not in ln and "\x01" not in ln:
                continue  # a plain statement: nothing below reads it (and no string is made)
        elif e == 125 and ln.count(" ") == len(ln) - 1:  # a lone `}` (no string is made)
            if stack:
                popped = stack.pop()
                loop_of.pop()
                brk_of.pop()
                popped_at = k
                if stack:
                    top = stack[-1]
                    cur_loop = loop_of[-1]
                    cur_brk = brk_of[-1]
                else:
                    top = cur_loop = cur_brk = -1
            continue
        t = ln.strip()  # (strip keeps a `goto L`: it starts and ends in no whitespace)
        if "\x01" in t:
            t = _unmark(t)
            goto = -1
        if not t:
            continue
        c0 = ord(t[0])
        if c0 == 125:  # `}`
            if stack:
                popped = stack.pop()
                loop_of.pop()
                brk_of.pop()
                popped_at = k
                if stack:
                    top = stack[-1]
                    cur_loop = loop_of[-1]
                    cur_brk = brk_of[-1]
                else:
                    top = cur_loop = cur_brk = -1
        elif (c0 == 99 or c0 == 100) and t.startswith(("case ", "default:")):  # `c`, `d`
            last_case[top] = k
            if "default:" in t:
                defaults.add(top)
        last = ord(t[-1])
        if last == 123:  # `{`
            kind = _kind(t) if c0 == 125 else ""
            if kind == "loop" or (
                (c0 == 119 or c0 == 102 or c0 == 100)  # `w`, `f`, `d`: no call for an `if (`
                and t.startswith(("while (", "for (", "do {"))
            ):
                cur_loop = cur_brk = k
            elif kind == "switch" or (c0 == 115 and t.startswith("switch (")):  # `s`
                cur_brk = k
            loop_of.append(cur_loop)
            brk_of.append(cur_brk)
            stack.append(k)
            top = k
            continue
        if last != 59:  # `;`
            continue
        if goto == 1 or (goto < 0 and "goto L" in t):
            name = t[t.rfind("goto L") + 5 : -1]
            if name not in jumps:
                jumps[name] = k
            il = in_loop.get(name)
            if il is None:
                il = in_loop[name] = []
            il.append((k, cur_loop, cur_brk))
            if c0 == 105 and t.startswith("if ("):  # `i`
                gl = guards.get(name)
                if gl is None:
                    gl = guards[name] = []
                gl.append((k, top))
            continue
        if k == 0 or top < 0 or len(t) < 3 or ord(t[-2]) != 58 or not _label_name(t):
            continue  # not a label `L<n>:;` inside a block
        name = t[:-2]
        # guarded block: an `if (c) goto L;` in the same block, no label between, and
        # a jump or a block's end right before the label
        prev = _bare(lines[k - 1])
        if name in guards and (_is_exit(prev) or prev.startswith("}")):
            ok = _is_exit(prev)
            if not ok and prev == "}" and popped_at == k - 1:
                o = _bare(lines[popped])
                ok = o in ("while (1) {", "for (;;) {") or o.startswith("switch (")
            if ok:
                lastl = max(last_label.get(top, -1), last_case.get(top, -1))
                for g, o2 in guards[name]:
                    if o2 == top and lastl < g < k - 1:
                        return True
        last_label[top] = k
        if not top < jumps.get(name, k) < k:
            continue  # no goto to it from inside its block before it
        opener = _strip(lines[top])
        if opener.startswith("switch ("):
            if top in defaults:  # one before the label (decided once every goto is seen)
                switches.append((name, k, top))
        elif opener.startswith(("while (", "for (", "do {", "} while (")):
            # loop tail: a goto from the loop itself (not a loop in it), a few plain
            # statements, then the loop's end
            if any(top < g < k and lp == top for g, lp, _b in in_loop[name]) and _tail_plain(
                lines, k, n
            ):
                return True
    for name, k, sw in switches:
        # switch tail hoist: a `default:` in the switch, every goto to the label from
        # before it in the switch, each one a `break` of the switch
        if all(k > g > sw and b == sw for g, _l, b in in_loop[name]):
            if _switch_tail_look(lines, k):
                return True
    return False


def _look(lines: list[str]) -> bool:
    """:func:`_hopeful`, after the lean first look that turns most functions away
    (:func:`.gotolook._maybe`: it says yes wherever :func:`_hopeful` does)."""
    return _maybe(lines) and _hopeful(lines)


def tidy_gotos(
    out: list[str | None],
    budget: _Budget,
    memo: dict[str, tuple[str, bool, int, str, list[str]]] | None = None,
) -> tuple[list[str | None], int, int, list[int]]:
    """Structure away the gotos the three rewrites above fit. Returns the new lines
    (``out`` itself when nothing changed), the gotos and labels that went, and the new
    index of each old line (-1: dropped). ``memo``: the scans' reading of each line (pass
    3's, :func:`.caseplace.place_cases`)."""
    lines: list[str] = [ln for ln in out if ln is not None]
    if not _look(lines):
        return out, 0, 0, []
    keep = [k for k, ln in enumerate(out) if ln is not None]
    ident = list(range(len(lines)))
    gotos = labels = edits = 0
    if memo is None:
        memo = {}
    while edits < MAX_EDITS and budget.units > 4 * len(lines):
        budget.spend(len(lines))
        scan = _Scan(lines, memo)
        # one scan, several rewrites: from the last line up, each one above the lines the
        # ones before it touched (the scan still holds for the lines above them)
        bare = scan.bare
        todo = [(g, -1) for g in scan.jumps if bare[g].startswith("if (")]
        for lab in scan.labels.values():
            o = scan.opener[lab]
            if o >= 0 and _kind(bare[o]) != "block":
                todo.append((o, lab))
        todo.sort(reverse=True)
        floor = len(lines) + EXIT_MAX + 1  # (the exit read after a switch may end the body)
        before = edits
        for key, lab in todo:
            if key >= floor:
                continue
            if lab >= 0:
                done = _loop_tail(scan, lines, ident, lab, floor)
                if not done[0]:
                    done = _switch_tail(scan, lines, ident, lab, floor)
            else:
                done = _guarded(scan, lines, ident, key, floor)
            if done[0]:
                edits += 1
                gotos += done[0]
                labels += done[1]
                floor = done[2]
                if edits >= MAX_EDITS:
                    break
        if edits == before or not _look(lines):
            break
    if not edits:
        return out, 0, 0, []
    return _moved(out, keep, ident, lines, gotos, labels)
