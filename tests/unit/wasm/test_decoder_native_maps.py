"""The decoder's native lookups give what the Python ones did: the data map's segment by a
bisection of native ints (the list's when a segment starts past 64 bits), its per-segment
scan budget in a native array, and the decoder's map of the data addresses it has met
(:class:`kbtool.wasm.decoder.i64map.I64Map`), pure and compiled."""

from __future__ import annotations

import random
from bisect import bisect_right

import pytest

from kbtool.wasm import active
from kbtool.wasm.decoder import dmap as pure_dmap
from kbtool.wasm.decoder import i64map as pure_i64map

COMPILED = active.load_compiled()
DMAPS = [pure_dmap] + ([active.DMAP] if COMPILED is not None else [])


def _sides() -> list[tuple[object, bool]]:
    """(module, its tables native): the pure module both ways (its native algorithm on
    lists, its dicts) and the twin's."""
    out: list[tuple[object, bool]] = [(pure_i64map, True), (pure_i64map, False)]
    if COMPILED is not None:
        from kbtool.wasm._cdecoder import i64map  # type: ignore[import-not-found]

        out.append((i64map, True))
    return out


SIDES = _sides()


def _side_id(side: tuple[object, bool]) -> str:
    return f"{side[0].__name__}-{'native' if side[1] else 'dict'}"


@pytest.mark.parametrize("side", SIDES, ids=_side_id)
def test_i64map_answers_as_a_dict_through_its_growth(side, monkeypatch):
    mod, native = side
    if mod is pure_i64map:
        monkeypatch.setattr(mod, "_COMPILED", native)
    rng = random.Random(30)
    # addresses with shared low bits (strided), both signs, the extremes, repeats
    keys = [0x10000 + 16 * i for i in range(3000)]
    keys += [rng.randrange(-(1 << 63), 1 << 63) for _ in range(3000)]
    keys += [-(1 << 63), (1 << 63) - 1, 0, -1, 1 << 32] + keys[:100]
    m = mod.I64Map()
    want: dict[int, int] = {}
    for k in keys:
        assert m.get(k) == want.get(k, -1)
        if k not in want:
            want[k] = len(want)
            m.put(k, want[k])
    if native:
        assert m.n == len(want) and m.mask + 1 >= 2 * len(want)
    assert all(m.get(k) == v for k, v in want.items())
    assert m.get(12345678901) == -1


@pytest.mark.parametrize("side", SIDES, ids=_side_id)
def test_big_consts_are_new_once_a_body(side, monkeypatch):
    mod, native = side
    if mod is pure_i64map:
        monkeypatch.setattr(mod, "_COMPILED", native)
    rng = random.Random(31)
    big = mod.BigConsts()
    # a table's share of values (many share a slot: x and x + 4096 * 2**40), each twice
    vals = [rng.randrange(-(1 << 40), 1 << 40) for _ in range(mod.BIG_MAX - 100)]
    vals += [v + (4096 << 40) for v in vals[:100]]
    for ci in (0, 1, 7):
        order = vals + rng.sample(vals, len(vals))
        seen: set[int] = set()
        for x in order:
            assert big.first(x, ci) is (x not in seen)
            seen.add(x)


@pytest.mark.parametrize("mod", DMAPS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("wide", [False, True])
def test_the_segment_of_an_address_is_the_bisections(mod, wide):
    segs = [(0x10, b"abcdefgh"), (0x100, b"\x01" * 64), (0x400, b"text\x00more")]
    if wide:  # a segment past 64 bits: the list's bisection for every address
        segs.append(((1 << 63) + 8, b"\x02" * 16))
    dm = mod.DataMap(segs)
    assert dm.narrow is not wide
    starts = sorted(o for o, _ in segs)
    addrs = [0, 0xF, 0x10, 0x17, 0x18, 0xFF, 0x100, 0x13F, 0x140, 0x400, 0x40A, 0x500]
    addrs += [(1 << 63) - 1, 1 << 63, (1 << 63) + 8, (1 << 63) + 23, (1 << 63) + 24, 1 << 64]
    for a in addrs:
        i = bisect_right(starts, a) - 1
        assert dm._segment(a) == i, hex(a)
        seg = dict(segs).get(starts[i]) if i >= 0 else None
        want = (seg, a - starts[i]) if seg is not None and a < starts[i] + len(seg) else None
        assert dm.locate(a) == want, hex(a)


@pytest.mark.parametrize("mod", DMAPS, ids=lambda m: m.__name__)
def test_the_direct_budget_is_per_segment_and_read_when_first_needed(mod):
    text = b"".join(b"word%04d\x00" % i for i in range(200))
    dm = mod.DataMap([(0x1000, text), (0x8000, text)])
    dm.DIRECT_SCAN_FACTOR = 0  # (set after construction: read at the first match)
    e = dm.entry(0x1000)
    assert e is not None and e[1] == "word0000"
    assert 0 in dm.runs and 1 not in dm.runs  # the runs of the first segment only
    dm2 = mod.DataMap([(0x1000, text)])
    e2 = dm2.entry(0x1000 + 9)
    assert e2 is not None and e2[1] == "word0001" and not dm2.runs
    assert dm2.direct_left[0] == 2 * len(text) - 9
