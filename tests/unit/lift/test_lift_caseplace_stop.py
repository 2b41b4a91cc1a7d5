"""The case pass stops after a move when no trampoline is left for another scan to look at
(the scan it skips would have found nothing), spending the same work budget."""

from __future__ import annotations

import pytest

from kbtool.lift.lifter import caseplace
from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.caseplace import _candidates, place_cases

# L5's body moves under its case; L6 (two gotos, no short return) stays a trampoline
_TEXT = """\
while (1) {
  switch (x) {
    case 1: goto L5;
    case 2: goto L6;
    default: break;
  }
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


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of lines of each scan the case pass makes."""
    seen: list[int] = []
    real = caseplace._Scan

    def counted(lines, memo):
        seen.append(len(lines))
        return real(lines, memo)

    monkeypatch.setattr(caseplace, "_Scan", counted)
    return seen


def test_no_scan_after_the_last_move(scans: list[int]):
    lines = _TEXT.splitlines()
    budget = _Budget(10**6, None)
    out, gotos, labels, _where = place_cases(list(lines), budget)
    assert (gotos, labels) == (1, 1)
    assert out[out.index("    case 1:") + 1] == "      y = 1;"
    assert "    case 2: goto L6;" in out  # stays
    assert scans == [len(lines)]  # one scan: L6 was looked at and kept
    # the budget is spent as if the scan after the move had run
    assert budget.n == len(lines) + len(out)


def test_a_trampoline_waiting_for_the_next_scan_gets_it(scans: list[int]):
    # case 2's trampoline lies inside L5's body: it waits for the scan after the move
    text = """\
switch (x) {
  case 1: goto L5;
  default: return 0;
}
return 1;
L5:;
switch (y) {
  case 2: goto L7;
  default: return 2;
}
return 3;
L7:;
z = 1;
return z;"""
    out, gotos, _labels, _where = place_cases(text.splitlines(), _Budget(10**6, None))
    assert len(scans) >= 2
    assert gotos == 2  # both bodies moved
    assert not any("goto" in ln for ln in out if ln is not None)


def test_candidates_reads_the_bare_statement():
    memo: dict = {}
    plain = ["x = 1;", "case 1: goto L5;"]
    assert _candidates(plain, [0, 1], set(), memo)
    assert not _candidates(plain, [0, 1], {1}, memo)  # kept for good
    # a note mark or a comment inside the head: the bare statement is a trampoline
    assert _candidates(["case 1: \x013\x02goto L5;"], [0], set(), memo)
    assert _candidates(["case 1:/* c */ goto L5;"], [0], set(), memo)
    assert not _candidates(["goto L5;", "L5:;", "case 1: x = 2;"], [0, 1, 2], set(), memo)
