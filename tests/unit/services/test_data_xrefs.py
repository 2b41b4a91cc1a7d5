"""Data symbols and cross-references through the KB: `kbtool analyze` stores the data model,
`kbtool xrefs/strings/globals/data/memory` read it (issue 26)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.services import data as data_svc
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import build_wat, have_wabt

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("xrefs")
    wasm = build_wat("datamodel", d)
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        analyze_version(conn, 1)
    finally:
        conn.close()
    return db


def run(db, *args):
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_model_before_analyze(tmp_path):
    """A version without a model (ingested by a kbtool that built none at ingest)."""
    from kbtool.kb.datamodel import drop_data_model

    wasm = build_wat("datamodel", tmp_path)
    db = tmp_path / "kb.db"
    conn = open_rw(str(db), create=True)
    ingest_file(conn, str(wasm), label="1.0")
    with conn:
        assert drop_data_model(conn, 1)
    conn.close()
    r = run(db, "xrefs", "1", "g:0")
    assert r.returncode == 1 and "kbtool analyze 1" in r.stderr and "Traceback" not in r.stderr


def test_xrefs_of_a_global_a_string_an_address(kb):
    conn = open_ro(str(kb))
    try:
        g = data_svc.xrefs(conn, 1, "g:__stack_pointer")
        assert g["target"]["role"] == "stack_pointer"
        assert sorted(r["kind"] for r in g["refs"]) == ["read", "write", "write"]
        assert g["total"] == 3  # f1 reads it once and writes it twice
        s = data_svc.xrefs(conn, 1, '"create table')
        assert s["target"]["label"] == "s_create_table_s" and s["total"] == 1
        assert s["refs"][0]["func_index"] == 1 and s["refs"][0]["kind"] == "addr"
        a = data_svc.xrefs(conn, 1, "0x420")  # 1056: the i32.const 0; i32.load offset=1056
        assert a["refs"][0]["kind"] == "load" and a["refs"][0]["func_index"] == 1
        f = data_svc.xrefs(conn, 1, "#1")
        assert f["target"]["kind"] == "function"
        used = {u.get("label") for u in f["uses"]["data"]}
        assert "s_create_table_s" in used
    finally:
        conn.close()


def test_cli_reads_and_bad_input(kb):
    r = run(kb, "xrefs", "1", '"create table', "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["target"]["text"] == "create table %s"
    r = run(kb, "strings", "1", "--json")
    page = json.loads(r.stdout)
    assert [i["text"] for i in page["items"]] == ["create table %s"]
    r = run(kb, "globals", "1", "--json")
    assert json.loads(r.stdout)[1]["name"] == "__heap_base"
    r = run(kb, "memory", "1", "0x400", "-n", "6", "--json")
    assert json.loads(r.stdout)["rows"][0]["ascii"] == "create"
    for args, want in [
        (("xrefs", "1", "nosuchthing"), "matches nothing"),
        (("xrefs", "1", "g:99"), "no global"),
        (("xrefs", "1", "0x10"), "no data item"),
        (("xrefs", "9", "g:0"), "version"),
        (("memory", "1", "0x10"), "outside the initialised data"),
        (("memory", "1", "zz"), "not an address"),
    ]:
        r = run(kb, *args)
        assert r.returncode != 0 and want in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
