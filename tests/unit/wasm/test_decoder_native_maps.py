"""The data map's native lookups give what the Python ones did: an address's segment by a
bisection of native ints (the list's when a segment ends past 63 bits), the per-segment
scan budget in a native array read when first needed; pure and compiled."""

from __future__ import annotations

from bisect import bisect_right

import pytest

from kbtool.wasm import active
from kbtool.wasm.decoder import dmap as pure_dmap

COMPILED = active.load_compiled()
DMAPS = [pure_dmap] + ([active.DMAP] if COMPILED is not None else [])


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
