"""The order of a report's changes as built (issue #30, session 30 T): the pairs in the
pairing's order with the new and deleted functions merged in give the order the report
had when every change was sorted by its key."""

from __future__ import annotations

import bisect
import random
from operator import itemgetter
from types import SimpleNamespace

from kbtool.identity.pairing import Pair
from kbtool.services.diff.ordering import report_order


def _sorted_reference(pg, defined) -> list[tuple]:
    """The former build: every change keyed and sorted."""
    keyed = [((p.new_index, 0, p.old_index), ("pair", p.old_index, p.new_index)) for p in defined]
    for n in sorted(n for n in pg.new_rows if n not in pg.by_new):
        if not pg.new_rows[n]["imported"]:
            keyed.append(((n, 0, -1), ("new", None, n)))
    anchors = sorted((p.old_index, p.new_index) for p in defined)
    anchor_old = [o for o, _ in anchors]
    for o in sorted(o for o in pg.old_rows if o not in pg.by_old):
        if not pg.old_rows[o]["imported"]:
            k = bisect.bisect_left(anchor_old, o)
            keyed.append(((anchors[k - 1][1] if k else -1, 1, o), ("deleted", o, None)))
    keyed.sort(key=itemgetter(0))
    return [c for _, c in keyed]


def _pairing(rng: random.Random, n_old: int, n_new: int, n_imp: int):
    n_old, n_new = max(n_old, n_imp), max(n_new, n_imp)
    old_rows = {i: {"imported": i < n_imp} for i in range(n_old)}
    new_rows = {i: {"imported": i < n_imp} for i in range(n_new)}
    olds = list(range(n_imp, n_old))
    news = list(range(n_imp, n_new))
    rng.shuffle(olds)
    k = rng.randint(0, min(len(olds), len(news)))
    pairs = [
        Pair(o, n, 1.0, "body", False, False)
        for o, n in zip(olds[:k], sorted(rng.sample(news, k)), strict=True)
    ]
    pairs += [Pair(i, i, 1.0, "import", False, True) for i in range(n_imp)]
    by_new = {p.new_index: p for p in sorted(pairs, key=lambda p: p.new_index)}
    by_old = {p.old_index: p for p in pairs}
    return SimpleNamespace(old_rows=old_rows, new_rows=new_rows, by_new=by_new, by_old=by_old)


def _entry(cls, o, n, _p):
    return (cls, o, n)


def test_merged_order_is_the_sorted_order() -> None:
    rng = random.Random(30)
    for _ in range(300):
        pg = _pairing(rng, rng.randint(0, 40), rng.randint(0, 40), rng.randint(0, 3))
        defined = [p for n, p in sorted(pg.by_new.items()) if not pg.new_rows[n]["imported"]]
        paired = [("pair", p.old_index, p.new_index) for p in defined]
        assert report_order(pg, defined, paired, _entry) == _sorted_reference(pg, defined)
        # pairs in another order (a caller's own list): every change sorted, the same answer
        shuffled = defined[:]
        rng.shuffle(shuffled)
        paired = [("pair", p.old_index, p.new_index) for p in shuffled]
        assert report_order(pg, shuffled, paired, _entry) == _sorted_reference(pg, defined)


def test_deleted_functions_follow_their_anchor_and_lead_without_one() -> None:
    pg = SimpleNamespace(
        old_rows={i: {"imported": False} for i in range(6)},
        new_rows={i: {"imported": False} for i in range(5)},
        by_new={},
        by_old={},
    )
    defined = [Pair(2, 0, 1.0, "body", False, False), Pair(4, 3, 1.0, "body", False, False)]
    for p in defined:
        pg.by_new[p.new_index] = pg.by_old[p.old_index] = p
    paired = [("pair", 2, 0), ("pair", 4, 3)]
    assert report_order(pg, defined, paired, _entry) == [
        ("deleted", 0, None),  # below every paired old index: first
        ("deleted", 1, None),
        ("pair", 2, 0),
        ("deleted", 3, None),  # after the pair of old index 2 (new index 0)
        ("new", None, 1),
        ("new", None, 2),
        ("pair", 4, 3),
        ("deleted", 5, None),
        ("new", None, 4),
    ]
