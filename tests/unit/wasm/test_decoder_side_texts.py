"""The decoder's facts-row texts (``ModuleAnalysis.side``): per defined function the JSON
texts of ``mem_ops`` and ``calls`` equal ``orjson.dumps`` of the lists, the distinct callees
are the calls' in first-seen order; pure and compiled decoders give the same; the facts and
call-edge rows made from them equal the rows made without them."""

from __future__ import annotations

import orjson
import pytest

from kbtool.identity.records import table_slots
from kbtool.services import ingest_rows
from kbtool.wasm import active, decoder, facts
from testkit.wasmbuild import CORPUS, have_wabt, wasm_builder

COMPILED = active.load_compiled()
MODULES = [
    "release/sql.js-1.12.0.sql-wasm.wasm",
    "gt/zstd-1.5.7.O2.stripped.wasm",
    "gt/zstd-1.5.6.Os.named.wasm",
]
FIXTURES = ["mvp", "simd", "atomics", "tailcall", "memory64", "facts_a", "datamodel"]


def _side(mod, data: bytes) -> tuple[list[tuple], tuple]:
    ctx = facts._Ctx(data, facts.parse_module(data))
    rows = mod.analyze_range(ctx, 0, len(ctx.m.code))
    return rows, ctx.side


def _check(mod, data: bytes) -> tuple:
    rows, side = _side(mod, data)
    assert side is not None
    mem, calls, callees = side
    assert len(mem) == len(calls) == len(callees) == len(rows)
    for t, m, c, u in zip(rows, mem, calls, callees, strict=True):
        f = facts.FuncFacts(*t)
        assert m == orjson.dumps(f.mem_ops).decode()
        assert c == orjson.dumps(f.calls).decode()
        assert u == list(dict.fromkeys(f.calls))
    return side


def _decoders() -> list:
    return [decoder] + ([COMPILED] if COMPILED is not None else [])


@pytest.mark.parametrize("rel", MODULES)
def test_corpus_texts_equal_the_lists_dumps(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    sides = [_check(mod, data) for mod in _decoders()]
    assert all(s == sides[0] for s in sides)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_wat_families_texts(tmp_path_factory, fixture):
    if not have_wabt():
        pytest.skip("wabt not installed")
    data = wasm_builder(tmp_path_factory.mktemp("side"))(fixture, False)
    sides = [_check(mod, data) for mod in _decoders()]
    assert all(s == sides[0] for s in sides)


def test_a_partial_range_sets_no_texts():
    path = CORPUS / MODULES[1]
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    for mod in _decoders():
        ctx = facts._Ctx(data, facts.parse_module(data))
        mod.analyze_range(ctx, 1, len(ctx.m.code))
        assert ctx.side is None


@pytest.mark.parametrize("rel", MODULES[:2])
def test_fact_rows_with_the_texts_equal_those_without(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    a = facts.analyze_module(path.read_bytes())
    assert a.side is not None
    slots = table_slots(a)
    with_x, with_e = ingest_rows.fact_rows(7, a.functions, slots, a.side)
    without_x, without_e = ingest_rows.fact_rows(7, a.functions, slots)
    assert with_x == without_x
    assert len(with_e) == len(without_e) == len(set(with_e)) > 100
    assert sorted(with_e) == sorted(without_e)
    # not the decoder's whole list (imports and defined functions in index order): ignored
    part = a.functions[len(a.functions) // 2 :]
    assert ingest_rows.fact_rows(7, part, slots, a.side) == ingest_rows.fact_rows(7, part, slots)
