"""The decoder's per-body globals (``FuncFacts.globals_used``: a stamp list below
``_GLOB_FLAT``, a set above it, then sorted) and its memory ops at large offsets (the
shared tuples of a dict): every decoder (pure, without ``librt``, compiled) gives each
body's globals sorted and distinct, and each access's ``(op, offset, width)`` in order,
whichever body came first."""

from __future__ import annotations

import random

from kbtool.wasm import decoder, facts
from kbtool.wasm.opcodes import PREFIX_BASE, WIDTH
from testkit.wasmbuild import module, section, uleb, vec
from tests.support.without_librt import decoder_variants

# an instruction: ("g", index) global.get + drop, ("s", index) i32.const 0 + global.set,
# ("m", opcode, offset) i32.const 0 + a load (+ drop) or i32.const 0 x2 + a store
_STORES = range(0x36, 0x3F)


def _code(ins: tuple) -> bytes:
    if ins[0] == "g":
        return b"\x23" + uleb(ins[1]) + b"\x1a"
    if ins[0] == "s":
        return b"\x41\x00\x24" + uleb(ins[1])
    if ins[0] == "a":  # i32.atomic.load (0xFE 0x10)
        return b"\x41\x00\xfe\x10\x02" + uleb(ins[2]) + b"\x1a"
    op, off = ins[1], ins[2]
    acc = bytes([op]) + b"\x00" + uleb(off)
    if op in _STORES:
        const = b"\x42\x00" if op in (0x37, 0x39, 0x3C, 0x3D, 0x3E) else b"\x41\x00"
        if op == 0x38:
            const = b"\x43\x00\x00\x00\x00"
        elif op == 0x39:
            const = b"\x44" + b"\x00" * 8
        return b"\x41\x00" + const + acc
    return b"\x41\x00" + acc + b"\x1a"


def _module(bodies: list[list[tuple]]) -> bytes:
    codes = []
    for b in bodies:
        code = b"\x00" + b"".join(_code(i) for i in b) + b"\x0b"
        codes.append(uleb(len(code)) + code)
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"] * len(bodies))),
        section(10, vec(codes)),
    )


def _facts(mod, data: bytes) -> list:
    ctx = facts._Ctx(data, facts.parse_module(data))
    return [facts.FuncFacts(*r) for r in mod.analyze_range(ctx, 0, len(ctx.m.code))]


def test_globals_sorted_and_distinct_on_both_sides_of_the_stamp_list(monkeypatch):
    rng = random.Random(28)
    flat = decoder._GLOB_FLAT
    idx = [0, 1, 5, flat - 1, flat, flat + 1, 70_000, 3, 200, 1 << 20]
    long_body = [("g" if rng.random() < 0.5 else "s", rng.choice(idx)) for _ in range(80)]
    bodies = [
        long_body,
        [("g", flat + 7), ("g", flat + 7)],
        [],
        [("s", 5), ("g", 5), ("g", 4), ("s", flat - 1)],
        long_body[::-1],
        [("g", 2)],
    ]
    data = _module(bodies)
    want = [sorted({i[1] for i in b}) for b in bodies]
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_front_without_librt"):
        assert [f.globals_used for f in _facts(mod, data)] == want, mod.__name__


def test_memory_ops_at_large_offsets_one_byte_and_prefixed(monkeypatch):
    flat = decoder._FLAT_OFFSETS
    a = flat + 12_345
    b = a + 8192
    big = 1 << 51
    loads = [("m", 0x28, a), ("m", 0x28, b), ("m", 0x28, a), ("m", 0x2D, a)]
    stores = [("m", 0x36, a), ("m", 0x37, b), ("m", 0x39, 1 << 30), ("m", 0x28, big)]
    at = PREFIX_BASE[0xFE] + 0x10
    c = a + 4096
    atomic = [("a", at, a), ("a", at, c), ("a", at, 5), ("a", at, big), ("a", at, a)]
    bodies = [
        loads + stores,
        stores[::-1] + loads,
        [("m", 0x28, flat - 1), ("m", 0x28, b)],
        atomic + loads,
        atomic[::-1],
    ]
    data = _module(bodies)
    want = [[(i[1], i[2], WIDTH[i[1]]) for i in body] for body in bodies]
    for mod in decoder_variants(monkeypatch, "kbtool.wasm._decoder_front_without_librt"):
        got = [f.mem_ops for f in _facts(mod, data)]
        assert [[tuple(m) for m in ops] for ops in got] == want, mod.__name__
