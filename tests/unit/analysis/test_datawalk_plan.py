"""The reference scan's plan (which bodies to walk, how, from which floor) made by the
compiled twin (``_cdatawalk.scan_plan``) is the pure plan of
:func:`kbtool.analysis.datamodel.scan_plan`, on corpus modules and for other bounds."""

from __future__ import annotations

import pytest

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datawalk_active
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS

COMPILED = datawalk_active.load_compiled()
MODULES = ["gt/zstd-1.5.6.Os.stripped.wasm", "release/sql.js-1.12.0.sql-wasm.wasm"]


@pytest.mark.skipif(
    COMPILED is None, reason=f"compiled data walk {datawalk_active.compiled_state()}"
)
@pytest.mark.parametrize("name", MODULES)
def test_compiled_plan_is_the_pure_plan(name, monkeypatch):
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"corpus module {name} absent")
    data = path.read_bytes()
    a = analyze_module(data)
    _passive, lo, hi, mem_hi = dmod.scan_bounds(a, data, stack_pointer_global(a, data))
    monkeypatch.setattr(datawalk_active, "IMPL", None)
    for bounds in ((lo, mem_hi), (mem_hi, lo), (0, 1 << 40), (lo, lo), (lo + 4096, hi)):
        pure = dmod.scan_plan(a, *bounds)
        assert COMPILED.scan_plan(a.functions, *bounds) == pure
        assert any(p[3] == 2 for p in pure) or bounds[0] >= bounds[1]
