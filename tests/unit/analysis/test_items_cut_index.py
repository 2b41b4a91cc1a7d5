"""The cuts' index per segment bound (``cut_items``: the first cut at or after a segment's
start, end and the next segment's start) found from the previous one by
``_at_least_from`` (steps of 1, 2, 4... then a bisection; a hint past the address bisects
the whole list) is ``bisect_left``'s, pure and compiled, for any hint."""

from __future__ import annotations

import random
from bisect import bisect_left

from kbtool.analysis import datawalk_active
from kbtool.analysis.datawalk import items as pure_items

COMPILED = datawalk_active.load_compiled()
SIDES = [pure_items] + ([datawalk_active.ITEMS] if COMPILED is not None else [])


def test_index_from_any_hint_is_bisect_left():
    rng = random.Random(31)
    for side in SIDES:
        for _ in range(3000):
            ordered = sorted(rng.sample(range(-50, 400), rng.randrange(0, 60)))
            x = rng.randrange(-60, 410)
            for hint in (0, rng.randrange(0, len(ordered) + 3), len(ordered), len(ordered) + 5):
                assert side._at_least_from(ordered, x, hint) == bisect_left(ordered, x), (
                    side.__name__,
                    ordered,
                    x,
                    hint,
                )
        big = [1 << 70, 1 << 71]  # past 64 bits: compared as Python ints
        assert side._at_least_from(big, 1 << 70, 2) == 0
        assert side._at_least_from(big, (1 << 71) + 1, 0) == 2


def test_monotone_hints_as_cut_items_uses_them():
    """Hints as ``cut_items`` passes them (each lookup's answer the next one's hint, the
    addresses by segment: start, end, next start; overlapping segments too)."""
    rng = random.Random(7)
    for side in SIDES:
        for _ in range(500):
            ordered = sorted(rng.sample(range(0, 2000), rng.randrange(0, 200)))
            bases = sorted(rng.sample(range(0, 2000), rng.randrange(1, 30)))
            at = 0
            for i, base in enumerate(bases):
                end = base + rng.randrange(0, 300)  # (may pass the next start)
                gap_end = bases[i + 1] if i + 1 < len(bases) else max(end, 2000)
                at = side._at_least_from(ordered, base, at)
                assert at == bisect_left(ordered, base)
                at_end = side._at_least_from(ordered, end, at)
                assert at_end == bisect_left(ordered, end)
                at = side._at_least_from(ordered, gap_end, at_end)
                assert at == bisect_left(ordered, gap_end)
