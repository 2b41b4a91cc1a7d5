"""The case and goto passes read a line's label and gotos by code points (caseplace._info):
the same answers as the regular expressions they replace, in the pure lifter and its twin."""

from __future__ import annotations

import importlib
import re

import pytest

from kbtool.lift import active

_LABEL = re.compile(r"^(L\d+):;$")
_GOTO = re.compile(r"\bgoto (L\d+);")

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
    "case 3: goto L9;",
    "",
    "}",
]


def _modules():
    mods = [importlib.import_module("kbtool.lift.lifter.caseplace")]
    if active.compiled_state() == "ready":
        mods.append(importlib.import_module(f"kbtool.lift.{active.COMPILED_NAME}.caseplace"))
    return mods


@pytest.mark.parametrize("mod", _modules(), ids=lambda m: m.__name__)
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
