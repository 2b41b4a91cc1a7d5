"""The data walk's shared target ints (:mod:`kbtool.analysis.datawalk.boxes`): a target
boxed through the table is the int it stands for, one object per value while its slot
holds it, a new one when the slot holds another value, and values outside the table's
range (negative, from 2**48, past 64 bits) pass unchanged; the walk gives the same
references with the table as without it, pure and compiled."""

from __future__ import annotations

import random

from kbtool.analysis import datawalk, datawalk_active
from kbtool.analysis.datawalk import boxes
from testkit.wasmbuild import sleb

COMPILED = datawalk_active.load_compiled()
SIDES = [datawalk] + ([COMPILED] if COMPILED is not None else [])


def _box_modules() -> list:
    out = [boxes]
    if COMPILED is not None:
        import importlib

        out.append(importlib.import_module(f"{COMPILED.__name__}.boxes"))
    return out


def test_box_gives_the_value_and_shares_its_object():
    for mod in _box_modules():
        b = mod.Boxes()
        a = mod.box(123_456_789, b)
        assert a == 123_456_789
        again = mod.box(int("123456789"), b)  # an equal value from another object
        assert again == 123_456_789 and again is a, mod.__name__
        # another value in the same slot takes it over; the first is boxed anew after
        clash = -1  # a value of the same slot ((x ^ x >> 13) & 8191)
        for k in range(1, 1 << 16):
            y = 123_456_789 + k
            if (y ^ (y >> 13)) & 8191 == (123_456_789 ^ (123_456_789 >> 13)) & 8191:
                clash = y
                break
        assert clash > 0
        c = mod.box(clash, b)
        assert c == clash
        d = mod.box(123_456_789, b)
        assert d == 123_456_789
        for v in (
            0,
            1,
            255,
            70_000,
            (1 << 48) - 1,
            1 << 48,
            (1 << 62) + 5,
            1 << 70,
            -1,
            -(1 << 70),
        ):
            got = mod.box(v, b)
            assert got == v and type(got) is int, (mod.__name__, v)
            assert mod.box(v, None) == v


def test_box_without_a_table_is_the_value():
    for mod in _box_modules():
        assert mod.box(5_000_000, None) == 5_000_000


def _body(rng: random.Random, n: int) -> bytes:
    out = bytearray()
    for _ in range(n):
        addr = rng.choice([1100, 1100 + 8192 * 8, 2048, 3000, 2300, 1024 + rng.randrange(3000)])
        r = rng.randrange(4)
        if r == 0:
            out += b"\x41" + sleb(addr) + b"\x28\x02\x00\x1a"  # load from a constant address
        elif r == 1:
            out += b"\x41" + sleb(addr) + b"\x41\x05\x36\x02\x00"  # store at one
        elif r == 2:
            out += b"\x41" + sleb(addr) + b"\x10\x00"  # an address passed to a call
        else:
            out += b"\x41\x00\x28\x02" + sleb(addr)[:1] + b"\x1a"  # (offset: one byte)
    return b"\x01\x01\x7f" + bytes(out) + b"\x0b"


def test_the_walk_gives_the_same_references_with_the_table():
    rng = random.Random(30)
    lo, hi, mem_hi = 1024, 80_000, 90_000
    for _ in range(40):
        data = b"\x00" * 3 + _body(rng, rng.randrange(1, 60))
        start, end = 3, len(data)
        for side in SIDES:
            plain: list = []
            side.body_refs(data, 7, start, end, lo, hi, False, mem_hi, lo - 8, plain)
            shared: list = []
            b = side.boxes.Boxes()
            side.body_refs(data, 7, start, end, lo, hi, False, mem_hi, lo - 8, shared, b)
            assert shared == plain, side.__name__
            # each value's targets are one object (the table holds every value here)
            by_value: dict[int, set[int]] = {}
            for r in shared:
                if r[3] == "data":
                    by_value.setdefault(r[4], set()).add(id(r[4]))
            assert all(len(ids) == 1 for v, ids in by_value.items() if v > 256), side.__name__
