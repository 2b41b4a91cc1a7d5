"""The case and goto passes' line readers (:mod:`.caseplace`, :mod:`.gotoless`): a line's
bare statement (no note markers, comments or string literals), its label and its gotos, read by
code points rather than the regex engine (a method call per line under mypyc). Each answers as
the regular expression it replaces does (tests/unit/lift/test_lift_caseplace_text.py)."""

from __future__ import annotations

import re
from typing import Final

_MARK: Final = re.compile("\x01[0-9]+\x02")
_COMMENT: Final = re.compile(r"/\*.*?\*/")
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')


def _bare(line: str) -> str:
    """The statement without indentation, note markers, comments and string literals."""
    s = (_unmark(line) if "\x01" in line else line).strip()
    if "/*" in s:
        s = _uncomment(s).strip()
    if '"' in s:
        s = _unstring(s)
    return s


# _bare runs for most lines the case and goto passes read: markers, comments and strings
# are taken out by code points, not through the regex engine (a method call per line under
# mypyc). Each answers as the ``sub`` of its regular expression does (_MARK, _COMMENT,
# _STRING: leftmost matches, no overlap; ``.`` is anything but a newline).


def _unmark(s: str) -> str:
    """``_MARK.sub("", s)``: ``s`` without its note markers (``\x01`` digits ``\x02``)."""
    i = s.find("\x01")
    if i < 0:
        return s
    n = len(s)
    parts: list[str] = []
    start = 0
    while i >= 0:
        k = i + 1
        while k < n and 48 <= ord(s[k]) <= 57:  # [0-9]
            k += 1
        if k > i + 1 and k < n and ord(s[k]) == 2:
            parts.append(s[start:i])
            start = k + 1
            i = s.find("\x01", start)
        else:
            i = s.find("\x01", i + 1)
    if not parts:
        return s
    parts.append(s[start:])
    return "".join(parts)


def _uncomment(s: str) -> str:
    """``_COMMENT.sub("", s)``: ``s`` without its ``/* ... */`` comments (one line each)."""
    i = s.find("/*")
    if i < 0:
        return s
    parts: list[str] = []
    start = 0
    while i >= 0:
        j = s.find("*/", i + 2)
        if j < 0:
            break  # no end after this start: none after a later one either
        if s.find("\n", i + 2, j) < 0:
            parts.append(s[start:i])
            start = j + 2
            i = s.find("/*", start)
        else:
            i = s.find("/*", i + 1)
    if not parts:
        return s
    parts.append(s[start:])
    return "".join(parts)


def _unstring(s: str) -> str:
    """``_STRING.sub('""', s)``: ``s`` with each string literal emptied."""
    i = s.find('"')
    if i < 0:
        return s
    n = len(s)
    parts: list[str] = []
    start = 0
    while i >= 0:
        k = i + 1
        end = -1
        while k < n:
            c = ord(s[k])
            if c == 34:  # `"`
                end = k
                break
            if c == 92:  # a backslash and any character but a newline
                if k + 1 < n and ord(s[k + 1]) != 10:
                    k += 2
                else:
                    break
            else:
                k += 1
        if end >= 0:
            parts.append(s[start:i])
            parts.append('""')
            start = end + 1
            i = s.find('"', start)
        else:
            i = s.find('"', i + 1)
    if not parts:
        return s
    parts.append(s[start:])
    return "".join(parts)


# The scan reads every line: its label and gotos by code points, not through the regex
# engine (a method call per line under mypyc). They answer as _LABEL.match(s).group(1)
# and _GOTO.findall(s) do (``\d``: any decimal digit; ``\b``: no word character before).


def _label_name(s: str) -> str:
    """The label ``L12`` of the line ``L12:;``, else ""."""
    n = len(s)
    if n > 0 and ord(s[n - 1]) == 10:  # `$` also matches before a last newline
        n -= 1
    if n < 4 or ord(s[0]) != 76 or ord(s[n - 1]) != 59 or ord(s[n - 2]) != 58:  # L...:;
        return ""
    for k in range(1, n - 2):
        c = ord(s[k])
        if (c < 48 or c > 57) and (c < 128 or not s[k].isdecimal()):
            return ""
    return s[: n - 2]


def _gotos(s: str) -> list[str]:
    """The targets of the ``goto Ln;`` statements in ``s``, left to right."""
    out: list[str] = []
    n = len(s)
    i = s.find("goto L")
    while i >= 0:
        word = False
        if i > 0:
            c = ord(s[i - 1])
            word = (
                48 <= c <= 57
                or 65 <= c <= 90
                or 97 <= c <= 122
                or c == 95
                or (c >= 128 and s[i - 1].isalnum())
            )
        if not word:
            k = i + 6
            while k < n:
                c = ord(s[k])
                if 48 <= c <= 57 or (c >= 128 and s[k].isdecimal()):
                    k += 1
                else:
                    break
            if k > i + 6 and k < n and ord(s[k]) == 59:
                out.append(s[i + 5 : k])
                i = s.find("goto L", k + 1)
                continue
        i = s.find("goto L", i + 1)
    return out


# The passes' other expressions, read by code points the same way: _CALL.search,
# _HEADS.match/sub/fullmatch, _TRAMP.match, _ESCAPE.findall and _MARK.findall (``\w``: an
# ASCII letter, digit or ``_``, or any character ``isalnum``; ``\s``: any ``isspace``).


def _is_word(s: str, k: int) -> bool:
    """Whether ``s[k]`` is a word character (``\\w``)."""
    c = ord(s[k])
    if c < 128:
        return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95
    return s[k].isalnum()


def _has_call(s: str) -> bool:
    """``_CALL.search(s) is not None``: a name (a letter or ``_`` first, at the start of a
    run of word characters) right before a ``(``."""
    p = s.find("(")
    while p >= 0:
        k = p
        while k > 0:
            c = ord(s[k - 1])
            if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95:
                k -= 1
            elif c >= 128 and s[k - 1].isalnum():
                k -= 1
            else:
                break
        if k < p:
            c = ord(s[k])
            if 65 <= c <= 90 or 97 <= c <= 122 or c == 95:
                return True
        p = s.find("(", p + 1)
    return False


def _at(s: str, i: int, w: str) -> bool:
    """``s.startswith(w, i)`` for ``i >= 0``, compared by code points (a method call under
    mypyc otherwise: the ``start`` argument has no native form)."""
    m = len(w)
    if i + m > len(s):
        return False
    for j in range(m):
        if ord(s[i + j]) != ord(w[j]):
            return False
    return True


def _heads_end(s: str) -> int:
    """Where ``_HEADS.match(s)`` ends (the ``case N:``/``default:`` heads at the start of
    ``s`` and the space after each), or -1 when it does not match."""
    n = len(s)
    i = 0
    end = -1
    while True:
        if _at(s, i, "case "):
            k = i + 5
            if k < n and ord(s[k]) == 45:  # `-`
                k += 1
            d = k
            while k < n:
                c = ord(s[k])
                if 48 <= c <= 57 or (c >= 128 and s[k].isdecimal()):
                    k += 1
                else:
                    break
            if k == d or k >= n or ord(s[k]) != 58:  # `:`
                return end
            k += 1
        elif _at(s, i, "default:"):
            k = i + 8
        else:
            return end
        while k < n:
            c = ord(s[k])
            if c == 32 or 9 <= c <= 13 or 28 <= c <= 31 or (c >= 128 and s[k].isspace()):
                k += 1
            else:
                break
        i = end = k


def _unhead(s: str) -> str:
    """``_HEADS.sub("", s)``: ``s`` without its case heads."""
    e = _heads_end(s)
    return s[e:] if e > 0 else s


def _all_heads(s: str) -> bool:
    """``_HEADS.fullmatch(s + " ") is not None``: ``s`` is case heads only."""
    return _heads_end(s) == len(s)


def _tramp(s: str) -> tuple[str, str]:
    """``_TRAMP.match(s)``'s case heads and label (``case 3: default: goto L7;``), else
    ("", "")."""
    n = len(s)
    if n > 0 and ord(s[n - 1]) == 10:  # `$` also matches before a last newline
        n -= 1
    i = 0
    while True:
        if _at(s, i, "case "):
            k = i + 5
            if k < n and ord(s[k]) == 45:  # `-`
                k += 1
            d = k
            while k < n:
                c = ord(s[k])
                if 48 <= c <= 57 or (c >= 128 and s[k].isdecimal()):
                    k += 1
                else:
                    break
            if k == d or k + 1 >= n or ord(s[k]) != 58 or ord(s[k + 1]) != 32:  # `: `
                return "", ""
            i = k + 2
        elif _at(s, i, "default: "):
            i += 9
        else:
            break
    if i == 0 or not _at(s, i, "goto L"):
        return "", ""
    k = i + 6
    while k < n:
        c = ord(s[k])
        if 48 <= c <= 57 or (c >= 128 and s[k].isdecimal()):
            k += 1
        else:
            break
    if k == i + 6 or k != n - 1 or ord(s[k]) != 59:  # `;` last
        return "", ""
    return s[:i], s[i + 5 : k]


def _escapes(s: str) -> list[str]:
    """``_ESCAPE.findall(s)``: the ``break;`` and ``continue;`` statements in ``s`` (no word
    character right before), left to right, as "break" or "continue"."""
    found: list[tuple[int, str]] = []
    for word in ("break;", "continue;"):
        i = s.find(word)
        while i >= 0:
            if i == 0 or not _is_word(s, i - 1):
                found.append((i, word[:-1]))
            i = s.find(word, i + 1)
    if len(found) > 1:
        found.sort()
    return [w for _i, w in found]


def _marks(s: str) -> str:
    """``"".join(_MARK.findall(s))``: the note markers of ``s``, in order."""
    i = s.find("\x01")
    if i < 0:
        return ""
    n = len(s)
    parts: list[str] = []
    while i >= 0:
        k = i + 1
        while k < n and 48 <= ord(s[k]) <= 57:  # [0-9]
            k += 1
        if k > i + 1 and k < n and ord(s[k]) == 2:
            parts.append(s[i : k + 1])
            i = s.find("\x01", k + 1)
        else:
            i = s.find("\x01", i + 1)
    return "".join(parts)


def _note_ids(s: str) -> list[int]:
    """``[int(k) for k in _NOTE.findall(s)]``: the note numbers of ``s``'s markers."""
    out: list[int] = []
    i = s.find("\x01")
    n = len(s)
    while i >= 0:
        k = i + 1
        while k < n and 48 <= ord(s[k]) <= 57:  # [0-9]
            k += 1
        if k > i + 1 and k < n and ord(s[k]) == 2:
            out.append(int(s[i + 1 : k]))
            i = s.find("\x01", k + 1)
        else:
            i = s.find("\x01", i + 1)
    return out
