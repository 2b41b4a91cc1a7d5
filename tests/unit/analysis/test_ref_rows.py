"""The data model's references as plain row tuples (the ``data_refs`` row the KB writes):
the compiled walk emits them, the model keeps them, ``model.refs`` still gives DataRefs, and
the compiled single pass over them for the item cuts equals the three pure reads."""

from __future__ import annotations

import pytest

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datawalk as pure_walk
from kbtool.analysis import datawalk_active
from kbtool.analysis.datamodel import build_data_model
from kbtool.analysis.datatypes import DataModel, DataRef
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from tests.support.paths import ROOT

COMPILED = datawalk_active.load_compiled()
needs_twin = pytest.mark.skipif(COMPILED is None, reason="compiled data walk not built")
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _model(monkeypatch, impl) -> DataModel:
    monkeypatch.setattr(datawalk_active, "IMPL", impl)
    data = DEMO.read_bytes()
    a = analyze_module(data)
    return build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))


def test_model_rows_are_tuples_and_refs_still_dataref_objects(monkeypatch):
    m = _model(monkeypatch, datawalk_active.IMPL)
    assert len(m.ref_rows) > 100
    assert all(type(r) is tuple and len(r) == 6 for r in m.ref_rows)
    refs = m.refs
    assert all(isinstance(r, DataRef) for r in refs)
    assert [(r.func_index, r.offset, r.kind, r.target_kind, r.target, r.width) for r in refs] == (
        m.ref_rows
    )
    assert m.to_dict()["refs"][0] == dict(
        zip(
            ("func_index", "offset", "kind", "target_kind", "target", "width"),
            m.ref_rows[0],
            strict=True,
        )
    )


@needs_twin
def test_compiled_and_pure_models_hold_the_same_rows(monkeypatch):
    compiled = _model(monkeypatch, COMPILED)
    pure = _model(monkeypatch, None)
    assert compiled.ref_rows == pure.ref_rows
    assert compiled == pure


@needs_twin
def test_module_refs_makes_objects_only_when_asked():
    data = DEMO.read_bytes()
    a = analyze_module(data)
    passive, lo, hi, mem_hi = dmod.scan_bounds(a, data, stack_pointer_global(a, data))
    plan = dmod.scan_plan(a, lo, mem_hi)
    rows = COMPILED.module_refs(data, plan, lo, hi, False, mem_hi)
    objs = COMPILED.module_refs(data, plan, lo, hi, False, mem_hi, DataRef)
    assert sum(map(len, rows)) > 100
    assert [[DataRef(*t) for t in body] for body in rows] == objs


@needs_twin
def test_ref_marks_equal_the_three_pure_reads():
    refs = [
        (1, 10, "load", "data", 2048, 4),
        (1, 12, "funcptr", "data", 4096, 0),
        (2, 20, "gostring", "data", 8192, 5),
        (-1, 30, "gostring", "data", 8192, 7),  # the last length seen wins
        (2, 22, "read", "global", 0, 0),
        (3, 40, "call_indirect", "table", 0, 0),
        (3, 44, "funcptr", "table", 5, 0),  # a funcptr target whatever its kind
        (4, 50, "addr", "data", 2048, 0),
    ]
    cuts, fptr, gostr = COMPILED.ref_marks(refs)
    assert cuts == {r[4] for r in refs if r[3] == "data"} == {2048, 4096, 8192}
    assert fptr == {r[4] for r in refs if r[2] == "funcptr"} == {4096, 5}
    assert gostr == {r[4]: r[5] for r in refs if r[2] == "gostring"} == {8192: 7}
    assert COMPILED.ref_marks([]) == (set(), set(), {})


@pytest.mark.parametrize("impl", [pure_walk] + ([COMPILED] if COMPILED is not None else []))
def test_the_walk_joins_the_bodies_and_stops_after_the_body_reaching_the_limit(impl):
    """``module_refs_flat``: the per-body lists joined in plan order, cut after the body
    with which the count reaches the limit (what the data model's join did)."""
    data = DEMO.read_bytes()
    a = analyze_module(data)
    passive, lo, hi, mem_hi = dmod.scan_bounds(a, data, stack_pointer_global(a, data))
    plan = dmod.scan_plan(a, lo, mem_hi)
    per_body = impl.module_refs(data, plan, lo, hi, False, mem_hi)
    joined = [r for body in per_body for r in body]
    assert len(joined) > 1000
    for limit in (0, 1, 50, len(joined) // 2, len(joined), len(joined) + 1, 10**9):
        want: list = []
        cut = False
        for body in per_body:
            want.extend(body)
            if len(want) >= limit:
                cut = True
                break
        got = impl.module_refs_flat(data, plan, lo, hi, False, mem_hi, limit)
        assert got == (want, cut)
        assert (len(got[0]) < len(joined)) == (limit <= len(joined) - 1 and cut)


@needs_twin
@pytest.mark.parametrize("limit", [1, 777, 10**9])
def test_a_truncated_model_is_the_same_compiled_and_pure(monkeypatch, limit):
    monkeypatch.setattr(dmod, "MAX_REFS", limit)
    compiled = _model(monkeypatch, COMPILED)
    pure = _model(monkeypatch, None)
    assert compiled == pure
    assert compiled.truncated == (limit < 10**9)
