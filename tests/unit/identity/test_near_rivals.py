"""A look-alike without a trusted counterpart that nearly ties a pair flags it (issue 23
point 10): sqlite emcc `vdbeSorterCompare`/`vdbeSorterCompareTail` (23 and 24 instructions,
one signature) were paired with each other unflagged while the right counterpart was
unpaired (-Os -> -O3) or sat in a flagged pair with a function eight times its size
(-O2 -> -Os), 0.03 behind in content similarity."""

from __future__ import annotations

import random
from types import SimpleNamespace

from kbtool.identity.matcher.review import (
    NEAR_RIVAL_MARGIN,
    review_closer_rivals,
    review_near_rivals,
)
from tests.support.records import body, rec

SIG = "(i32, i32, i32, i32, i32, i32) -> i32"


def view(old: list, new: list, pairs: list[tuple]) -> SimpleNamespace:
    """A pairing as the review checks read it: (old, new, method, score, review)."""
    by_new = {
        n: SimpleNamespace(old_index=o, new_index=n, score=s, review=r, method=m)
        for o, n, m, s, r in pairs
    }
    return SimpleNamespace(
        old_recs={r.index: r for r in old},
        new_recs={r.index: r for r in new},
        by_new=by_new,
        by_old={p.old_index: p for p in by_new.values()},
    )


def changed(code: list[int], at: range, seed: int) -> list[int]:
    rng = random.Random(seed)
    out = list(code)
    for i in at:
        out[i] = rng.randrange(200)
    return out


def siblings(apart: int) -> tuple[list[int], list[int], list[int]]:
    """Two look-alike siblings (40 instructions, ``apart`` sets how much they differ) and a
    rebuild of the second: (x, y, y rebuilt)."""
    base = body(31, 40)
    x = changed(base, range(0, 40, 40 // apart), 1)
    y = changed(base, range(1, 40, 40 // apart), 2)
    return x, y, changed(y, range(3, 40, 40), 3)


def test_an_unpaired_look_alike_within_the_margin_flags_the_pair():
    x, y, ny = siblings(1)  # x is 0.036 behind y in similarity to ny
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG)]
    pg = view(old, new, [(1, 1, "callgraph", 0.87, False)])
    assert review_near_rivals(pg) == 1 and pg.by_new[1].review
    # the closer-rival check runs it too (what the diff and the matcher call)
    pg = view(old, new, [(1, 1, "callgraph", 0.87, False)])
    assert review_closer_rivals(pg) == 1 and pg.by_new[1].review


def test_a_look_alike_further_behind_than_the_margin_or_of_another_signature_does_not():
    x, y, ny = siblings(2)  # 0.09 behind: more than NEAR_RIVAL_MARGIN
    assert NEAR_RIVAL_MARGIN < 0.09
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG)]
    assert review_near_rivals(view(old, new, [(1, 1, "callgraph", 0.87, False)])) == 0
    x, y, ny = siblings(1)
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig="(i32, i32) -> i32")]
    new = [rec(1, code=ny, type_sig=SIG)]
    assert review_near_rivals(view(old, new, [(1, 1, "callgraph", 0.87, False)])) == 0


def test_a_look_alike_in_a_flagged_pair_of_implausible_size_is_a_rival():
    x, y, ny = siblings(1)
    big = body(40, 200)  # five times the look-alike's size
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG), rec(2, code=big, type_sig=SIG)]
    pairs = [(1, 1, "callgraph", 0.84, False), (2, 2, "callgraph", 0.64, True)]
    pg = view(old, new, pairs)
    assert review_near_rivals(pg) == 1 and pg.by_new[1].review


def test_a_look_alike_with_a_trusted_or_plausible_counterpart_is_no_rival():
    x, y, ny = siblings(1)
    other = body(41, 40)  # a partner of comparable size
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG), rec(2, code=other, type_sig=SIG)]
    for flagged in (False, True):  # unflagged: trusted; flagged but plausible: a real pair
        pairs = [(1, 1, "callgraph", 0.84, False), (2, 2, "callgraph", 0.7, flagged)]
        pg = view(old, new, pairs)
        assert review_near_rivals(pg) == 0 and not pg.by_new[1].review
    big = body(40, 200)
    new = [rec(1, code=ny, type_sig=SIG), rec(2, code=big, type_sig=SIG)]
    pairs = [(1, 1, "callgraph", 0.84, False), (2, 2, "callgraph", 0.64, False)]
    assert review_near_rivals(view(old, new, pairs)) == 0  # unflagged: trusted


def test_pairs_of_equal_code_or_shared_names_are_left_alone():
    x, y, ny = siblings(1)
    old = [rec(1, code=y, type_sig=SIG, shape_hash="S"), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG, shape_hash="S")]
    assert review_near_rivals(view(old, new, [(1, 1, "callgraph", 0.87, False)])) == 0
    old = [rec(1, code=y, type_sig=SIG), rec(2, code=x, type_sig=SIG)]
    new = [rec(1, code=ny, type_sig=SIG)]
    assert review_near_rivals(view(old, new, [(1, 1, "name", 0.95, False)])) == 0
