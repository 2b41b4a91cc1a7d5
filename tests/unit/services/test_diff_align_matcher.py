"""The triage's sequence matcher (:class:`kbtool.services.diff.align._Matcher`) answers as
difflib does: the same opcodes on every pair, whichever search (difflib's walk over the
occurrences or the hashed binary search over the length) each range takes."""

from __future__ import annotations

import difflib
import random

import pytest

from kbtool.services.diff import align


def _pairs(seed: int, count: int) -> list[tuple[list[tuple], list[tuple]]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        alpha = rnd.randint(1, 6)  # few distinct keys: long runs of equal ones, many ties
        a = [(rnd.randint(0, alpha),) for _ in range(rnd.randint(0, 160))]
        if rnd.random() < 0.5:  # an edited copy
            b = list(a)
            for _ in range(rnd.randint(0, 10)):
                r = rnd.random()
                if r < 0.3 and b:
                    del b[rnd.randrange(len(b))]
                elif r < 0.6:
                    b.insert(rnd.randint(0, len(b)), (rnd.randint(0, alpha),))
                elif b:
                    b[rnd.randrange(len(b))] = (rnd.randint(0, alpha),)
        else:
            b = [(rnd.randint(0, alpha),) for _ in range(rnd.randint(0, 160))]
        out.append((a, b))
    return out


@pytest.mark.parametrize("cost", [0, align._HASH_COST])
def test_same_opcodes_as_difflib(monkeypatch, cost) -> None:
    # cost 0: every non-empty range takes the hashed search
    monkeypatch.setattr(align, "_HASH_COST", cost)
    hashed = 0
    real = align._Matcher._first

    def counted(self, *a):
        nonlocal hashed
        hashed += 1
        return real(self, *a)

    monkeypatch.setattr(align._Matcher, "_first", counted)
    for a, b in _pairs(7, 600):
        want = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        assert align._Matcher(a, b).get_opcodes() == want, (a, b)
    assert hashed > 0  # the hashed search did run


def test_collisions_are_confirmed(monkeypatch) -> None:
    # a modulus of 7: most windows collide; the elements decide
    monkeypatch.setattr(align, "_MOD", 7)
    monkeypatch.setattr(align, "_HASH_COST", 0)
    for a, b in _pairs(11, 300):
        want = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        assert align._Matcher(a, b).get_opcodes() == want, (a, b)


def test_align_prefix_suffix_by_slices() -> None:
    rnd = random.Random(3)
    for _ in range(400):
        a = [(rnd.randint(0, 2),) for _ in range(rnd.randint(0, 300))]
        b = list(a)
        if b and rnd.random() < 0.8:
            b[rnd.randrange(len(b))] = (9,)
        b += [(1,)] * rnd.randint(0, 5)
        most = min(len(a), len(b))
        p = 0
        while p < most and a[p] == b[p]:
            p += 1
        assert align._prefix(a, b, 0, 0, most) == p
        s = 0
        while s < most - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
            s += 1
        assert align._suffix(a, b, len(a), len(b), most - p) == s
