"""The decoder's stops for the data walk (``ModuleAnalysis.hot``): the positions of every
constant, memory access, ``global.get``/``set`` and ``call_indirect``, by which the walk's
all-unknown stack jumps over the instructions between them. The walk with them gives the
references it gives without them (and the careful walk's), pure and compiled, in Go mode
(where they are not used) too; both decoders give the same stops."""

from __future__ import annotations

import random
from array import array

import pytest

from kbtool.analysis import datawalk, datawalk_active
from kbtool.analysis.datamodel import scan_bounds, scan_plan
from kbtool.analysis.datarefs import function_refs_careful
from kbtool.wasm import active, analyze_module, decoder, facts
from kbtool.wasm.opcodes import PREFIX_BASE
from testkit.wasmbuild import CORPUS, tiny_module
from tests.support.wasm_bodies import random_body

WALKS = [datawalk] + [m for m in (datawalk_active.load_compiled(),) if m is not None]
DECODERS = [decoder] + [m for m in (active.load_compiled(),) if m is not None]
_FINDS = (1, 2, 3, 9, 10, 11)  # the walk's classes an all-unknown stack stops at
_ONE_BYTE = (2, 3, 4, 7, 11)  # the decoder's kinds it records (memarg, consts, globals, ci)
_PREFIXED = (2, 20)  # behind a prefix: memarg (+ lane)


def _stops(mod, data: bytes) -> tuple[bytes, bytes]:
    ctx = facts._Ctx(data, facts.parse_module(data))
    mod.analyze_range(ctx, 0, len(ctx.m.code))
    assert ctx.hot is not None
    return ctx.hot


def _ints(b: bytes) -> list[int]:
    a = array("i")
    a.frombytes(b)
    return a.tolist()


def test_every_op_the_walk_stops_at_is_recorded():
    cls = datawalk._CLS
    for op in range(256):
        if cls[op] in _FINDS:
            assert decoder._FAST_KIND[op] in _ONE_BYTE, hex(op)
    for prefix, base in PREFIX_BASE.items():
        _base, kinds = decoder._PFX[prefix]
        for sub, k in enumerate(kinds):
            if base + sub < len(cls) and cls[base + sub] in _FINDS:
                assert k in _PREFIXED, (hex(prefix), sub)


def test_a_partial_range_sets_no_stops():
    data = tiny_module(b"\x41\x05\x1a\x0b")
    for mod in DECODERS:
        ctx = facts._Ctx(data, facts.parse_module(data))
        mod.analyze_range(ctx, 0, 0)
        assert ctx.hot is None
        mod.analyze_range(ctx, 0, 1)
        assert _ints(ctx.hot[0]) == [len(data) - 4] and _ints(ctx.hot[1]) == [0, 1]


@pytest.mark.parametrize("go", [False, True])
def test_random_bodies_give_the_same_references_with_stops(go):
    rng = random.Random(32 + go)
    lo, hi, mem_hi = 1024, 2500, 4096
    for _ in range(60):
        body = random_body(rng, rng.randrange(1, 40))
        data = tiny_module(body[3:], locals_=body[:3])
        got_stops = [_stops(mod, data) for mod in DECODERS]
        assert all(s == got_stops[0] for s in got_stops)
        pos, idx = got_stops[0]
        j, j1 = 4 * _ints(idx)[0], 4 * _ints(idx)[1]
        assert (j, j1) == (0, len(pos))
        start, end = facts.parse_module(data).code[0]
        want = [
            (r.func_index, r.offset, r.kind, r.target_kind, r.target, r.width)
            for r in function_refs_careful(data, 7, start, end - start, lo, hi, go, mem_hi)
        ]
        for side in WALKS:
            for floor in (lo - 8, -100):
                plain: list = []
                side.body_refs(data, 7, start, end, lo, hi, go, mem_hi, floor, plain)
                jumped: list = []
                side.body_refs(data, 7, start, end, lo, hi, go, mem_hi, floor, jumped, pos, j, j1)
                assert [tuple(r) for r in jumped] == [tuple(r) for r in plain] == want


def test_a_body_without_stops_has_nothing_to_find():
    data = tiny_module(b"\x20\x00\x1a\x10\x00\x0b", locals_=b"\x01\x01\x7f")
    pos, idx = _stops(decoder, data)
    assert pos == b"" and _ints(idx) == [0, 0]
    start, end = facts.parse_module(data).code[0]
    for side in WALKS:
        out: list = []
        side.body_refs(data, 0, start, end, 0, 10, False, 10, -100, out, pos, 0, 0)
        assert out == []


@pytest.mark.parametrize(
    "name", ["gt/zstd-1.5.6.Os.stripped.wasm", "release/sql.js-1.12.0.sql-wasm.wasm"]
)
def test_corpus_modules_walk_the_same_with_stops(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    data = path.read_bytes()
    a = analyze_module(data)
    assert a.hot is not None
    _passive, lo, hi, mem_hi = scan_bounds(a, data, None)
    plan = scan_plan(a, lo, mem_hi)
    nimp = a.module.num_func_imports
    for side in WALKS:
        for go in (False, True):
            plain = side.module_refs_flat(data, plan, lo, hi, go, mem_hi, 1 << 40)
            jumped = side.module_refs_flat(data, plan, lo, hi, go, mem_hi, 1 << 40, a.hot, nimp)
            assert jumped == plain and plain[0]
