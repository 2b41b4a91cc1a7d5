"""Pass 4's cheap look before its scan (kbtool/lift/lifter/gotoless.py ``_hopeful``): it
turns away the functions whose gotos cannot fit a rewrite (so the scan is not run), and
never one the rewrite would change: with the look forced to say yes, the pass gives the
same lines for every shape below."""

from __future__ import annotations

import pytest

from kbtool.lift.lifter import gotoless
from kbtool.lift.lifter.base import _Budget
from tests.support.goto_shapes import GUARD as _GUARD
from tests.support.goto_shapes import LOOP as _LOOP
from tests.support.goto_shapes import SWITCH as _SWITCH

# (text, whether the rewrite changes it, whether the look lets the scan run)
_SHAPES = [
    (_SWITCH, True, True),
    (_LOOP, True, True),
    (_GUARD, True, True),
    # the switch tail: no default before the label; a goto from outside the switch; a
    # goto that is a loop's `break` inside the switch
    (_SWITCH.replace("  default:\n    p0 = -p0;\n", "  case 9:\n    p0 = -p0;\n"), False, False),
    (_SWITCH.replace("l1 = 100;", "l1 = 100;\nif (p1) goto L2;"), False, False),
    (
        _SWITCH.replace("    p0 += 7;\n    goto L2;", "    while (p0) {\n      goto L2;\n    }"),
        False,
        False,
    ),
    # the loop tail: a call in it; a goto from an inner loop; a jump in the tail
    (_LOOP.replace("  z--;\n}", "  z = g(z);\n}"), False, False),
    (
        _LOOP.replace(
            "      y += z;\n      goto L4;", "      while (y) {\n        goto L4;\n      }"
        ),
        False,
        False,
    ),
    (_LOOP.replace("  z--;\n}", "  return z;\n}"), True, True),  # a return copies too
    # the guarded block: code that falls through to the label (an `if`, a switch without
    # default, a loop a `break` leaves); a case head or a label between
    (_GUARD.replace("  switch (p0 - 1) {", "  if (p0 - 1) {"), False, False),
    # (these two the look lets through: the scan decides)
    (_GUARD.replace("default: return 2;", "case 3: return 2;"), False, True),
    (_GUARD.replace("case 9: continue;", "case 9: break;"), False, True),
    (_GUARD.replace("  switch (p0 - 1) {", "  L3:;\n  switch (p0 - 1) {"), False, False),
    (
        _GUARD.replace(
            "  if (p0 == 6) goto L8;", "  switch (p1) {\n  case 2: if (p0 == 6) goto L8;"
        )
        .replace("  switch (p0 - 1) {", "  case 3:\n  switch (p0 - 1) {")
        .replace("  p0 = 12;\n}", "  p0 = 12;\n  }\n}"),
        False,
        False,
    ),
    (
        "while (1) {\n  if (a) goto L1;\n  while (1) {\n    if (b) break;\n  }\n"
        "  L1:;\n  c = f();\n}",
        False,
        True,  # (the scan finds the `break`)
    ),
    (
        "while (1) {\n  if (a) goto L1;\n  while (1) {\n    c++;\n  }\n  L1:;\n  c = f();\n}",
        True,
        True,
    ),
]


def _run(text: str) -> tuple:
    out, gotos, labels, where = gotoless.tidy_gotos(text.splitlines(), _Budget(10**6, None))
    return [ln for ln in out if ln is not None], gotos, labels, where


@pytest.mark.parametrize(("text", "changed", "look"), _SHAPES)
def test_the_look_turns_away_only_what_the_rewrite_leaves(text, changed, look, monkeypatch):
    lines = text.splitlines()
    looked = gotoless._hopeful(lines)
    plain = _run(text)
    # (both looks: the lean first one, gotolook.py, and this one)
    monkeypatch.setattr(gotoless, "_look", lambda lines: True)
    forced = _run(text)
    assert plain == forced  # the look never changes the C
    assert (forced[1] > 0) == changed, forced[0]
    assert looked == look  # the shapes it turns away: no scan for nothing
