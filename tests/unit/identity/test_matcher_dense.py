"""The matcher's cheaper forms of session 29 (issue #30) give what the plain forms give:
a ``Match`` made through its slots is the dataclass's own, the sides' neighbour lists by
index are the dicts' tuples, the hash groups in plain dicts are the ``defaultdict`` ones
(keys, members, order), pure package and compiled twin alike."""

from __future__ import annotations

import pickle
import random
from collections import defaultdict

import pytest

import kbtool.identity.matcher as active
from kbtool.identity.records import FuncRecord, Match, replace
from tests.support.matcher import pure_part
from tests.support.records import random_releases


def _bases():
    """The active ``base`` part and the pure one (the same module when no twin runs)."""
    import kbtool.identity.matcher.base as act

    pure = pure_part("base")
    return [act] if pure is act else [act, pure]


@pytest.mark.parametrize("i", [0, 1])
def test_new_match_is_the_dataclass_match(i: int) -> None:
    bases = _bases()
    if i >= len(bases):
        pytest.skip("no compiled twin in this process")
    base = bases[i]
    rnd = random.Random(3)
    for _ in range(200):
        args = (
            rnd.randint(0, 2**20),
            rnd.randint(0, 2**20),
            round(rnd.random(), 4),
            rnd.choice(["body", "callgraph", "similarity"]),
            rnd.random() < 0.5,
        )
        got, want = base.new_match(*args), Match(*args)
        assert type(got) is Match
        assert got == want and hash(got) == hash(want) and repr(got) == repr(want)
        assert tuple(getattr(got, f) for f in Match._FIELDS) == args
        assert pickle.loads(pickle.dumps(got)) == want
        with pytest.raises(AttributeError):  # (read-only, as a frozen dataclass)
            got.score = 0.0  # type: ignore[misc]


def _gappy(recs: list[FuncRecord], seed: int) -> list[FuncRecord]:
    """The records with some indices left out (calls to them kept: undefined callees)."""
    rnd = random.Random(seed)
    return [r for r in recs if r.index < 3 or rnd.random() < 0.85]


@pytest.mark.parametrize("seed", range(12))
def test_side_neighbours_by_index_are_the_dicts_tuples(seed: int) -> None:
    old, new = random_releases(seed)
    for base in _bases():
        for recs in (old, new, _gappy(old, seed), _gappy(new, seed + 1)):
            side = base._Side(recs)
            assert len(side.callees_a) == len(side.callers_a) == side.size
            for i in range(side.size):
                if i in side.recs:
                    assert side.callees_a[i] is side.callees[i]
                    assert side.callers_a[i] is side.callers[i]
                else:
                    assert side.callees_a[i] == () == side.callers_a[i]


def _groups_reference(m, attr: str) -> tuple[dict, dict]:
    """The hash groups as session 28 made them (records read, ``defaultdict``s)."""
    out = []
    for side, matched in ((m.OLD, m.o2n), (m.NEW, m.n2o)):
        g: dict = defaultdict(list)
        for i in side.order:
            if i in matched:
                continue
            r = side.recs[i]
            h = getattr(r, attr)
            if h and not r.imported:
                g[h].append(i)
        out.append(g)
    return out[0], out[1]


@pytest.mark.parametrize("seed", range(16))
def test_hash_groups_in_plain_dicts_are_the_defaultdict_ones(seed: int) -> None:
    old, new = random_releases(seed)
    rnd = random.Random(seed)
    # shared hashes (groups of several members) and some matched functions
    new = [replace(r, body_hash="dup", shape_hash="sdup") if rnd.random() < 0.1 else r for r in new]
    m = active._Matcher(old, new)
    free_o = [i for i in m.OLD.order if not m.OLD.recs[i].imported]
    free_n = [i for i in m.NEW.order if not m.NEW.recs[i].imported]
    for o, n in zip(rnd.sample(free_o, 5), rnd.sample(free_n, 5), strict=True):
        m.accept(o, n, 0.9, "test")
    for attr in ("body_hash", "shape_hash"):
        got = m._groups(attr)
        want = _groups_reference(m, attr)
        for g, w in zip(got, want, strict=True):
            assert type(g) is dict
            assert list(g.items()) == list(w.items())


@pytest.mark.parametrize("seed", range(8))
def test_side_made_from_shuffled_records_is_the_sorted_ones(seed: int) -> None:
    """Records in any order give one side: recs, callees and callers by index order (the
    in-order input keeps its own dict, another order is sorted); bad indices still fail."""
    old, _new = random_releases(seed)
    shuffled = _gappy(old, seed)
    random.Random(seed).shuffle(shuffled)
    for base in _bases():
        a, b = base._Side(sorted(shuffled, key=lambda r: r.index)), base._Side(shuffled)
        assert a.order == b.order == sorted(r.index for r in shuffled)
        assert list(a.recs.items()) == list(b.recs.items())
        assert list(a.callees.items()) == list(b.callees.items())
        assert list(a.callers.items()) == list(b.callers.items())
        with pytest.raises(ValueError, match="duplicate"):
            base._Side([*shuffled, shuffled[0]])
        with pytest.raises(ValueError, match="negative"):
            base._Side([*shuffled, replace(shuffled[0], index=-1)])
