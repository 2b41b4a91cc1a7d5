"""Ingest runs the matcher once and stores the (parent, new) report every surface serves."""

from __future__ import annotations

import pytest

from kbtool.identity import pairing
from kbtool.identity.records import records_from_rows
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.report import compute_diff, get_diff
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import CORPUS
from tests.support.matcher import pure_matcher, pure_part
from tests.support.paths import ROOT

# the pure package's parts: these tests patch or subclass them
matcher = pure_part()


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


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


PAIRS = [
    (DEMO / "zstd-1.5.5.wasm", DEMO / "zstd-1.5.6.wasm"),
    (
        CORPUS / "release" / "sql.js-1.10.3.sql-wasm.wasm",
        CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm",
    ),
]


@pytest.mark.parametrize("first, later", PAIRS, ids=["demo-zstd", "sqljs"])
def test_pairing_gets_the_rows_and_records_the_kb_reads_back(tmp_path, monkeypatch, first, later):
    """A later release's pairing takes the rows ingest stored and the matcher's records as
    ingest has them: exactly what reading the version back gives (every key and value, and
    every record field with the stable ids), and the matcher's very record objects."""
    if not later.is_file():
        pytest.skip("corpus not present")
    seen = []
    real = pairing.pair_rows

    def watching(*a, **kw):
        seen.append((a, kw))
        return real(*a, **kw)

    monkeypatch.setattr(pairing, "pair_rows", watching)
    matched = []
    real_match = matcher.match_functions_staged

    def match_watching(old, new, **kw):
        matched.append(new)
        return real_match(old, new, **kw)

    monkeypatch.setattr(matcher, "match_functions_staged", match_watching)
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, first, label="a")
    res = ingest_file(conn, later, label="b")
    [(args, kw)], [new_recs_matcher] = seen, matched
    new_list, new_recs = args[3], kw["new_recs"]
    read_back = queries.matching_rows(conn, res.version_id)
    assert len(new_list) == len(read_back) > 100
    for mine, stored in zip(new_list, read_back, strict=True):
        assert list(mine.items()) == list(stored.items())
        assert [type(v) for v in mine.values()] == [type(v) for v in stored.values()]
    assert new_recs == records_from_rows(read_back)
    assert new_recs is new_recs_matcher  # the matcher's own objects: its features are shared
    assert all(r.stable_id for r in new_recs)


@pytest.mark.parametrize("first, later", PAIRS, ids=["demo-zstd", "sqljs"])
def test_report_takes_the_view_ingest_made(tmp_path, monkeypatch, first, later):
    """A later release's report reads only the parent's module from the KB: the new
    module's relocation view is the one ingest made of the bytes it stored, and the stored
    report is the one a report built from the KB alone (both modules read back) gives."""
    from kbtool.services.diff import relocation

    if not later.is_file():
        pytest.skip("corpus not present")
    read: list[int] = []
    real = queries.module_bytes

    def counting(conn, version_id):
        read.append(version_id)
        return real(conn, version_id)

    monkeypatch.setattr(queries, "module_bytes", counting)
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, first, label="a")
    relocation._VIEWS.clear()  # (no view an earlier test kept of the parent)
    read.clear()
    ingest_file(conn, later, label="b")
    assert read == [1]  # the parent's bytes; not the module just stored
    relocation._VIEWS.clear()  # (the report below parses both modules as read back)
    served = get_diff(conn, 1, 2)
    computed = compute_diff(conn, 1, 2)
    assert set(read[1:]) == {1, 2}
    assert computed["changes"] == served["changes"]
    assert any(c.get("relocated") for c in served["changes"])
