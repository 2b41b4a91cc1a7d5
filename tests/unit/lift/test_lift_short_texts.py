"""Texts and locals' tuples the lifter makes without a format call or a set (session 28):
the locals' union, a frame slot's name, a note's offset, hex constants, an f32 constant's
text remembered per raw bits; pure and compiled agree with the plain expressions."""

from __future__ import annotations

import importlib
import random
import struct

import pytest

from kbtool.lift import active
from kbtool.lift.context import c_type as context_c_type
from kbtool.lift.context import type_code as context_type_code
from kbtool.lift.lifter import base, memory, notes

COMPILED = active.load_compiled()
IMPLS = [(base, memory, notes)]
if COMPILED is not None:
    IMPLS.append(
        tuple(
            importlib.import_module(f"{COMPILED.__name__}.{m}") for m in ("base", "memory", "notes")
        )
    )


def _f32_bits(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.3:  # short, common values
        return struct.unpack("<I", struct.pack("<f", rng.choice([0.5, 1.0, -2.0, 0.1, 3.25])))[0]
    if pick < 0.4:  # NaNs with payloads, infinities
        return rng.choice([0x7FC00000, 0x7F800001, 0xFFC01234, 0x7F800000, 0xFF800000])
    return rng.getrandbits(32)


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_union_keeps_the_members_once_each(impl):
    """``_union`` gives the members of both tuples once each (what the lifter reads of a
    locals' tuple: ``in``, its length, the one member of a one-local tuple)."""
    b = IMPLS[impl][0]
    rng = random.Random(28)
    locs = [3, 5, ~3, ~7, 0, 300, ~300] + list(range(1000, 1020))
    for _ in range(6000):
        x = tuple(rng.choices(locs, k=rng.randint(1, 14)))  # repeats too
        y = tuple(rng.choices(locs, k=rng.randint(1, 14)))
        u = b._union(x, y)
        assert type(u) is tuple
        assert sorted(u) == sorted(set(x) | set(y))
    assert b._union((3, 3), (3,)) == (3,)
    assert b._union((4,), (4,)) == (4,)
    assert sorted(b._union((4,), (~4,))) == [~4, 4]


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_texts_without_format_calls_equal_the_formatted_ones(impl):
    b, mem, nt = IMPLS[impl]
    rng = random.Random(7)
    offsets = list(range(-3, 1100)) + [rng.getrandbits(rng.randint(1, 40)) for _ in range(3000)]
    for o in offsets:
        assert mem._slot(o) == f"local_{o:02x}"
        assert nt.note_line(o, "x") == f"/* @{o:06x}: x */"
    for _ in range(5000):
        v = rng.getrandbits(32) - (1 << 31)
        expect = str(v)
        if v == -0x80000000:
            expect = "(-2147483647 - 1)"
        elif v >= 0x10000 and v & 0xFFF == 0 or v >= 0x1000000:
            expect = f"0x{v:x}"
        assert b._i32_text(v) == expect
        w = rng.getrandbits(64) - (1 << 63)
        if w != -(1 << 63):
            assert b._i64_text(w) == (f"0x{w:x}LL" if w >= 0x1000000 else f"{w}LL")
    for vt in ("i32", "i64", "f32", "f64", "v128", "funcref", "externref", "anyref"):
        assert b.c_type(vt) == context_c_type(vt)
    for vts in [(), ("i32",), ("f64", "i64", "funcref", "v128", "f32")]:
        assert b.type_code(vts) == context_type_code(vts)


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_f32_text_per_bits_equals_a_fresh_one(impl):
    """The remembered text of an ``f32.const`` equals the one worked out afresh, asked
    twice (the second from the memo), NaN payloads included."""
    b = IMPLS[impl][0]
    rng = random.Random(32)
    for _ in range(3000):
        bits = _f32_bits(rng)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        fresh = b._f32_new(v, bits)
        assert b._f32_text(v, bits) == fresh
        assert b._f32_text(v, bits) == fresh
    nan = struct.unpack("<f", struct.pack("<I", 0x7FC00001))[0]
    assert b._f32_text(nan, 0x7FC00001) != b._f32_text(nan, 0x7FC00002)
