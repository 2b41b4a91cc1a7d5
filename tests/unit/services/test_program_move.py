"""Moving a version between programs leaves no stale state: the KB's change token moves (every
cached diff, changelog and prepared code of the KB is stale), a cached cross-program report
becomes a same-program one, and the ingest hint names the command."""

from __future__ import annotations

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.cache import DiffCache, DiskAnswers
from kbtool.services.ingest import ingest_file
from kbtool.services.lineage import Lineage, describe
from kbtool.services.program_move import set_program
from tests.support.paths import DEMO_DIR


def _kb(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, DEMO_DIR / "zstd-1.5.5.wasm", label="a")
    ingest_file(conn, DEMO_DIR / "zstd-1.5.6.wasm", label="b", program="other")
    return conn


def test_a_cached_cross_program_report_is_not_served_after_the_move(tmp_path):
    conn = _kb(tmp_path)
    cache = DiffCache(disk=DiskAnswers(None))
    before = cache.report(conn, 1, 2)
    assert before["to_program"] == "other" and "warning" in before
    assert cache.report(conn, 1, 2) is before  # cached
    set_program(conn, 2, "zstd")
    after = cache.report(conn, 1, 2)
    assert after is not before
    assert after["from_program"] == after["to_program"] == "zstd" and "warning" not in after
    conn.close()


def test_the_change_token_moves_even_when_nothing_is_carried(tmp_path):
    conn = _kb(tmp_path)
    token = queries.change_token(conn)
    res = set_program(conn, 2, "zstd", carry=False)
    assert res.carry is None and res.parent_version_id == 1
    assert queries.change_token(conn) != token
    conn.close()


def test_the_new_program_hint_names_set_program():
    lin = Lineage("lz4-2", None, None, 0.029, "new-program", True)
    lin.near = {"program": "lz4", "version_id": 1, "overlap": 0.029}
    assert "(already ingested: kbtool set-program 7 lz4)" in describe(lin, 7)
    assert "(already ingested: kbtool set-program VERSION lz4)" in describe(lin)
