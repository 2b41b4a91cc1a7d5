"""``stack_pointer_global`` keeps the last analysis's answer (ingest asks twice): the same
answer as computing it, for that analysis only, and never another module's."""

from __future__ import annotations

import importlib

from kbtool.wasm import analyze_module
from tests.support.paths import DEMO_DIR, DEMO_WASM, corpus_file

R = importlib.import_module("kbtool.analysis.recognize")


def test_kept_answer_is_the_computed_one_for_that_analysis_only():
    mods = [DEMO_WASM.read_bytes(), (DEMO_DIR / "zstd-1.5.6.wasm").read_bytes()]
    mods.append(corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes())
    analyses = [analyze_module(d) for d in mods]
    fresh = [R._stack_pointer_global(a, d) for a, d in zip(analyses, mods, strict=True)]
    assert any(sp is not None for sp in fresh)
    for _ in range(2):  # asked again, and after another module in between
        for a, d, want in zip(analyses, mods, fresh, strict=True):
            assert R.stack_pointer_global(a, d) == want
            assert R.stack_pointer_global(a, d) == want  # (the kept one)
            assert R.stack_pointer_global(a, None) == R._stack_pointer_global(a, None)
    # a new analysis of the same bytes is computed again (the kept one belongs to another)
    again = analyze_module(mods[0])
    assert R._LAST_SP is not None and R._LAST_SP[0]() is not again
    assert R.stack_pointer_global(again, mods[0]) == fresh[0]
    assert R._LAST_SP[0]() is again
