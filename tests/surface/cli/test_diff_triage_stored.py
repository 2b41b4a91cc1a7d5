"""A diff report saved under older triage rules (before an upgrade) is served with today's
triage: the stored report's modified entries carry the changelog's scores, reasons and kinds,
so the web table, the TUI and MCP ``get_diff`` order it as ``ui diff`` and the changelog do."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from kbtool.kb import queries, store
from kbtool.kb.db import open_ro, open_rw, transaction
from kbtool.services.diff.cache import DiffCache
from kbtool.services.diff.report import TRIAGE_PENDING, stored_diff
from kbtool.services.diff.triage import TRIAGE_RULES
from tests.support.triage_pair import V1, V2

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")


def test_stored_report_of_older_rules_gets_todays_triage(tmp_path):
    db = tmp_path / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
        (tmp_path / f"{name}.wat").write_text(text)
        subprocess.run(
            ["wat2wasm", str(tmp_path / f"{name}.wat"), "-o", str(tmp_path / f"{name}.wasm")],
            check=True,
        )
        base = ("--base", "1") if name == "v2" else ()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "--db",
                str(db),
                "ingest",
                str(tmp_path / f"{name}.wasm"),
                "-l",
                name,
                *base,
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    conn = open_rw(db)
    raw = queries.stored_diff_report(conn, 1, 2)  # ingest stores it untriaged
    assert raw is not None and raw["triage_rules"] == TRIAGE_PENDING != TRIAGE_RULES
    assert not any("triage" in c for c in raw["changes"])
    saved = stored_diff(conn, 1, 2)  # triaged on read
    assert saved is not None and "triage_rules" not in saved
    fresh = {
        c["to_index"]: (c["triage"], c["reasons"])
        for c in saved["changes"]
        if c["classification"] == "modified"
    }
    # as an older kbtool saved it: no rules version, other scores and reasons
    for c in saved["changes"]:
        if c["classification"] == "modified":
            c["triage"], c["reasons"] = -5.0 - c["to_index"], ["stale"]
    with transaction(conn):
        store.save_diff_report(conn, 1, 2, saved)
    conn.close()
    conn = open_ro(db)
    keep: dict = {}
    report = stored_diff(conn, 1, 2, keep=keep)
    assert report is not None and "triage_rules" not in report  # the report's shape as ever
    assert {
        c["to_index"]: (c["triage"], c["reasons"])
        for c in report["changes"]
        if c["classification"] == "modified"
    } == fresh
    assert "changelog" in keep
    # the cache serves the refreshed report and keeps the changelog computed for it
    cache = DiffCache(max_entries=8)
    served = cache.report(conn, 1, 2)
    assert all(c["reasons"] != ["stale"] for c in served["changes"])
    cache.changelog(conn, 1, 2)
    assert cache.changelogs == 0
