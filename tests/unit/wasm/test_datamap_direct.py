"""The data map's string lookups give the same answers whether the text at an address is
matched directly (the cheap path while a segment's budget lasts) or read off the segment's
precomputed runs (the bound for many addresses in long text)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.wasm.datamap import _RUN, MAX_CSTRING, DataMap

TEXTY = st.lists(
    st.sampled_from(
        [
            b"a",
            b"Z",
            b" ",
            b"\n",
            b"\x00",
            b"\x01",
            b"\xc3\xa9",
            b"\xe2\x82\xac",
            b"\xf0\x9f\x98\x80",
            b"\x80",
            b"\xff",
            b"%s",
            b"hello",
        ]
    ),
    min_size=1,
    max_size=120,
).map(b"".join)


def _entries(factor: int, seg: bytes, addrs: list[int], sized_first: bool) -> list:
    dm = DataMap([(0x1000, seg)], sized_first=sized_first)
    dm.DIRECT_SCAN_FACTOR = factor
    return [dm.entry(0x1000 + a) for a in addrs]


@settings(max_examples=200, deadline=None)
@given(TEXTY, st.lists(st.integers(0, 400), min_size=1, max_size=30), st.booleans())
def test_direct_and_precomputed_lookups_agree(seg, addrs, sized_first):
    addrs = [a % len(seg) for a in addrs]
    runs = _entries(0, seg, addrs, sized_first)  # precomputed runs from the first address
    assert _entries(1 << 30, seg, addrs, sized_first) == runs  # direct matches only
    assert _entries(1, seg, addrs, sized_first) == runs  # direct, then runs midway


@settings(max_examples=200, deadline=None)
@given(TEXTY, st.integers(0, 400), st.sampled_from([0, 2, 1 << 30]))
def test_match_end_is_the_bounded_regex_on_both_paths(seg, rel, factor):
    rel %= len(seg)
    dm = DataMap([(0, seg)])
    dm.DIRECT_SCAN_FACTOR = factor
    assert dm._match_end(0, seg, rel) == _RUN.match(seg, rel, rel + MAX_CSTRING).end()


def test_many_addresses_in_long_text_switch_to_the_runs():
    """Every address of a 64 KB text: direct matches would scan ~4096 bytes each
    (quadratic); the map switches to the precomputed runs once it has scanned twice the
    segment, and the answers stay those of the regex."""
    seg = b"x" * 65536 + b"\x00"
    dm = DataMap([(0, seg)])
    for rel in range(0, 65536, 7):
        assert dm._match_end(0, seg, rel) == min(rel + MAX_CSTRING, 65536)
    assert 0 in dm.runs
    assert dm.direct_left[0] <= 0
