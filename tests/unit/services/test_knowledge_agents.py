"""``kbtool deep`` writes its understanding as the function comment and its variable renames
as local names, through the gate as provenance agent (a human comment stays)."""

from __future__ import annotations

from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services import knowledge as ks
from kbtool.services.deep import run_deep


def test_deep_writes_comments_and_local_names(demo_kb):
    conn = open_rw(demo_kb)
    picks = []
    for f in queries.list_functions(conn, 1):
        row = queries.get_function(conn, 1, f["index"])
        if not row["imported"] and row["instr_count"] > 30 and row["type"].startswith("(i32"):
            picks.append(f["index"])
        if len(picks) == 4:
            break
    human_sid = queries.get_function(conn, 1, picks[0])["stable_id"]
    ks.set_comment(conn, human_sid, "My own reading.")
    run_deep(conn, 1, functions=picks, name=False)
    renamed = 0
    for idx in picks:
        sid = queries.get_function(conn, 1, idx)["stable_id"]
        a = queries.get_analysis(conn, sid)
        c = kn.get(conn, "comment", sid)
        if sid == human_sid:
            assert c["value"]["text"] == "My own reading." and c["provenance"] == "human"
            continue
        assert c["value"]["text"] == a["understanding"].strip() and c["provenance"] == "agent"
        assert c["evidence"][0]["source"] == "deep"
        locals_ = ks.local_names(conn, sid)
        for old, new in a["rename_map"].items():
            if old[0] in "pl" and old[1:].isdigit():
                assert locals_.get(int(old[1:])) == new
                renamed += 1
    assert renamed > 0
