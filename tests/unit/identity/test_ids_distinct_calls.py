"""``assign_new_ids`` from the decoder's distinct callees (``ModuleAnalysis.side``'s third
list) gives the same ids as from ``set(f.calls)``: all functions, a subset, ids taken in
the KB (salts bumped); a list that does not fit the functions is ignored."""

from __future__ import annotations

import pytest

from kbtool.identity.ids import assign_new_ids
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS

MODULES = ["release/sql.js-1.12.0.sql-wasm.wasm", "gt/zstd-1.5.6.Os.named.wasm"]


@pytest.mark.parametrize("rel", MODULES)
def test_distinct_callees_give_the_same_ids(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    a = analyze_module(path.read_bytes())
    assert a.side is not None
    callees = a.side[2]
    every = [f.index for f in a.functions]
    free = set().__contains__
    base = assign_new_ids(a, every, free)
    assert assign_new_ids(a, every, free, callees) == base
    taken = set(list(base.values())[::3]).__contains__
    for subset in (every[::2], every[1::3]):
        assert assign_new_ids(a, subset, taken, callees) == assign_new_ids(a, subset, taken)
    # a list not the decoder's (too long: it would shift the functions) is ignored
    wrong = [[0]] * (len(a.functions) + 1)
    assert assign_new_ids(a, every, free, wrong) == base
