"""Query rows read by field: the reference modules of ``oracle_modules`` (``match_oracle``
filters them by id) and the identities of ``function_identities``, on the demo KB."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.queries.shapes import IdentityRow, OracleBytes
from kbtool.services.oracle import OracleError, add_oracle, match_oracle
from tests.support.paths import CORPUS, DEMO_WASM


def test_oracle_modules_are_records_and_match_filters_by_id(demo_kb) -> None:
    named = CORPUS / "gt" / "zstd-1.5.2.O2.named.wasm"
    if not named.exists():
        pytest.skip("corpus not present")
    conn = open_rw(demo_kb)
    try:
        first = add_oracle(conn, DEMO_WASM, label="demo-exports")["id"]
        second = add_oracle(conn, named, label="zstd-named")["id"]
        refs = queries.oracle_modules(conn)
        assert all(isinstance(r, OracleBytes) for r in refs)
        assert [(r.id, r.label) for r in refs] == [(first, "demo-exports"), (second, "zstd-named")]
        assert refs[1].data == named.read_bytes()
        res = match_oracle(conn, 2, oracle_ids=[second], structural=False)
        assert [o["id"] for o in res["oracles"]] == [second]
        with pytest.raises(OracleError, match=f"unknown oracle id {second + 1}"):
            match_oracle(conn, 2, oracle_ids=[second + 1])
    finally:
        conn.close()


def test_function_identities_are_records(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        rows = queries.function_identities(conn, 2)
        named = queries.annotations_by_index(conn, 2)
        listed = {f["index"]: f for f in queries.list_functions(conn, 2, include_imports=True)}
        imports = {i for i in listed if queries.get_function(conn, 2, i)["imported"]}
    finally:
        conn.close()
    assert rows and all(isinstance(r, IdentityRow) for r in rows)
    assert [r.index for r in rows] == sorted(listed)
    for r in rows:
        assert r.stable_id == listed[r.index]["stable_id"]
        assert r.imported is (r.index in imports)
        assert r.name == (named[r.index]["name"] if r.index in named else None)
    imported = [r for r in rows if r.imported]
    assert imported and all(r.import_module and r.import_field for r in imported)
