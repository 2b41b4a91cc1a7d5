"""The initial memory image (:func:`kbtool.analysis.dataitems.memory_image`): segments apart
or touching are joined with their zero gaps in one pass; overlapping ones (a later segment's
bytes win) still go through the copy. Either way the image is the byte-by-byte copy's."""

from __future__ import annotations

import pytest

from kbtool.analysis import dataitems


def _copied(segs):
    lo, hi = segs[0][0], max(b + len(d) for b, d, _ in segs)
    img = bytearray(hi - lo)
    for b, d, _k in segs:
        img[b - lo : b - lo + len(d)] = d
    return lo, bytes(img)


CASES = {
    "apart": [(1024, b"abc", 0), (1100, b"\x01\x02", 1), (5000, b"z" * 40, 2)],
    "touching": [(16, b"abcd", 0), (20, b"efgh", 1), (24, b"\x00\x00i", 2)],
    "overlapping": [(16, b"abcdefgh", 0), (20, b"XYZ", 1), (40, b"q", 2)],
    "contained": [(100, b"0123456789", 0), (102, b"ab", 1)],
    "same start": [(64, b"long bytes", 0), (64, b"XY", 1), (90, b"!", 2)],
    "one": [(7, b"only", 0)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_image_is_the_copy(monkeypatch, name):
    segs = CASES[name]
    monkeypatch.setattr(dataitems, "segments", lambda _a, _p=None: segs)
    got = dataitems.memory_image(None)
    assert got == _copied(segs)
    assert type(got[1]) is bytes


def test_an_image_past_the_limit_is_empty(monkeypatch):
    segs = CASES["apart"]
    monkeypatch.setattr(dataitems, "segments", lambda _a, _p=None: segs)
    assert dataitems.memory_image(None, limit=100) == (1024, b"")
    monkeypatch.setattr(dataitems, "segments", lambda _a, _p=None: [])
    assert dataitems.memory_image(None) == (0, b"")
