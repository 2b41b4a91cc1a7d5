"""Data labels through the gate: ``kbtool name-data VERSION TARGET NAME`` names a data item by its
content identity (or a global by its version-independent key); strings/globals/xrefs and the
C show it instead of the analysis label, the next release with the same bytes shows it too."""

from __future__ import annotations

import json
import subprocess
import sys

from kbtool.kb.db import open_rw
from kbtool.services import data as data_svc
from kbtool.services import knowledge as ks
from kbtool.services.analyze import analyze_version
from kbtool.services.code import disassembly


def _cli(db, *args):
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "--db", str(db), *args], capture_output=True, text=True
    )


def test_name_data_shown_everywhere_and_carried_by_content(demo_kb):
    from kbtool.kb.datamodel import drop_data_model

    conn = open_rw(demo_kb)
    analyze_version(conn, 1)
    with conn:  # version 2 as ingested before ingest built the model
        drop_data_model(conn, 2)
    first = data_svc.strings(conn, 1, limit=1)["items"][0]
    conn.close()
    p = _cli(demo_kb, "name-data", "1", hex(first["address"]), "msg_ok")
    assert p.returncode == 0, p.stderr
    assert _cli(demo_kb, "name-data", "1", "g:__stack_pointer", "sp").returncode == 0
    bad = _cli(demo_kb, "name-data", "1", hex(first["address"]), "not ok")
    assert (
        bad.returncode == 1 and "not a C identifier" in bad.stderr and "Traceback" not in bad.stderr
    )
    nomodel = _cli(demo_kb, "name-data", "2", "0x10", "x")
    assert nomodel.returncode == 1 and "kbtool analyze 2" in nomodel.stderr
    conn = open_rw(demo_kb)
    item = data_svc.strings(conn, 1, limit=1)["items"][0]
    assert item["label"] == "msg_ok" and item["analysis_label"] == first["label"]
    g = next(g for g in data_svc.globals_of(conn, 1) if g["index"] == 0)
    assert g["name"] == "sp" and g["name_provenance"] == "human"
    x = data_svc.xrefs(conn, 1, "msg_ok")
    assert x["target"]["address"] == first["address"] and x["total"] > 0
    user = x["refs"][0]["func_index"]
    d = disassembly(conn, 1, user)
    assert "msg_ok" in d["mnemonics"] and "msg_ok" in d["lifted_c"]
    # the next release: the same bytes (content identity) carry the name
    analyze_version(conn, 2)
    item2 = next(
        i
        for i in data_svc.strings(conn, 2, limit=1000)["items"]
        if i["data_id"] == first["data_id"]
    )
    assert item2["label"] == "msg_ok"
    assert ks.apply_data_names(conn, 2)["items"] >= 1
    out = json.loads(_cli(demo_kb, "xrefs", "2", "g:sp", "--json").stdout)
    assert out["target"]["name"] == "sp"
