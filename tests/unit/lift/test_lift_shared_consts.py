"""Session 29's exact cuts: the small ``i32.const`` expressions shared by every function
(no pass may change one), the infix operators' spaced texts per op id, and the locals'
membership test by native compares; pure and compiled."""

from __future__ import annotations

import importlib
import random

import pytest

from kbtool.lift import active, prepare
from kbtool.lift.ctable import CTABLE
from kbtool.lift.lifter import base, core, driver, values, walk
from testkit.wasmbuild import section, uleb

COMPILED = active.load_compiled()
MODS = [(driver, walk, core, values, base)]
if COMPILED is not None:
    MODS.append(
        tuple(
            importlib.import_module(f"{COMPILED.__name__}.{m}")
            for m in ("driver", "walk", "core", "values", "base")
        )
    )

_INFIX = ("bin", "binu", "cmp", "cmpu", "shl", "shr", "shru")
_NEG = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def _module(code: bytes, locals_: bytes) -> bytes:
    """One function ``(i32) -> i64`` with the body ``code`` (``end`` added)."""
    types = section(1, b"\x01\x60\x01\x7f\x01\x7e")
    funcs = section(3, b"\x01\x00")
    body = locals_ + code + b"\x0b"
    return (
        b"\x00asm\x01\x00\x00\x00" + types + funcs + section(10, b"\x01" + uleb(len(body)) + body)
    )


def _state(e) -> tuple:
    return (e.text, e.prec, e.ty, e.fl, e.locs, e.neg, e.const, e.tee, e.negp, e.u, e.nn, e.w)


# small constants through the passes that make new expressions from their operands: a
# widening (sets `w` on its result), eqz, select, a tee into a bool-looking local, stores,
# a shift count, a comparison and its negation, an addition
_BODY = (
    b"\x41\x05\xac"  # i32.const 5; i64.extend_i32_s
    b"\x41\x07\x45\x1a"  # i32.const 7; i32.eqz; drop
    b"\x41\x01\x41\x00\x20\x00\x1b\x22\x01\x1a"  # select(1, 0, p0); local.tee 1; drop
    b"\x41\x08\x41\x03\x36\x02\x00"  # i32.store (8) = 3
    b"\x41\x10\x20\x00\x41\x02\x74\x41\x04\x48\x45\x36\x02\x00"  # [16] = !((p0 << 2) < 4)
    b"\x41\x14\x41\xff\x01\x41\x10\x6a\x36\x02\x00"  # [20] = 255 + 16
    b"\x7c"  # i64.add
)


@pytest.mark.parametrize("impl", range(len(MODS)))
def test_the_shared_small_constants_are_never_changed(impl):
    """Lifting code whose passes build new expressions from small constants leaves every
    shared ``_SMALL_E`` as made (else a later function would read another's change), and
    the C is the same lifted twice."""
    drv, wk = MODS[impl][0], MODS[impl][1]
    assert len(wk._SMALL_E) == 256
    before = [_state(e) for e in wk._SMALL_E]
    assert before == [
        (str(v), 0, "i32", 0, (), None, v, None, -1, False, False, None) for v in range(256)
    ]
    lm = prepare(_module(b"\x42\x00" + _BODY, b"\x01\x01\x7f"))
    first = drv.lift_function(lm, lm.module.num_func_imports, max_seconds=None).text
    assert "255 + 16;" in first and "p0 << 2 >= 4" in first and "= 3;" in first
    assert [_state(e) for e in wk._SMALL_E] == before
    lm2 = prepare(_module(b"\x42\x00" + _BODY, b"\x01\x01\x7f"))
    assert drv.lift_function(lm2, lm2.module.num_func_imports, max_seconds=None).text == first


@pytest.mark.parametrize("impl", range(len(MODS)))
def test_spaced_operator_texts_per_op(impl):
    """Each infix op's entry is its operator with a space either side, a comparison's
    negation likewise; every other op's entries are empty."""
    vals = MODS[impl][3]
    assert len(vals._BIN_SP) == len(vals._BIN_NEG_SP) == len(CTABLE)
    for op, ent in enumerate(CTABLE):
        if ent is None or ent[0] not in _INFIX:
            assert (vals._BIN_SP[op], vals._BIN_NEG_SP[op]) == ("", "")
            continue
        assert vals._BIN_SP[op] == f" {ent[3]} "
        want = f" {_NEG[ent[3]]} " if ent[0] in ("cmp", "cmpu") else ""
        assert vals._BIN_NEG_SP[op] == want


@pytest.mark.parametrize("impl", range(len(MODS)))
def test_reads_is_the_membership_test(impl):
    """``_reads(locs, x, ~x)`` is ``x in locs or ~x in locs`` (indices past the small
    ints' cache too); ``_union`` of up to a dozen keeps first-sight order."""
    cr, b = MODS[impl][2], MODS[impl][4]
    rng = random.Random(29)
    pool = [0, 1, 5, ~0, ~5, 256, 257, ~300, 300, 1 << 20, ~(1 << 20)]
    for _ in range(4000):
        locs = tuple(rng.choices(pool, k=rng.randint(0, 6)))
        x = rng.choice([0, 1, 5, 256, 257, 300, 1 << 20, 7])
        assert cr._reads(locs, x, ~x) == (x in locs or ~x in locs)
        y = tuple(rng.choices(pool, k=rng.randint(1, 6)))
        u = b._union(locs or (3,), y)
        assert list(u) == list(dict.fromkeys((locs or (3,)) + y))
