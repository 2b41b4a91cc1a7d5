"""The store's packing of the data references leaves the caller's list as it was (its
order and its tuples), compiled columns or not, so the caller needs no copy of the walk's
references (ffmpeg: 382k) before writing them; the packing is the sorted rows' either way."""

from __future__ import annotations

import random

from kbtool.analysis import datamodel
from kbtool.kb import datarefs


def _rows(rng: random.Random, n: int) -> list[tuple]:
    out = []
    for _ in range(n):
        f = rng.randrange(-1, 40)
        out.append(
            (
                f,
                rng.randrange(10_000),
                rng.choice(datarefs.KINDS),
                rng.choice(datarefs.TARGET_KINDS),
                rng.randrange(1 << 20),
                rng.randrange(9),
            )
        )
    return out


def test_packing_leaves_the_rows_as_given():
    rng = random.Random(30)
    cols = datamodel.ref_columns()
    for n in (1, 2, 50, 3000):
        rows = _rows(rng, n)
        before = list(rows)
        ids = [id(r) for r in rows]
        want = datarefs.pack(datarefs.by_function_and_offset(list(rows)))
        for columns in (None, cols):
            got = datarefs.pack_any_order(rows, columns)
            assert got == want, (n, columns)
            assert rows == before and [id(r) for r in rows] == ids, (n, columns)


def test_a_declined_column_pass_leaves_the_rows_as_given():
    rng = random.Random(31)
    rows = _rows(rng, 500)
    before = list(rows)

    def declines(*_a):
        raise OverflowError("declined")

    got = datarefs.pack_any_order(rows, declines)
    assert got == datarefs.pack(datarefs.by_function_and_offset(list(before)))
    assert rows == before
