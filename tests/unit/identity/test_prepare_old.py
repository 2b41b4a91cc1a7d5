"""A matcher run over an old side prepared ahead (``prepare_old``: its side and the feature
store's counts of its strings and constants, made before the new records are known) gives
what a run in one go gives: the same pairings, work and notes, the same store (ids, counts,
exact weights), pure package and compiled twin alike; a preparation of other records is
ignored and its counts serve one store."""

from __future__ import annotations

import random
import sys

import pytest

import kbtool.identity.matcher as active
from kbtool.identity.records import FuncRecord, replace
from tests.support.matcher import pure_package
from tests.support.records import random_releases


def _packages() -> list:
    pure = pure_package()
    return [active] if pure is active else [active, pure]


def _run(pkg, old: list, new: list, prep=None) -> tuple:
    st: list = []
    exact, full = pkg.match_functions_staged(old, new, stats=st, old_prepared=prep)
    s = st[0]
    return exact, full, sorted(s.work.items()), s.notes, s.left_unmatched


def _with_keys(recs: list[FuncRecord], rnd: random.Random) -> list[FuncRecord]:
    """The records with strings and constants drawn from small pools (shared keys)."""
    out = []
    for r in recs:
        strings = tuple(f"s{rnd.randint(0, 60)}" for _ in range(rnd.randint(0, 30)))
        consts = tuple(rnd.choice((0, 1, 300, 4096, -777, 2**40)) for _ in range(rnd.randint(0, 9)))
        out.append(replace(r, strings=strings, consts=consts))
    return out


@pytest.mark.parametrize("i", [0, 1])
@pytest.mark.parametrize("seed", [1, 4, 9])
def test_prepared_old_side_pairs_alike(i: int, seed: int) -> None:
    pkgs = _packages()
    if i >= len(pkgs):
        pytest.skip("no compiled twin in this process")
    pkg = pkgs[i]
    rnd = random.Random(seed)
    old, new = random_releases(seed)
    old, new = _with_keys(old, rnd), _with_keys(new, rnd)
    want = _run(pkg, old, new)
    prep = pkg.prepare_old(old)
    assert prep.part is not None
    assert _run(pkg, old, new, prep) == want
    assert prep.part is None  # (taken by the run's store)
    # a second run with the spent preparation: its side again, a store made in one go
    assert _run(pkg, old, new, prep) == want
    # a preparation of other records (equal, not the same objects) is ignored
    other = pkg.prepare_old(list(old))
    assert _run(pkg, old, new, other) == want
    assert other.part is not None


@pytest.mark.parametrize("i", [0, 1])
def test_store_from_a_part_is_the_store_made_in_one_go(i: int) -> None:
    pkgs = _packages()
    if i >= len(pkgs):
        pytest.skip("no compiled twin in this process")
    F = sys.modules[f"{pkgs[i].__name__}.features"]
    rnd = random.Random(7)
    old, new = random_releases(3)
    old, new = _with_keys(old, rnd), _with_keys(new, rnd)
    whole = F._Store(old, new)
    part = F.StorePart(old)
    made = F._Store(old, new, part)
    assert part.take(old) is None  # taken once
    for a, b in ((whole.voc_s, made.voc_s), (whole.voc_c, made.voc_c)):
        assert a.ids == b.ids and list(a.df) == list(b.df) and list(a.wid) == list(b.wid)
    assert {k: (list(x), list(y)) for k, (x, y) in whole.sets.items()} == {
        k: (list(x), list(y)) for k, (x, y) in made.sets.items()
    }
    assert whole.df_s == made.df_s and whole.df_c == made.df_c
    # a part of other record objects is not taken
    stranger = F.StorePart(list(old)[:-1])
    assert stranger.take(old) is None
