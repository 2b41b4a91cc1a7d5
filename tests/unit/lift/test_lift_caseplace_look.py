"""The case pass's one-pass first look and its scans over lines with dropped (None) slots."""

from __future__ import annotations

from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.caseplace import _first_look, place_cases

# two trampolines: L5's body moves under its case (ending in `goto L6`), L6 (two gotos)
# stays; repeated plain lines share the scans' memo
_TEXT = """\
while (1) {
  switch (x) {
    case 1: goto L5;
    case 2: goto L6;
    default: break;
  }
  y = 0;
  y = 0;
  return y;
}
L5:;
y = 1;
y = 0;
goto L6;
L6:;
y = 2;
y = 0;
return y;"""


def _with_holes(lines: list[str]) -> list[str | None]:
    """``lines`` with a dropped slot (None) before each one, as the walk leaves them."""
    out: list[str | None] = []
    for ln in lines:
        out += [None, ln]
    return out


def test_first_look_finds_trampolines_and_label_lines_among_kept_lines():
    tramps, marks = _first_look(_with_holes(_TEXT.splitlines()))
    assert tramps == ["L5", "L6"]
    assert marks == [10, 14]  # indices among the lines that are not None


def test_first_look_without_trampoline_finds_none():
    assert _first_look(["L5:;", None, "goto L5;", "x = a ? b : c;"]) == ([], [0])


def test_holes_do_not_change_what_moves():
    plain = _TEXT.splitlines()
    a, ga, la, wa = place_cases(list(plain), _Budget(10**6, None))
    holed = _with_holes(plain)
    b, gb, lb, wb = place_cases(holed, _Budget(10**6, None))
    assert (ga, la) == (gb, lb)
    assert ga >= 1  # something moved
    assert [ln for ln in a if ln is not None] == [ln for ln in b if ln is not None]
    assert b[b.index("    case 1:") + 1] == "      y = 1;"  # the body under its case
    # each kept old slot maps where it does without holes; dropped slots map to -1
    assert wb[1::2] == wa
    assert set(wb[0::2]) == {-1}
