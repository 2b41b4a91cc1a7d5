"""The case and goto passes' other line readers (linetext: a call in a statement, case
heads, a ``case N: goto L;`` trampoline, ``break``/``continue`` statements, note markers)
read by code points: the same answers as the regular expressions they replace, on edge
cases and on random lines, in the pure lifter and its twin."""

from __future__ import annotations

import importlib
import random
import re

import pytest

from kbtool.lift import active

_CALL = re.compile(r"\b[A-Za-z_]\w*\(")
_HEADS = re.compile(r"^(?:(?:case -?\d+|default):\s*)+")
_TRAMP = re.compile(r"^((?:(?:case -?\d+|default): )+)goto (L\d+);$")
_ESCAPE = re.compile(r"\b(break|continue);")
_MARK = re.compile("\x01[0-9]+\x02")
_NOTE = re.compile("\x01([0-9]+)\x02")
_EXITS = ("goto ", "return;", "return ", "break;", "continue;", "wasm_unreachable();")
_THROWS = ("wasm_throw(", "wasm_rethrow(", "wasm_throw_ref(")

_EDGES = [
    "",
    "f(x);",
    "x = f(1);",
    "(f)(x);",
    "1f(x);",  # a run of word characters starting with a digit: no name
    "_f(x);",
    "a.b(x);",
    "x = (y);",
    "é(x);",  # a non-ASCII letter first: no name ([A-Za-z_])
    "aé(x);",  # ... but inside a name it is a word character
    "a\u0661(x);",  # Arabic-Indic digit: a word character
    "a\u00b2(x);",  # superscript two: a word character (isalnum)
    "a (x);",
    "((((",
    "case 1: goto L2;",
    "case -1: goto L2;",
    "case - 1: goto L2;",
    "case 1: case 2: default: goto L33;",
    "default: goto L1;",
    "default:goto L1;",
    "case 1:  goto L1;",
    "case 1: goto L1;\n",  # `$` matches before a last newline
    "case 1: goto L1;\n\n",
    "case 1: goto L1; ",
    "case 1: goto L;",
    "case \u0661: goto L\u0662;",  # \d: any decimal digit
    "case \u00b2: goto L1;",  # a superscript is not a decimal digit
    "case 1: goto L1;x",
    "goto L1;",
    "case 1:",
    "case 1:\t\n case 2: x;",
    "case 1:\x1cdefault:\u00a0x = 1;",  # \s: isspace, also the separators and no-break space
    "case 1:\u200bx;",  # a zero-width space is not whitespace
    "case 1: default: ",
    "case 1: default:",
    "case 1:case 2:",
    "case x: y;",
    "case -: y;",
    "default",
    "break;",
    "continue;",
    "xbreak;",
    "_continue;",
    "ébreak;",
    " break; continue; break;",
    "if (a) break; else continue;",
    "breakcontinue;",
    "break;;continue;",
    "x = 1;\x0112\x02",
    "\x011\x02\x0122\x02  goto L3;",
    "\x01\x02",
    "\x01\x0112\x02\x02",
    "\x011x\x02",
    "\x01\u0661\x02",
    "\x0112",
    "return;",
    "return x;",
    "returnx;",
    "goto L1;",
    "wasm_unreachable();",
    "wasm_throw(1);",
    "wasm_throw(1)",
    "wasm_rethrow(0);",
    "while (1) {",
]

_PIECES = [
    "case ",
    "default:",
    ": ",
    ":",
    " ",
    "  ",
    "\t",
    "\n",
    "-",
    "1",
    "23",
    "\u0661",
    "\u00b2",
    "goto ",
    "goto L",
    "L",
    "7",
    ";",
    "(",
    ")",
    "f",
    "_x",
    "é",
    ".",
    "break",
    "continue",
    "\x01",
    "\x02",
    "\x01" + "4" + "\x02",
    "return",
    "wasm_throw(",
    "{",
    "}",
]


# pieces of trampolines and case heads (the ones above rarely make a whole one)
_HEAD_PIECES = ["case 1: ", "case -2: ", "case 3:", "default: ", "default:", "goto L4;", "goto L"]
_HEAD_PIECES += ["5", "\u0661", ";", " ", "\n", "x", "case ", ":"]


def _random_lines(n: int, seed: int, pieces: list[str] = _PIECES) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 9))) for _ in range(n)]


def _modules(name: str):
    mods = [importlib.import_module(f"kbtool.lift.lifter.{name}")]
    if active.compiled_state() == "ready":
        mods.append(importlib.import_module(f"kbtool.lift.{active.COMPILED_NAME}.{name}"))
    return mods


def _check(mod, s: str) -> None:
    assert mod._has_call(s) == (_CALL.search(s) is not None), repr(s)
    h = _HEADS.match(s)
    assert mod._heads_end(s) == (h.end() if h else -1), repr(s)
    assert mod._unhead(s) == _HEADS.sub("", s), repr(s)
    assert mod._all_heads(s) == (_HEADS.fullmatch(s + " ") is not None), repr(s)
    t = _TRAMP.match(s)
    assert mod._tramp(s) == ((t.group(1), t.group(2)) if t else ("", "")), repr(s)
    assert mod._escapes(s) == _ESCAPE.findall(s), repr(s)
    assert mod._marks(s) == "".join(_MARK.findall(s)), repr(s)
    assert mod._note_ids(s) == [int(k) for k in _NOTE.findall(s)], repr(s)


@pytest.mark.parametrize("mod", _modules("linetext"), ids=lambda m: m.__name__)
def test_readers_answer_as_the_regular_expressions_on_edge_cases(mod):
    for s in _EDGES:
        _check(mod, s)
        _check(mod, "  " + s)
        _check(mod, s + " x")


@pytest.mark.parametrize("mod", _modules("linetext"), ids=lambda m: m.__name__)
def test_readers_answer_as_the_regular_expressions_on_random_lines(mod):
    for s in _random_lines(20000, 18) + _random_lines(20000, 5, _HEAD_PIECES):
        _check(mod, s)


@pytest.mark.parametrize("mod", _modules("caseplace"), ids=lambda m: m.__name__)
def test_exit_test_answers_as_the_prefixes(mod):
    for s in _EDGES + _random_lines(5000, 7):
        want = s.startswith(_EXITS) or (s.startswith(_THROWS) and s.endswith(");"))
        assert mod._is_exit(s) == want, repr(s)
