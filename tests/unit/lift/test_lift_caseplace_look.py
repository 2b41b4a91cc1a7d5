"""The case pass's first look (kbtool/lift/lifter/caseplace.py ``_hopeful``) searches the
function's lines as one text; it must answer as the line-by-line look (``_hopeful_lines``)
on any lines, and a line holding a newline falls back to that look."""

from __future__ import annotations

import random

from kbtool.lift.lifter import caseplace

_LINES = [
    "    case 1: goto L3;",
    "    case 2: case 3: goto L4;",
    "    default: goto L5;",
    "  L3:;",
    "  L4:;",
    "  L5:;",
    "  \x017\x02L3:;",
    "  goto L3;",
    "  goto L4;",
    "  if (x) goto L5;",
    "  return 0;",
    "  return;",
    "  x = 1;",
    "  while (1) {",
    "  }",
    "  switch (a) {",
    "  /* L4:; */ y = 2;",
    '  s = "case 9: goto L3;";',
    "  break;",
]


def test_the_text_search_agrees_with_the_line_by_line_look():
    rng = random.Random(6)
    seen = set()
    for _ in range(4000):
        lines = [rng.choice(_LINES) for _ in range(rng.randint(0, 14))]
        want = caseplace._hopeful_lines(lines)
        assert caseplace._hopeful(lines) == want, lines
        seen.add(want)
    assert seen == {True, False}


def test_a_trampoline_whose_label_follows_a_return_once_is_hopeful():
    lines = ["  switch (a) {", "    case 1: goto L3;", "  }", "  return 0;", "  L3:;", "  x = 1;"]
    assert caseplace._hopeful(lines)
    assert not caseplace._hopeful([*lines, "  goto L3;"])  # a second goto: it stays
    assert caseplace._hopeful(["  x = 1;\n  y = 2;", *lines])  # a line with a newline
