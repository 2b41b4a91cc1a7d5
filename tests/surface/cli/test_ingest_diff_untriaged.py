"""A later release's ingest stores its (parent, new) diff report without the changelog's
triage (``triage_rules`` = ``TRIAGE_PENDING``; issue 30.4: the changelog moves to the
background warm job). Before that job runs (it is off in tests), every reader still gets the
triaged report a fresh computation gives: the service, ``kbtool diff --json`` and the web
API of a real ``kbtool serve``; ``kbtool ingest`` prints what it printed before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services.diff.report import TRIAGE_PENDING, compute_diff, get_diff
from tests.support.paths import DEMO_DIR
from tests.support.web import ServerProcess, request

DEMO = DEMO_DIR


def _kbtool(db: Path, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "--db", str(db), *args],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_later_release_is_stored_untriaged_and_read_triaged(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    _kbtool(db, "ingest", str(DEMO / "zstd-1.5.5.wasm"))
    out = _kbtool(db, "ingest", str(DEMO / "zstd-1.5.6.wasm"))
    assert "parent version 1" in out and "names carried by diff:" in out
    assert "Traceback" not in out and "triage" not in out

    conn = open_ro(db)
    try:
        raw = queries.stored_diff_report(conn, 1, 2)
        assert raw is not None and raw["triage_rules"] == TRIAGE_PENDING
        modified = [c for c in raw["changes"] if c["classification"] == "modified"]
        assert modified and not any("triage" in c or "explain" in c for c in modified)
        expected = dict(compute_diff(conn, 1, 2), stored=True)  # the triaged answer
        served = get_diff(conn, 1, 2)
    finally:
        conn.close()
    triaged = [c for c in expected["changes"] if c["classification"] == "modified"]
    assert len(triaged) == len(modified) and all("triage" in c and "explain" in c for c in triaged)
    assert served == expected
    assert sum("triage" in c for c in served["changes"]) == len(modified)

    cli = json.loads(_kbtool(db, "diff", "1", "2", "--json"))
    assert cli == json.loads(json.dumps(expected))
    with ServerProcess(db) as srv:
        status, _, body = request(srv.port, "/api/diff?from=1&to=2")
    assert status == 200
    assert json.loads(body) == json.loads(json.dumps(expected))
