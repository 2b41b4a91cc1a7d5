"""The sign pass's value stacks are lists with a depth beside them: pushes overwrite what
earlier pops left above the depth, and the storage never shrinks (no realloc per pop); the frame pass's symbolic stack likewise (``push_at``)."""

from __future__ import annotations

from kbtool.lift.lifter.base import push_at
from kbtool.lift.lifter.localvars import _NO_ORIGIN, _effect, _push

A = frozenset({1})
B = frozenset({2})
C = frozenset({3})


def test_push_overwrites_the_leftovers_above_the_depth():
    orig = [A, B, C]
    b01 = [1, 2, 1]
    sp = _push(orig, b01, 1, C, 2)  # depth 1: B and C are left over
    assert (sp, orig, b01) == (2, [A, C, C], [1, 2, 1])
    sp = _push(orig, b01, 3, B, 0)  # at the end: appended
    assert (sp, orig, b01) == (4, [A, C, C, B], [1, 2, 1, 0])


def test_effect_pops_and_pushes_through_the_depth():
    orig = [A, B, C]
    b01 = [1, 2, 1]
    # two popped, one pushed: the surviving slot is overwritten in place
    assert _effect(orig, b01, 3, 2, 1) == 2
    assert orig[:2] == [A, _NO_ORIGIN] and b01[:2] == [1, 0]
    # none popped, two pushed over the leftover slot and past the end
    assert _effect(orig, b01, 2, 0, 2) == 4
    assert orig == [A, _NO_ORIGIN, _NO_ORIGIN, _NO_ORIGIN] and b01 == [1, 0, 0, 0]
    # a store: one popped, storage kept
    assert _effect(orig, b01, 4, 1, 0) == 3
    assert len(orig) == 4


def test_push_at_keeps_a_stack_with_its_depth():
    stk: list[object] = []
    d = push_at(stk, 0, 1)
    d = push_at(stk, d, (0,))
    assert (d, stk) == (2, [1, (0,)])
    d = push_at(stk, 0, None)  # cleared, then pushed: the storage is reused
    assert (d, stk) == (1, [None, (0,)])
