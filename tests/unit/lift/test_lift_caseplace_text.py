"""The case pass's first look searches the function's joined text: the same trampolines
and label lines as reading it line by line, wherever the lines fall."""

from __future__ import annotations

import random

from kbtool.lift.lifter.caseplace import _TRAMP, _bare, _first_look


def _by_line(out: list[str | None]) -> tuple[list[str], list[int]]:
    """The first look read one line at a time (what the search must agree with)."""
    lines = [ln for ln in out if ln is not None]
    tramps = []
    marks = []
    for k, ln in enumerate(lines):
        if ": goto L" in ln:
            m = _TRAMP.match(_bare(ln))
            if m is not None:
                tramps.append(m.group(2))
        elif ln.endswith(":;") and "goto L" not in ln:
            marks.append(k)
    return tramps, marks


_PIECES = [
    "case 1: goto L5;",
    "  case 2: case 3: goto L6;",
    "    default: goto L7;",
    "case 4: goto L8; /* two */",
    "L5:;",
    "  L6:;",
    "x = y ? a : b;",
    "goto L5;",
    "if (x) goto L6;",
    "L9: goto L5;",
    "y = 1; // L:;",
    ":;",
    "",
    's = "case 1: goto L2;";',
    "case 5: goto L10;",
]


def test_search_agrees_with_the_line_by_line_reading():
    rnd = random.Random(28)
    for _ in range(400):
        out: list[str | None] = [
            rnd.choice(_PIECES) if rnd.random() < 0.9 else None for _ in range(rnd.randint(0, 12))
        ]
        assert _first_look(out) == _by_line(out), out


def test_a_label_on_the_first_and_the_last_line():
    out: list[str | None] = ["L1:;", "case 1: goto L1;", None, "x = 1;", "L2:;"]
    assert _first_look(out) == (["L1"], [0, 3])


def test_a_line_holding_a_newline_is_read_as_one_line():
    # an entry with a newline of its own: indices stay those of the entries
    out: list[str | None] = ["a = 1;\nb = 2;", "case 1: goto L3;", "L3:;", "s:\n case 2: goto L4;"]
    assert _first_look(out) == _by_line(out) == (["L3"], [2])
