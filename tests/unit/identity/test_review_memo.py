"""A later release's ingest reviews one pairing twice (the matcher's final result, then the
pairing read back from the KB for the diff report, issue 30): inside ``review_memo`` the
second review reuses the first's verdicts when every input is the same, and reviews again
when anything differs; the KB it stores is the one the two reviews store."""

from __future__ import annotations

import contextlib
import copy

import pytest

from kbtool.identity.records import replace
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from testkit.kbcompare import compare
from tests.support.matcher import pure_matcher, pure_part
from tests.support.paths import DEMO_DIR
from tests.support.records import random_releases, view

# the pure package's parts: these tests patch or subclass them
match_functions = pure_part().match_functions
review_mod = pure_part("review")
review_memo, review_pairing = review_mod.review_memo, review_mod.review_pairing


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


def _pairing(seed: int):
    old, new = random_releases(seed)
    full = match_functions(old, new)
    return view(old, new, [(m.old_index, m.new_index, m.method, m.score) for m in full])


def _verdicts(pg) -> dict[int, tuple[bool, float]]:
    return {n: (p.review, p.score) for n, p in pg.by_new.items()}


def _fresh(pg) -> dict[int, tuple[bool, float]]:
    """The verdicts of the checks run outside any memo scope on a copy of ``pg``."""
    pg = copy.deepcopy(pg)
    assert review_pairing(pg) is False
    return _verdicts(pg)


def _flagged_by_some_check(seeds=range(40)):
    """Seeds whose pairing the checks flag or weaken (a memo that gave nothing back would
    otherwise pass)."""
    out = []
    for seed in seeds:
        pg = _pairing(seed)
        before = _verdicts(pg)
        if _fresh(pg) != before:
            out.append(seed)
    return out


SEEDS = _flagged_by_some_check()


def test_some_random_pairings_are_flagged_by_the_checks() -> None:
    assert len(SEEDS) >= 5


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_an_equal_pairing_gets_the_verdicts_again(seed: int) -> None:
    first = _pairing(seed)
    want = _fresh(first)
    # read back: other objects, equal content, other stable ids (the KB's)
    again = copy.deepcopy(first)
    for i, r in again.new_recs.items():
        again.new_recs[i] = replace(r, stable_id=f"sid{i}")
    with review_memo():
        assert review_pairing(first) is False
        assert review_pairing(again) is True
    assert _verdicts(first) == _verdicts(again) == want


def _change_score(pg) -> None:
    p = next(p for p in pg.by_new.values() if not p.review)
    p.score = round(p.score - 0.01, 4)


def _change_flag(pg) -> None:
    next(p for p in pg.by_new.values() if not p.review).review = True


def _change_method(pg) -> None:
    p = next(p for p in pg.by_new.values() if p.method != "similarity")
    p.method = "similarity"


def _change_size(pg) -> None:
    i = max(i for i, r in pg.new_recs.items() if not r.imported)
    r = pg.new_recs[i]
    pg.new_recs[i] = replace(r, instr_count=r.instr_count * 3 + 20)


def _change_signature(pg) -> None:
    i = max(i for i, r in pg.old_recs.items() if not r.imported)
    pg.old_recs[i] = replace(pg.old_recs[i], type_sig="(f64)->f64")


def _unpair_one(pg) -> None:
    n = max(pg.by_new)
    p = pg.by_new.pop(n)
    del pg.by_old[p.old_index]


@pytest.mark.parametrize(
    "change",
    [_change_score, _change_flag, _change_method, _change_size, _change_signature, _unpair_one],
)
def test_a_pairing_that_differs_in_any_input_is_reviewed_again(change) -> None:
    for seed in SEEDS[:6]:
        first = _pairing(seed)
        other = copy.deepcopy(first)
        change(other)
        want = _fresh(other)
        with review_memo():
            assert review_pairing(first) is False
            assert review_pairing(other) is False
        assert _verdicts(other) == want


def test_no_memo_outside_the_scope() -> None:
    pg = _pairing(SEEDS[0])
    with review_memo():
        with review_memo():  # scopes nest: the inner one keeps the outer's memo
            assert review_pairing(copy.deepcopy(pg)) is False
        assert review_pairing(copy.deepcopy(pg)) is True
    assert review_pairing(copy.deepcopy(pg)) is False  # closed: nothing kept
    assert review_mod._MEMO.get() is None


def _ingest_both(path, *, memo: bool, monkeypatch) -> int:
    """Ingest the demo's two releases into a fresh KB; how many times the checks ran."""
    runs = []
    real = review_mod.review_signatures

    def counted(pg):
        runs.append(len(pg.by_new))
        return real(pg)

    monkeypatch.setattr(review_mod, "review_signatures", counted)
    if not memo:
        monkeypatch.setattr(review_mod, "review_memo", contextlib.nullcontext)
    conn = open_rw(path)
    try:
        ingest_file(conn, DEMO_DIR / "zstd-1.5.5.wasm", label="1.5.5")
        ingest_file(conn, DEMO_DIR / "zstd-1.5.6.wasm", label="1.5.6")
    finally:
        conn.close()
    monkeypatch.undo()
    return len(runs)


def test_ingest_reviews_once_and_stores_what_two_reviews_store(tmp_path, monkeypatch) -> None:
    """The later release's ingest (real KB, the bundled zstd releases): the pairing of the
    report reuses the matcher's verdicts, and every table holds what it holds when the
    pairing runs the checks again."""
    assert _ingest_both(tmp_path / "memo.db", memo=True, monkeypatch=monkeypatch) == 1
    assert _ingest_both(tmp_path / "twice.db", memo=False, monkeypatch=monkeypatch) == 2
    n, diff = compare(tmp_path / "memo.db", tmp_path / "twice.db")
    assert diff is None and n > 1000
