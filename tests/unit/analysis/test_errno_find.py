"""The errno recognizer's scan: ``_find_after`` (the literal head found once by a
regex of it, both store patterns tried there) yields for each pattern exactly what the
regex engine's own ``finditer`` does, on code built to be dense with heads, partial matches
and overlaps, within any bounds."""

from __future__ import annotations

import random
import re

from kbtool.analysis.errno import _STORE_CONST, _STORE_LOCAL, _find_after
from kbtool.wasm.leb import encode_sleb, encode_uleb


def _spans(ms):
    return [(m.span(), m.groups()) for m in ms]


def test_same_matches_as_the_regex_finditer():
    rng = random.Random(7)
    heads = [
        b"\x10" + encode_uleb(5),
        b"\x10" + encode_uleb(13867),
        b"\x41" + encode_sleb(1024),
        b"\x10" + encode_uleb(0x36),  # a head whose bytes also start a store
    ]
    pieces = [b"\x41\x05\x36\x02\x00", b"\x20\x01\x36\x02\x00", b"\x41\xc0\x00\x36\x02\x00"]
    pieces += [b"\x36\x02", b"\x20", b"\x41", b"\x10", b"\x00"]
    compared = found = 0
    for _ in range(300):
        parts = []
        for _ in range(rng.randrange(1, 60)):
            r = rng.random()
            parts.append(
                rng.choice(heads)
                if r < 0.35
                else rng.choice(pieces)
                if r < 0.8
                else bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
            )
        data = b"".join(parts)
        lo = rng.randrange(0, max(1, len(data) // 3))
        hi = rng.randrange(lo, len(data) + 1)
        for head in heads:
            both = _find_after(head, (_STORE_CONST, _STORE_LOCAL), data, lo, hi)
            for rest, got in zip((_STORE_CONST, _STORE_LOCAL), both, strict=True):
                want = _spans(re.compile(re.escape(head) + rest, re.DOTALL).finditer(data, lo, hi))
                assert _spans(got) == want
                assert _spans(_find_after(head, (rest,), data, lo, hi)[0]) == want
                compared += 1
                found += len(want)
    assert compared == 300 * 8 and found > 100  # (the inputs did hold matches)
