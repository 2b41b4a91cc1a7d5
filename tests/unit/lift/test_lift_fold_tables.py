"""The tee-folding lookahead's byte tables (``Core.foldable``)."""

from __future__ import annotations

from kbtool.lift.lifter.decode import _EFF_POPS, _EFF_PUSHES, _STACK_EFFECT


def test_the_lookahead_byte_tables_hold_every_stack_effect():
    """The tee lookahead reads pops and pushes from two byte tables: each op's pair is the
    stack-effect table's (pushes -2 and -1 included), an unknown op is 255 pops."""
    assert len(_EFF_POPS) == len(_EFF_PUSHES) == len(_STACK_EFFECT)
    for op, eff in enumerate(_STACK_EFFECT):
        if eff is None:
            assert _EFF_POPS[op] == 255
        else:
            assert (_EFF_POPS[op], _EFF_PUSHES[op] - 2) == eff
    kinds = {eff[1] for eff in _STACK_EFFECT if eff is not None}
    assert {-2, -1, 0, 1} <= kinds
    assert max(eff[0] for eff in _STACK_EFFECT if eff is not None) < 255
