"""Pass 4 (kbtool/lift/lifter/gotoless.py) on lifted lines: the gotos a reverse engineer
would write without (a loop's short tail copied before ``continue``, a switch's tail after
the switch with its short exit copied, ``if (c) goto L; S L:`` as ``if (!c) { S }``), and
the ones it must leave alone. The C these shapes come from is checked against wasmtime in
test_lift_switch.py and test_lift_switch_loop.py."""

from __future__ import annotations

from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.gotoless import _negate, tidy_gotos
from tests.support.goto_shapes import GUARD as _GUARD
from tests.support.goto_shapes import LOOP as _LOOP
from tests.support.goto_shapes import SWITCH as _SWITCH


def _tidy(text: str) -> tuple[list[str], int, int]:
    out, gotos, labels, where = tidy_gotos(list(text.splitlines()), _Budget(10**6, None))
    lines = [ln for ln in out if ln is not None]
    if gotos:
        assert len(where) == len(text.splitlines())
    return lines, gotos, labels


def test_switch_tail_goes_after_the_switch_and_the_exit_is_copied():
    lines, gotos, labels = _tidy(_SWITCH)
    assert (gotos, labels) == (2, 1)
    assert lines == [
        "l1 = 100;",
        "switch (p0 & 15) {",
        "  case 0: return l1;",
        "  case 1:",
        "    p0 += 7;",
        "    break;",
        "  case 5:",
        "    if (p0 > 9) break;",
        "    return p0 ^ 85;",
        "  default:",
        "    p0 = -p0;",
        "}",
        "l1 = p0 + 1;",
        "return l1;",
    ]


def test_switch_tail_stays_without_a_default_or_a_short_exit():
    # no default: the values no case takes skip the tail; the hoist would run it
    text = _SWITCH.replace("  default:\n    p0 = -p0;\n", "  case 9:\n    p0 = -p0;\n")
    assert _tidy(text) == (text.splitlines(), 0, 0)
    # an exit with a call is real code: not copied into case 0
    text = _SWITCH.replace("return l1;", "return f(l1);")
    assert _tidy(text) == (text.splitlines(), 0, 0)


def test_loop_tail_is_copied_before_continue():
    lines, gotos, labels = _tidy(_LOOP)
    assert (gotos, labels) == (1, 1)
    assert lines[5:9] == ["    case 2:", "      y += z;", "      z--;", "      continue;"], lines
    assert lines[-4:] == ["  y &= 65535;", "  z--;", "} while (n != (x = x + 1));", "return y;"]


def test_loop_tail_with_a_call_or_from_an_inner_loop_stays():
    text = _LOOP.replace("  z--;\n}", "  z = g(z);\n}")
    assert _tidy(text) == (text.splitlines(), 0, 0)
    # `continue` there would continue the inner loop
    text = _LOOP.replace(
        "      y += z;\n      goto L4;", "      while (y) {\n        goto L4;\n      }"
    )
    assert _tidy(text)[1] == 0


def test_guard_over_code_that_never_falls_through_becomes_if_not():
    lines, gotos, labels = _tidy(_GUARD)
    assert (gotos, labels) == (1, 1)
    assert lines[:9] == [
        "while (1) {",
        "  if (p0 != 6) {",
        "    switch (p0 - 1) {",
        "      case 0: return 1;",
        "      case 9: continue;",
        "      default: return 2;",
        "    }",
        "  }",
        "  y = f(p1);",
    ], lines


def test_guard_stays_when_the_code_can_fall_through_or_has_another_way_in():
    # a switch without default falls through for the other values
    text = _GUARD.replace("default: return 2;", "case 3: return 2;")
    assert _tidy(text) == (text.splitlines(), 0, 0)
    # a `break` of the switch leaves it
    text = _GUARD.replace("case 9: continue;", "case 9: break;")
    assert _tidy(text) == (text.splitlines(), 0, 0)
    # two conditions on one line (`if (a) if (b) goto L;`) are not one test to negate
    text = _GUARD.replace("if (p0 == 6) goto L8;", "if (p1) if (p0 == 6) goto L8;")
    assert _tidy(text) == (text.splitlines(), 0, 0)
    # a label between the guard and its target is another way into the block
    text = _GUARD.replace("  switch (p0 - 1) {", "  L3:;\n  switch (p0 - 1) {")
    assert _tidy(text)[1] == 0


def test_negate():
    assert _negate("p0 == 6") == "p0 != 6"
    assert _negate("(l3 = f(a, b)) != 0") == "(l3 = f(a, b)) == 0"
    assert _negate("l4") == "!l4"
    assert _negate("!l4") == "l4"
    assert _negate("(l3 = f(x))") == "!(l3 = f(x))"
    assert _negate("a < b") == "!(a < b)"  # a float NaN is neither < nor >=
    assert _negate("a == b && c") == "!(a == b && c)"
    assert _negate("x & 1 == 0") == "!(x & 1 == 0)"
