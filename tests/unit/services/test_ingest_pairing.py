"""Ingest runs the matcher once and stores the (parent, new) report every surface serves."""

from __future__ import annotations

from kbtool.identity import matcher
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.report import compute_diff, get_diff
from kbtool.services.ingest import ingest_file
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo"


def test_second_ingest_runs_the_matcher_once_and_stores_the_report(tmp_path, monkeypatch):
    runs = []
    real = matcher._Matcher.run_staged

    def counting(self, fuzzy, **kw):
        runs.append(fuzzy)
        return real(self, fuzzy, **kw)

    monkeypatch.setattr(matcher._Matcher, "run_staged", counting)
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, DEMO / "zstd-1.5.5.wasm", label="a")
    assert runs == []  # nothing to match against
    res = ingest_file(conn, DEMO / "zstd-1.5.6.wasm", label="b")
    assert len(runs) == 1, runs  # identities, carry-over and the report from one run
    assert res.diff_carry is not None and res.carried > 0
    stored = queries.stored_diff_report(conn, 1, 2)
    assert stored is not None
    runs.clear()
    served = get_diff(conn, 1, 2)
    assert runs == [] and served["stored"] is True  # served without the matcher
    computed = compute_diff(conn, 1, 2)
    assert computed["changes"] == served["changes"] and computed["summary"] == served["summary"]


def test_stored_report_shows_todays_names(tmp_path):
    from kbtool.kb.gate import upsert_symbol

    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, DEMO / "zstd-1.5.5.wasm", label="a")
    ingest_file(conn, DEMO / "zstd-1.5.6.wasm", label="b")
    entry = next(c for c in get_diff(conn, 1, 2)["changes"] if c["to_index"] is not None)
    d = upsert_symbol(
        conn,
        entry["to_stable_id"],
        "renamed_after_ingest",
        provenance="human",
        confidence=1.0,
        actor="human:test",
    )
    assert d["written"]
    again = next(c for c in get_diff(conn, 1, 2)["changes"] if c["to_index"] == entry["to_index"])
    assert again["name"] == "renamed_after_ingest" and again["provenance"] == "human"
