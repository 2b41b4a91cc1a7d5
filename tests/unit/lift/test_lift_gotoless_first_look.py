"""Pass 4's lean first look (kbtool/lift/lifter/gotolook.py ``_maybe``): it answers no
only where the full look (gotoless.py ``_hopeful``) answers no, so the goto pass gives the
same C with it; and it does turn away the functions whose labels have nothing a rewrite
needs."""

from __future__ import annotations

import random

import pytest

from kbtool.lift.lifter import gotoless
from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.gotolook import _maybe
from tests.support.goto_shapes import GUARD, LOOP, SWITCH


def _first(lines: list[str]) -> bool:
    return _maybe(lines)


# statements as the lifter writes them, and odd ones: note markers, tabs, trailing spaces,
# comments, a `case` line with no colon, names starting with c, d, i or L
_STMTS = [
    "x = 1;",
    "y = f(x);",
    "z = a ? b : c;",
    "return;",
    "return x;",
    "break;",
    "continue;",
    "wasm_unreachable();",
    "goto L1;",
    "goto L2;",
    "if (x) goto L1;",
    "if (y) goto L2;",
    "if (c == 2) goto L3;",
    "if (x) x = 2;",
    "if (x) return 3;",
    "if (x) { goto L1; }",
    "case 1: goto L1;",
    "case 2: x = 3;",
    "case 3: break;",
    "default: goto L2;",
    "default: return 1;",
    "case 4:",
    "default:",
    "case 5 x;",
    "c = 2;",
    "d = 3;",
    "Lx = 4;",
    "L1:;",
    "L2:;",
    "L3:;",
    "/* goto L1; */ x = 1;",
    "x = 1; goto L3;",
    "L12:;",
    "L1 :;",
    "L\u0663:;",
    "L1:; x = 2;",
]
_OPEN = [
    "while (1) {",
    "for (;;) {",
    "while (x) {",
    "do {",
    "switch (x) {",
    "if (x) {",
    "case 6: {",
    "default: {",
    "{",
]
_CLOSE = ["}", "} while (0);", "} while (x);", "} else {", "} else if (y) {"]


def _line(rng: random.Random, depth: int) -> tuple[str, int]:
    r = rng.random()
    if r < 0.18:
        s, d = rng.choice(_OPEN), depth + 1
    elif r < 0.32 and depth > 0:
        s = rng.choice(_CLOSE)
        d = depth if s.endswith("{") else depth - 1
    else:
        s, d = rng.choice(_STMTS), depth
    ind = "  " * min(depth, 6)
    q = rng.random()
    if q < 0.06:
        s = "\x011\x02" + s  # a note marker before the statement
    elif q < 0.08:
        s = s[:2] + "\x0112\x02" + s[2:]  # one inside it
    elif q < 0.09:
        s = s + "\x013\x02"
    elif q < 0.10:
        ind = "\t" + ind
    elif q < 0.11:
        s = s + "  "
    elif q < 0.12:
        s = ""
    elif q < 0.14:
        ind += " " * rng.randrange(1, 4)  # not as indented as its depth says
    elif q < 0.15:
        ind = ""
    return ind + s, d


def _random_lines(rng: random.Random) -> list[str]:
    lines: list[str] = []
    depth = 0
    for _ in range(rng.randrange(3, 40)):
        ln, depth = _line(rng, depth)
        lines.append(ln)
    lines += ["}"] * depth
    return lines


def test_the_first_look_says_yes_wherever_the_full_look_does():
    rng = random.Random(20261128)
    yes = no = 0
    for _ in range(6000):
        lines = _random_lines(rng)
        full = gotoless._hopeful(lines)
        first = _first(lines)
        assert first or not full, lines
        yes += full
        no += not first
    assert yes > 40 and no > 4000  # both answers are exercised


@pytest.mark.parametrize("text", [SWITCH, LOOP, GUARD])
def test_the_rewritten_shapes_pass_the_first_look(text):
    lines = text.splitlines()
    assert gotoless._hopeful(lines)
    assert _first(lines)


_NOTHING_TO_DO = """\
while (1) {
  if (a) {
    if (b) goto L1;
    x = f(x);
  }
  y = g(y);
  L1:;
  z = h(z);
  x = x + 1;
  if (x) continue;
  break;
}
return z;"""


def test_a_label_with_nothing_a_rewrite_needs_is_turned_away():
    lines = _NOTHING_TO_DO.splitlines()
    assert not _first(lines)
    out, gotos, labels, _where = gotoless.tidy_gotos(list(lines), _Budget(10**6, None))
    assert (gotos, labels) == (0, 0)
    assert out == lines
    # the `if (b) goto L1;` one level up, right in the label's block, after a jump
    moved = _NOTHING_TO_DO.replace("    if (b) goto L1;\n", "").replace(
        "  y = g(y);\n", "  if (b) goto L1;\n  y = g(y);\n  return y;\n"
    )
    assert _first(moved.splitlines())
    assert gotoless.tidy_gotos(moved.splitlines(), _Budget(10**6, None))[1] == 1
