"""The decoder twin's helpers added in session 34 (W): ``slots.edge_values`` (the call edges
as one flat list in (callee, caller) order, by a counting sort) and ``tokens.loose_parts``
(the fingerprints' loose text lines); pure and compiled give what the Python references
give, and the rows an ingest writes from them are the same rows."""

from __future__ import annotations

import random
import sqlite3

import pytest

from kbtool.analysis import fingerprints
from kbtool.identity.records import table_slots
from kbtool.kb import store
from kbtool.services import ingest_rows
from kbtool.wasm import active, facts
from kbtool.wasm.decoder import slots as pure_slots
from kbtool.wasm.decoder import tokens as pure_tokens
from testkit.wasmbuild import CORPUS

COMPILED = active.load_compiled()
MODULES = ["release/sql.js-1.12.0.sql-wasm.wasm", "gt/zstd-1.5.7.O2.stripped.wasm"]


def _impls(part: str) -> list:
    import importlib

    out = [pure_slots if part == "slots" else pure_tokens]
    if COMPILED is not None:
        out.append(importlib.import_module(f"{COMPILED.__name__}.{part}"))
    return out


def _reference_edges(callees, nimp) -> list[int]:
    pairs = sorted((c, nimp + k) for k, cs in enumerate(callees) for c in cs)
    return [v for p in pairs for v in p]


@pytest.mark.parametrize("seed", range(5))
def test_edge_values_random(seed):
    rnd = random.Random(seed)
    for _ in range(50):
        nimp = rnd.randint(0, 9)
        callees = [rnd.sample(range(60), rnd.randint(0, 8)) for _ in range(rnd.randint(0, 40))]
        want = _reference_edges(callees, nimp)
        for impl in _impls("slots"):
            assert impl.edge_values(callees, nimp) == want


def test_edge_values_sparse_and_empty():
    for impl in _impls("slots"):
        assert impl.edge_values([], 3) == []
        assert impl.edge_values([[], []], 3) == []
        assert impl.edge_values([[1 << 40, 2], [2]], 1) == [2, 1, 2, 2, 1 << 40, 1]


@pytest.mark.parametrize("rel", MODULES)
def test_flat_edges_equal_the_sorted_rows(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    a = facts.analyze_module(path.read_bytes())
    slots = table_slots(a)
    x0, e0 = ingest_rows.fact_rows(7, a.functions, slots, a.side)
    x1, e1 = ingest_rows.fact_rows(7, a.functions, slots, a.side, flat_edges=True)
    x2, e2 = ingest_rows.fact_rows(7, a.functions, slots, None, flat_edges=True)
    assert x0 == x1 == x2
    want = [v for p in sorted((c, i) for _, i, c in e0) for v in p]
    assert e1 == e2 == want and len(want) > 200


def _edges_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE call_edges (version_id INTEGER NOT NULL, caller INTEGER NOT NULL,"
        " callee INTEGER NOT NULL, PRIMARY KEY (version_id, callee, caller)) WITHOUT ROWID"
    )
    return conn


@pytest.mark.parametrize("n", [0, 1, 7, 999, 1000, 1001, 2500, 3000])
def test_call_edge_pairs_store_the_rows_of_the_tuples(n):
    rnd = random.Random(n)
    pairs = sorted({(rnd.randrange(400), rnd.randrange(400)) for _ in range(n)})
    flat = [v for p in pairs for v in p]
    a, b = _edges_table(), _edges_table()
    store.insert_call_edge_values(
        a, ("version_id", "caller", "callee"), [(5, r, c) for c, r in pairs]
    )
    store.insert_call_edge_pairs(b, 5, flat)
    q = "SELECT version_id, caller, callee FROM call_edges ORDER BY version_id, callee, caller"
    assert a.execute(q).fetchall() == b.execute(q).fetchall()
    assert len(b.execute(q).fetchall()) == len(pairs)


def test_call_edge_pairs_refuse_an_odd_list():
    with pytest.raises(sqlite3.ProgrammingError):
        store.insert_call_edge_pairs(_edges_table(), 1, [1, 2, 3])


@pytest.mark.parametrize("rel", MODULES)
def test_loose_parts_equal_the_reference(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    a = facts.analyze_module(data)
    ctx = fingerprints.LooseContext(data, a.module)
    lo, hi = ctx.bounds
    bodies = [f for f in a.functions if not f.imported][::7]
    for f in bodies:
        toks = fingerprints._body_tokens(data, f)
        want_texts: list[str] = []
        want = fingerprints.loose_parts(toks, lo, hi, ctx.address_token, want_texts)
        for impl in _impls("tokens"):
            texts: list[str] = []
            assert impl.loose_parts(toks, lo, hi, ctx.address_token, texts) == want
            assert texts == want_texts
