"""A ``br_table`` inside a loop whose cases leave the loop (an interpreter's dispatch: a few
cases re-dispatch, the others run their own body and return) lifts with each body inside its
``case``: no ``case N: goto L;`` trampolines, the re-dispatching cases as ``continue``, and
every case value agrees with wasmtime (fixture: tests/fixtures/lift/switch_loop.c)."""

from __future__ import annotations

import shutil

import pytest

from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.caseplace import place_cases
from tests.support import lift_sem
from tests.support.paths import FIXTURES
from tests.support.switches import TRAMPOLINE

wasmtime = pytest.importorskip("wasmtime")
needs_tools = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)


@needs_tools
@pytest.mark.parametrize("opt", ["-O2", "-O1", "-Os"])
def test_dispatch_loop_cases_hold_their_bodies(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIXTURES / "lift" / "switch_loop.c").read_text(), opt)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    # `sl_scan` runs sl_dispatch over every case value (-3 .. 19) for each input
    assert r.agree >= 2 * 24
    c = r.c["sl_dispatch"]
    assert "switch (" in c, c
    assert not TRAMPOLINE.search(c), c
    assert "continue;" in c, c  # the re-dispatching cases loop back


def _place(text: str) -> tuple[list[str], int]:
    out, gotos, _labels, _where = place_cases(list(text.splitlines()), _Budget(10**6, None))
    return [ln for ln in out if ln is not None], gotos


_OUTER = """\
do {
  while (1) {
    switch (x) {
      case 1: goto L5;
      case 2: continue;
      default: break;
    }
    break;
  }
  y = 1;
  return y;
  L5:;
  y = 2;
  break;
} while (0);
AFTER"""


def test_outer_break_to_plain_code_gets_a_label_there():
    """A `break` of the construct around the label becomes `goto` a new label where that
    construct ends: one goto for the trampoline's, the body in its case."""
    lines, gotos = _place(_OUTER.replace("AFTER", "y += 3;\nreturn y;"))
    assert gotos == 0
    assert lines[3:6] == ["      case 1:", "        y = 2;", "        goto L6;"], lines
    assert lines[-4:] == ["} while (0);", "L6:;", "y += 3;", "return y;"], lines
    assert "L5:;" not in "\n".join(lines)


def test_body_with_a_continue_of_an_outer_loop_stays_a_goto():
    """Moved under the case, a `continue` of the loop around the label would continue
    the loop around the switch: the body stays where it is."""
    text = """\
while (1) {
  while (1) {
    switch (x) {
      case 1: goto L5;
      default: continue;
    }
  }
  y = 1;
  return y;
  L5:;
  y = f(y);
  continue;
}"""
    assert _place(text) == (text.splitlines(), 0)


def test_outer_break_becomes_the_return_or_goto_it_reaches():
    """The same body moves when its `break` reaches a `return` (copied) or a label (one
    `goto` for the trampoline's, so never more gotos)."""
    lines, gotos = _place(_OUTER.replace("AFTER", "return y;"))
    assert gotos == 1
    assert lines[3:6] == ["      case 1:", "        y = 2;", "        return y;"], lines
    assert "L5:;" not in lines and "  break;" not in lines
    lines, gotos = _place(_OUTER.replace("AFTER", "L9:;\ny += 3;\nreturn y;"))
    assert gotos == 0  # one goto for another: the body still sits in its case
    assert lines[3:6] == ["      case 1:", "        y = 2;", "        goto L9;"], lines


def test_shared_return_is_copied_into_the_case():
    """A label several jumps share whose code only returns (the epilogue): the case gets
    the copy, the other jumps keep the label."""
    text = """\
while (1) {
  switch (x) {
    case 1: goto L1;
    default: continue;
  }
}
if (y) goto L1;
y = f(y);
L1:;
g0 = l3 + 16;
return y;"""
    lines, gotos = _place(text)
    assert gotos == 1
    assert lines[2:5] == ["    case 1:", "      g0 = l3 + 16;", "      return y;"], lines
    assert "L1:;" in lines and "if (y) goto L1;" in lines
    # a call is real code: not copied
    lines, gotos = _place(text.replace("return y;", "return f(y);"))
    assert gotos == 0


def test_body_entered_by_fall_through_stays_a_goto():
    """The statement before the label falls into it: the body has two ways in."""
    text = """\
while (1) {
  switch (x) {
    case 1: goto L5;
    default: continue;
  }
}
y = 1;
L5:;
y = f(y);
return y;"""
    assert _place(text) == (text.splitlines(), 0)


def test_body_moves_under_its_case_with_its_notes():
    text = """\
while (1) {
  switch (x) {
    case 1: case 2: goto L5;
    default: continue;
  }
}
return 0;
\x013\x02L5:;
y = f(x);
if (y) {
  return y;
}
return 2;"""
    lines, moved = _place(text)
    assert moved == 1
    assert lines == [
        "while (1) {",
        "  switch (x) {",
        "    case 1: case 2:",
        "      \x013\x02y = f(x);",
        "      if (y) {",
        "        return y;",
        "      }",
        "      return 2;",
        "    default: continue;",
        "  }",
        "}",
        "return 0;",
    ]


_JOIN = """\
while (1) {
  switch (x) {
    case 1: goto L5;
    default: continue;
  }
}
if (y) goto L7;
return 0;
L5:;
y = f(x);
L7:;
y += 2;
return y;"""


def test_body_falling_into_shared_code_ends_in_a_goto_to_it():
    """The body runs into code another jump shares (L7): the body moves, that code stays,
    and the body ends in `goto L7;` (one goto for the trampoline's)."""
    lines, gotos = _place(_JOIN)
    assert gotos == 0
    assert lines[2:5] == ["    case 1:", "      y = f(x);", "      goto L7;"], lines
    assert lines[-3:] == ["L7:;", "y += 2;", "return y;"], lines


def test_label_only_the_body_jumps_to_moves_with_it():
    """A label inside the body that only the body's own jumps reach moves with it."""
    lines, gotos = _place(
        _JOIN.replace("if (y) goto L7;", "y = 1;\nreturn y;").replace(
            "y = f(x);", "y = f(x);\nif (y) goto L7;\ny = 3;"
        )
    )
    assert gotos == 1
    assert "L5:;" not in lines and lines.count("      L7:;") == 1, lines
    assert lines[-3:] == ["y = 1;", "return y;", "return 0;"], lines


def test_body_running_into_the_next_case_ends_where_that_case_goes():
    """A body in another case that runs on into the next case's `return` moves with a copy
    of that `return`; the case it ran into keeps its own."""
    text = """\
while (1) {
  switch (x) {
    default:
      switch (x - 100) {
        case 1: goto L6;
        default: continue;
      }
      y = 1;
      return y;
    case 7:
      y = 2;
      return y;
      L6:;
      y = f(y);
    case 10:
      return y;
  }
}"""
    lines, gotos = _place(text)
    assert gotos == 1
    assert lines[4:7] == ["        case 1:", "          y = f(y);", "          return y;"], lines
    assert lines[-4:] == ["    case 10:", "      return y;", "  }", "}"], lines
    assert "L6:;" not in "\n".join(lines)


_SEALED = """\
do {
  while (1) {
    switch (x) {
      case 1: goto L5;
      case 2: return 1;
      default: EXIT
    }
    x = g(x);
  }
  L5:;
  y = f(x);
  return y;
} while (0);
return 0;"""


def test_label_after_a_loop_nothing_leaves_has_one_way_in():
    """The code after a `while (1)` that no `break` leaves is reached only by its label's
    jumps: the body moves; a loop with a `break` falls into it, so it stays."""
    lines, gotos = _place(_SEALED.replace("EXIT", "continue;"))
    assert gotos == 1
    assert lines[3:6] == ["      case 1:", "        y = f(x);", "        return y;"], lines
    text = _SEALED.replace("EXIT", "break;").replace("x = g(x);", "if (x) break;")
    assert _place(text) == (text.splitlines(), 0)


def test_copied_return_keeps_its_comment_and_access_marks():
    """The `return` a moved body's `break` reaches is copied as written: its comment and
    the views pass's access markers stay (only note markers and case heads go)."""
    ret = 'return \x03*(int32_t *)(M + 8)\x04 /* "seven {" */;'
    lines, gotos = _place(_OUTER.replace("AFTER", ret))
    assert gotos == 1
    assert lines[3:6] == ["      case 1:", "        y = 2;", "        " + ret], lines
