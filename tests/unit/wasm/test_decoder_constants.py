"""The decoder's distinct constants per body (``FuncFacts.consts``): the large ones go through
a table of native ints stamped per body, and a body with more of them than the table takes
goes on in a set; every decoder (pure, without ``librt``, compiled) lists each body's
constants once, in first-seen order, whatever the path."""

from __future__ import annotations

import random

from kbtool.wasm import decoder, facts
from testkit.wasmbuild import module, section, sleb, uleb, vec
from tests.support.without_librt import decoder_variants


def _body(consts: list[tuple[str, int]]) -> bytes:
    """``i32.const``/``i64.const`` of each value, dropped; locals none; ``end``."""
    code = b"".join((b"\x41" if t == "i32" else b"\x42") + sleb(v) + b"\x1a" for t, v in consts)
    code = b"\x00" + code + b"\x0b"
    return uleb(len(code)) + code


def _module(bodies: list[list[tuple[str, int]]]) -> bytes:
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"] * len(bodies))),
        section(10, vec([_body(b) for b in bodies])),
    )


def _consts(mod, data: bytes) -> list[list[int]]:
    ctx = facts._Ctx(data, facts.parse_module(data))
    return [facts.FuncFacts(*r).consts for r in mod.analyze_range(ctx, 0, len(ctx.m.code))]


def _want(body: list[tuple[str, int]]) -> list[int]:
    return list(dict.fromkeys(v for _t, v in body))


def test_large_constants_past_the_table_and_across_bodies(monkeypatch):
    rng = random.Random(30)
    big = decoder._BIG_MAX
    # more distinct large values than the table takes (the set goes on from there), values
    # that share a slot (x and x + k * 4096 * 2**40 hash alike), both signs, the i64
    # extremes, small ones between them, every value at least twice
    vals = [rng.randrange(1024, 1 << 31) for _ in range(big + 700)]
    vals += [-(1 << 31), (1 << 31) - 1, -65, -64, 1023, 1024, 0, 5]
    vals += [7 << 40 | 9, 7 << 40 | 9 | 4096 << 40, 9, 9 + (1 << 52)]
    long_body = [("i32" if -(1 << 31) <= v < 1 << 31 else "i64", v) for v in vals]
    long_body += [("i64", -(1 << 63)), ("i64", (1 << 63) - 1)]
    twice = long_body + rng.sample(long_body, len(long_body))
    short = [("i32", v) for v in vals[:50]] + [("i64", 1 << 40)] * 3 + [("i32", 4096)] * 2
    bodies = [short, twice, short, [], [("i64", -(1 << 63))] * 2 + short]
    data = _module(bodies)
    want = [_want(b) for b in bodies]
    assert len(want[1]) > big  # (the set's path is taken)
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_consts_without_librt"):
        assert _consts(mod, data) == want, mod.__name__


def test_a_slot_taken_by_an_earlier_body_is_free_for_the_next(monkeypatch):
    # the same slot (values 4096 * 2**40 apart) in two bodies, in either order
    a, b = 3 << 20, (3 << 20) + (4096 << 40)
    bodies = [[("i64", a), ("i64", b)], [("i64", b), ("i64", a), ("i64", b)], [("i64", a)]]
    data = _module(bodies)
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_consts_without_librt"):
        assert _consts(mod, data) == [[a, b], [b, a], [a]], mod.__name__
