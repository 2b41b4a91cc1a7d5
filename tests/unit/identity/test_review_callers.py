"""The final pairing's review reads each function's callers from the matcher's sides
(``_View.callers``) instead of rebuilding them from the records: for every function the
checks look up, the same callers in the same order, and the same verdicts."""

from __future__ import annotations

import pytest

from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import random_releases

_Matcher = pure_part()._Matcher
driver = pure_part("driver")
review = pure_part("review")


@pytest.fixture(autouse=True)
def _pure_matcher():
    with pure_matcher():
        yield


@pytest.mark.parametrize("seed", range(12))
def test_the_sides_callers_are_the_records_callers(seed: int) -> None:
    old, new = random_releases(seed)
    m = _Matcher(old, new)
    for side, recs in ((m.OLD, m.OLD.recs), (m.NEW, m.NEW.recs)):
        built = review._callers(recs)
        for i in recs:
            assert list(side.callers[i]) == built.get(i, []), (seed, i)


@pytest.mark.parametrize("seed", range(12))
def test_the_review_gives_the_same_verdicts_with_the_sides_callers(seed: int) -> None:
    old, new = random_releases(seed)
    m = _Matcher(old, new)
    final = m.run_staged(True)[1]
    got = []
    for callers in (None, (m.OLD.callers, m.NEW.callers)):
        view = driver._View(m.OLD.recs, m.NEW.recs, final)
        view.callers = callers
        review.review_pairing(view)
        got.append({n: (p.review, p.score) for n, p in view.by_new.items()})
    assert got[0] == got[1]
    assert review._callers_of(view, True) is m.OLD.callers
