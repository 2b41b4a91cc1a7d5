"""``read_memory`` over a module's segments sorted once per module (not once per read):
the same bytes as reading every segment in address order, overlaps included."""

from __future__ import annotations

import random

from kbtool.analysis import dataitems
from kbtool.wasm.facts import ModuleAnalysis
from kbtool.wasm.model import DataSegment, Module


def _naive(segs: list[tuple[int, bytes, int]], address: int, length: int) -> bytes | None:
    if address < 0 or length < 0:
        return None
    out, hit = bytearray(length), False
    for base, data, _k in segs:
        lo, hi = max(base, address), min(base + len(data), address + length)
        if lo < hi:
            out[lo - address : hi - address] = data[lo - base : hi - base]
            hit = True
    return bytes(out) if hit else None


def _module(rng: random.Random) -> ModuleAnalysis:
    m = Module()
    for k in range(300):
        size = rng.choice([1, 3, 16, 200, 5000])
        data = bytes(rng.randrange(256) for _ in range(size))
        passive = k % 7 == 0
        offset = None if passive else rng.randrange(1024, 200_000)
        m.data_segments.append(DataSegment(0, offset, data, passive))
    m.data_segments.append(DataSegment(1, 4096, b"other memory", False))
    return ModuleAnalysis(m, [], None)


def test_reads_match_every_segment_in_order_and_sort_once(monkeypatch) -> None:
    rng = random.Random(7)
    analysis = _module(rng)
    passive = {k: 300_000 + 64 * k for k in range(0, 300, 7)}
    calls = []
    real = dataitems._sorted_segments
    monkeypatch.setattr(dataitems, "_sorted_segments", lambda a, p: calls.append(1) or real(a, p))
    for pmap in (None, passive):
        segs = real(analysis, pmap)
        assert dataitems.segments(analysis, pmap) == segs
        for _ in range(2000):
            a = rng.randrange(-10, 330_000)
            n = rng.choice([0, 1, 4, 64, 6000])
            assert dataitems.read_memory(analysis, a, n, pmap) == _naive(segs, a, n)
    assert len(calls) == 2  # once per (module, passive map), not once per read
    # a caller may change the list it gets: the next reads still see every segment
    dataitems.segments(analysis).clear()
    assert dataitems.segments(analysis) == real(analysis, None)
