"""The case and goto passes read a line's label and gotos by code points (caseplace._info,
linetext's readers), take note markers, comments and string literals out of it the same way
(linetext._bare) and read a guard ``if (c) goto L;`` (gotoless._if_goto): the same answers
as the regular expressions they replace, in the pure lifter and its twin."""

from __future__ import annotations

import importlib
import re

import pytest

from kbtool.lift import active

_LABEL = re.compile(r"^(L\d+):;$")
_GOTO = re.compile(r"\bgoto (L\d+);")
_MARK = re.compile("\x01[0-9]+\x02")
_COMMENT = re.compile(r"/\*.*?\*/")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_IFGOTO = re.compile(r"^if \((.*)\) goto (L\d+);$")

_LINES = [
    "goto L12;",
    "if (x) goto L3;",
    "if (a) goto L1; else goto L22;",
    "goto L1;goto L2;",
    "xgoto L1;",  # inside a word: no goto
    "_goto L1;",
    "1goto L1;",
    "égoto L6;",  # a non-ASCII letter before: inside a word
    "é goto L6;",
    "(goto L3;",
    "goto L;",  # no digits
    "goto L12",  # no `;`
    "goto L3 ;",
    "goto L8x;",
    "goto Lgoto L7;",
    "goto L4;; goto L5;",
    "goto L\u0661\u0662;",  # Arabic-Indic digits are decimal digits (\d)
    "goto L\u00b2;",  # a superscript two is a digit but not a decimal one
    "\u00b2goto L1;",  # ... and a word character
    "L1:;",
    "L12345:;",
    "L:;",
    "Lx:;",
    "l1:;",
    "LL1:;",
    "L1 :;",
    "L\u0661:;",
    "L\u00b2:;",
    "L1:; goto L2;",
    "L1:;\n",  # `$` matches before a last newline
    "L1:;\n\n",
    "L1\n:;",
    "case 3: goto L9;",
    "",
    "}",
]


# note markers, comments and string literals, and the text around them
_MARKED = [
    "x = 1;\x0112\x02",
    "\x011\x02\x0122\x02  goto L3;",
    "\x01\x02",  # no digits: not a marker
    "\x01\x0112\x02\x02",
    "\x011x\x02",
    "\x01\u0661\x02",  # [0-9] only: an Arabic-Indic digit is not one
    "\x0112",
    "a /* b */ c /* d */",
    "a /* b",
    "/*/ c */",
    "/**/",
    "a /* b \n c */ d /* e */",  # `.` is anything but a newline
    "/* a */ */",
    'p("a\\"b") + "c";',
    '"\\\\" x "y"',
    '"a\\\n" "b"',  # a backslash before a newline escapes nothing
    '"a\nb"',  # ... but a newline is a plain character of a literal
    '"abc',
    '"\\',
    'x = "/* no comment */"; /* "no string" */',
    '"" ""',
    "if (a == b) goto L12;",
    "if ((a) goto L1;) goto L2;",
    "if () goto L1;",
    "if (x) goto L1;\n",
    "if (x\n) goto L1;",
    "if (x) goto L\u0661;",
    "if (x) goto L\u00b2;",
    "if (x) goto L;",
    "if (x) goto L1; ",
    "if (x)goto L1;",
    " if (x) goto L1;",
    "if (x) goto L1 ;",
]


def _modules(name: str = "caseplace"):
    mods = [importlib.import_module(f"kbtool.lift.lifter.{name}")]
    if active.compiled_state() == "ready":
        mods.append(importlib.import_module(f"kbtool.lift.{active.COMPILED_NAME}.{name}"))
    return mods


@pytest.mark.parametrize("mod", _modules("linetext"), ids=lambda m: m.__name__)
def test_label_and_gotos_answer_as_the_regular_expressions(mod):
    for s in _LINES:
        want = _LABEL.match(s)
        assert mod._label_name(s) == (want.group(1) if want else ""), s
        assert mod._gotos(s) == _GOTO.findall(s), s


@pytest.mark.parametrize("mod", _modules(), ids=lambda m: m.__name__)
def test_info_reads_label_and_gotos_of_a_line(mod):
    _s, closes, net, label, gotos = mod._info("  L7:;")
    assert (closes, net, label, gotos) == (False, 0, "L7", [])
    _s, closes, net, label, gotos = mod._info("} else if (c) goto L3; /* goto L4; */")
    assert (closes, label, gotos) == (True, "", ["L3"])
    _s, closes, net, label, gotos = mod._info('s = "goto L5;"; goto L6;')
    assert gotos == ["L6"]  # string literals and comments are not read


@pytest.mark.parametrize("mod", _modules("linetext"), ids=lambda m: m.__name__)
def test_markers_comments_and_strings_go_as_the_regular_expressions_take_them(mod):
    for s in _LINES + _MARKED:
        assert mod._unmark(s) == _MARK.sub("", s), repr(s)
        assert mod._uncomment(s) == _COMMENT.sub("", s), repr(s)
        assert mod._unstring(s) == _STRING.sub('""', s), repr(s)
    assert mod._bare('  \x013\x02s = "a"; /* "c" */ goto L2;') == 's = "";  goto L2;'


@pytest.mark.parametrize("mod", _modules("gotoless"), ids=lambda m: m.__name__)
def test_guard_reads_as_the_regular_expression(mod):
    for s in _LINES + _MARKED:
        want = _IFGOTO.match(s)
        assert mod._if_goto(s) == ((want.group(1), want.group(2)) if want else ("", "")), repr(s)
