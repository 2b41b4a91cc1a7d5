"""The op-bigram count of ``kbtool/identity/matcher/bigrams.py`` without mypyc's runtime
library (:mod:`librt` is not a dependency of the pure path): its fallbacks (lists for
``vec``, ``int.from_bytes`` for the 16-bit reads) count the same histograms as
``Counter.update``, in the same sorted words, with the same norm."""

from __future__ import annotations

import random
from array import array

from tests.support.paths import PACKAGE
from tests.support.without_librt import import_without_librt


def test_the_typed_count_without_librt_gives_counters_histograms(monkeypatch):
    mod = import_without_librt(
        monkeypatch, PACKAGE / "identity" / "matcher" / "bigrams.py", "_bigrams_without_librt"
    )
    assert type(mod.vec[int]([1, 2])) is list and mod.read_i16_le(b"\xff\xff", 0) == -1
    rnd = random.Random(11)
    alphabet = [0, 1, 5, 9, 0x7FFF, 0x8000, 0xFC01, 0xFFFF]
    for _ in range(200):
        xs = [rnd.choice(alphabet) for _ in range(rnd.randrange(0, 200))]
        ops = array("H", xs).tobytes()
        big = mod._counter(ops, len(ops))
        got = mod._pair_counts(ops, len(xs))
        assert got == mod._as_words(big) == sorted(got)
        assert mod.hist_dict(got) == dict(big)
        assert mod._words_square(got) == sum(v * v for v in big.values())
    # past 256 distinct ops the typed count hands over to Counter's
    assert mod._pair_counts(array("H", range(300)).tobytes(), 300) is None
