"""Ingest: real modules, one transaction, deterministic identities, carry-over, binary names."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services import ingest as ingest_mod
from kbtool.services.ingest import IngestError, ingest_file, is_minified
from kbtool.wasm import detect_toolchain, parse_module
from tests.support.paths import DEMO_DIR, corpus_file

V1, V2 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


def counts(conn):
    return {
        t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        for t in ("versions", "functions", "facts", "symbols", "annotation_events", "modules")
    }


def test_ingest_real_module(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, V1, label="1.5.5", carry=False)
    assert (res.imported, res.defined) == (8, 535)
    assert res.exported == 186
    v = queries.list_versions(conn)[0]
    assert v == {
        "id": 1,
        "label": "1.5.5",
        "toolchain_version": v["toolchain_version"],
        "functions": 543,
        "shared_memory": False,
        "program": "zstd",
        "parent_version_id": None,
    }
    funcs = queries.list_functions(conn, 1)
    assert len(funcs) == 535 and all(f["index"] >= 8 for f in funcs)
    assert set(funcs[0]) == {"index", "stable_id", "type", "name", "provenance", "confidence"}
    named = {f["name"] for f in funcs if f["name"]}
    assert {"ZSTD_compress", "ZSTD_decompress", "ZSTD_createCCtx"} <= named
    cov = queries.coverage(conn, 1)
    assert (
        cov["named"]
        == cov["export_named"]
        + cov["human_named"]
        + cov["oracle_named"]
        + cov["agent_named"]
        + cov["diff_carry_named"]
    )
    # exports are recorded through the gate, one event each
    sid = next(f["stable_id"] for f in funcs if f["name"] == "ZSTD_compress")
    evs = queries.annotation_events(conn, sid)
    assert len(evs) == 1 and evs[0]["kind"] == "export" and evs[0]["actor"] == "ingest"
    facts = queries.get_function_facts(
        conn, 1, next(f["index"] for f in funcs if f["name"] == "ZSTD_compress")
    )
    assert facts["is_exported"] and facts["instruction_mnemonics"][-1] == "end"
    assert facts["type_signature"].startswith("(")
    assert queries.get_function_facts(conn, 1, 0) is None, "imports have no facts"
    assert queries.get_function_facts(conn, 1, 10_000) is None


def test_identities_deterministic_across_fresh_kbs(tmp_path):
    ids = []
    for n in range(2):
        conn = open_rw(tmp_path / f"kb{n}.db")
        ingest_file(conn, V1, label="a", carry=False)
        ingest_file(conn, V2, label="b", carry=False)
        ids.append(
            conn.execute(
                "SELECT version_id, idx, stable_id FROM functions ORDER BY 1, 2"
            ).fetchall()
        )
        conn.close()
    assert ids[0] == ids[1]
    assert len({r[2] for r in ids[0] if r[0] == 1}) == 543, "ids unique within a version"


def test_carry_over_keeps_identity_of_same_function(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, V1, label="a", carry=False)
    res = ingest_file(conn, V2, label="b", carry=False)
    assert res.parent_version_id == 1
    assert res.carried > 500 and res.carried + res.new_identities == 549
    old = {f["name"]: f["stable_id"] for f in queries.list_functions(conn, 1, True) if f["name"]}
    new = {f["name"]: f["stable_id"] for f in queries.list_functions(conn, 2, True) if f["name"]}
    same = [n for n in old if n in new]
    assert len(same) > 150
    assert sum(old[n] == new[n] for n in same) / len(same) > 0.99
    # history shows both versions
    h = queries.history(conn, old["ZSTD_compress"])
    assert [v["version_id"] for v in h["versions"]] == [1, 2]
    assert h["first_seen"]["version_id"] == 1


def test_ingest_is_one_transaction(tmp_path, monkeypatch):
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, V1, label="a", carry=False)
    before = counts(conn)

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest_mod, "_record_binary_names", boom)
    with pytest.raises(RuntimeError):
        ingest_file(conn, V2, label="b", carry=False)
    assert counts(conn) == before
    assert not conn.in_transaction


@pytest.mark.parametrize("cut", [0, 4, 7, 9, 100, 5000, 123_456])
def test_truncated_module_is_a_clear_error(tmp_path, cut):
    bad = tmp_path / "bad.wasm"
    bad.write_bytes(V1.read_bytes()[:cut])
    conn = open_rw(tmp_path / "kb.db")
    with pytest.raises(IngestError, match="offset|magic|not a"):
        ingest_file(conn, bad, label="x")
    assert counts(conn)["versions"] == 0


def test_not_wasm_missing_and_duplicate_label(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    txt = tmp_path / "readme.txt"
    txt.write_text("hello world, this is text")
    with pytest.raises(IngestError, match="not a valid WebAssembly"):
        ingest_file(conn, txt)
    with pytest.raises(IngestError, match="no such file"):
        ingest_file(conn, tmp_path / "nope.wasm")
    ingest_file(conn, V1, label="a", carry=False)
    with pytest.raises(IngestError, match="already exists"):
        ingest_file(conn, V2, label="a")


def test_minified_names():
    assert is_minified("a") and is_minified("xa") and is_minified("$a")
    assert not is_minified("abc") and not is_minified("malloc")


def test_js_glue_recovers_sqljs_names(tmp_path):
    wasm = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm")
    js = corpus_file("release/sql.js-1.12.0.sql-wasm.js")
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, wasm, label="sqljs", glue_path=js)
    assert res.glue["exports"] >= 40
    names = {f["name"] for f in queries.list_functions(conn, res.version_id) if f["name"]}
    assert {"sqlite3_open", "sqlite3_prepare_v2", "malloc", "free"} <= names
    sid = next(
        f["stable_id"]
        for f in queries.list_functions(conn, res.version_id)
        if f["name"] == "sqlite3_open"
    )
    ev = queries.get_symbol(conn, sid)["evidence"][0]
    assert ev["source"] == "js-glue" and ev["minified"] == "xa"


def test_shared_memory_and_toolchain_on_threaded_build(tmp_path):
    wasm = corpus_file("release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm")
    module = parse_module(wasm.read_bytes())
    assert module.shared_memory is True
    assert detect_toolchain(module, ()).startswith("emscripten")
    named = parse_module(corpus_file("gt/zstd-1.5.5.O2.named.wasm").read_bytes())
    assert named.shared_memory is False
    assert detect_toolchain(named, ()) == "clang 22.1.8"
