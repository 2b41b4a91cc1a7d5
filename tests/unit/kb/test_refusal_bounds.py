"""Rejected proposals are bounded (issue #24 point 10): identical refusals are one row with a
count and the time of the last repeat; one caller's refusal rows per minute are capped; an
old KB migrates to schema 4."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from kbtool.cli import main
from kbtool.kb import queries, schema
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import MAX_REFUSALS_PER_MINUTE, revert, upsert_symbol
from testkit.kb import bare_kb, frozen_time
from tests.support.paths import ROOT

SIDS = [f"{i:016x}" for i in range(4)]
CLI = [sys.executable, "-m", "kbtool.cli"]


def refusals(conn, sid=None):
    sql = "SELECT stable_id, repeats, last_at, created_at, reason FROM annotation_events WHERE written = 0"
    return conn.execute(
        sql + (" AND stable_id = ?" if sid else ""), (sid,) if sid else ()
    ).fetchall()


def test_identical_refusals_are_one_row_with_a_count_and_last_time(tmp_path, capsys):
    db = tmp_path / "kb.db"
    conn = bare_kb(db, SIDS)
    upsert_symbol(
        conn, SIDS[0], "parse_header", provenance="human", confidence=1.0, actor="human:t"
    )
    with frozen_time("2026-01-01T00:00:00.000000Z"):
        for _ in range(50):
            d = upsert_symbol(
                conn, SIDS[0], "agent_guess", provenance="agent", confidence=0.9, actor="agent:mcp"
            )
            assert d == {"written": False, "reason": "locked"}
    with frozen_time("2026-01-01T00:05:00.000000Z"):
        upsert_symbol(
            conn, SIDS[0], "agent_guess", provenance="agent", confidence=0.9, actor="agent:mcp"
        )
        # a different proposal is its own row
        upsert_symbol(
            conn, SIDS[0], "other_guess", provenance="agent", confidence=0.9, actor="agent:mcp"
        )
    rows = refusals(conn)
    assert [(r["repeats"], r["last_at"]) for r in rows] == [
        (51, "2026-01-01T00:05:00.000000Z"),
        (1, "2026-01-01T00:05:00.000000Z"),
    ]
    # after a write to the function the same proposal starts a new row (history stays in order)
    upsert_symbol(
        conn, SIDS[0], "parse_header2", provenance="human", confidence=1.0, actor="human:t"
    )
    revert(conn, SIDS[0], actor="human:t")
    upsert_symbol(
        conn, SIDS[0], "agent_guess", provenance="agent", confidence=0.9, actor="agent:mcp"
    )
    assert [r["repeats"] for r in refusals(conn)] == [51, 1, 1]
    conn.close()
    assert main(["--db", str(db), "history", SIDS[0]]) == 0
    out = capsys.readouterr().out
    assert "×51" in out and "00:05" in out


def test_one_callers_refusal_rows_per_minute_are_capped(tmp_path):
    db = tmp_path / "kb.db"
    conn = bare_kb(db, SIDS)
    for sid in SIDS:
        upsert_symbol(conn, sid, f"name_{sid}", provenance="human", confidence=1.0, actor="human:t")
    n = MAX_REFUSALS_PER_MINUTE + 300
    for i in range(n):  # all different, all refused, all in one minute
        d = upsert_symbol(
            conn, SIDS[i % 4], f"guess_{i}", provenance="agent", confidence=0.9, actor="agent:mcp"
        )
        assert not d["written"]
    rows = refusals(conn)
    assert len(rows) == MAX_REFUSALS_PER_MINUTE + 4  # the budget, then one row per function
    assert sum(r["repeats"] for r in rows) == n  # every refusal still counted
    assert "over 120 a minute" in rows[-1]["reason"]
    # another caller has its own budget; a human's refusal is recorded as usual
    d = upsert_symbol(
        conn, SIDS[0], "bad name!", provenance="human", confidence=1.0, actor="human:t"
    )
    assert "identifier" in d["reason"]
    assert refusals(conn)[-1]["reason"].startswith("invalid name")
    conn.close()


def test_a_schema_3_kb_migrates_and_keeps_its_events(tmp_path):
    """A KB as kbtool wrote it at schema 3 (migrations 1-3 only), with a refusal event."""
    db = tmp_path / "old.db"
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("BEGIN")
    for n in (1, 2, 3):
        schema.MIGRATIONS[n](raw)
    raw.execute(
        "INSERT INTO meta(key, value) VALUES ('kind', ?), ('schema_version', '3')",
        (schema.KB_KIND,),
    )
    raw.execute(
        "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
        " exported_functions, ingested_at) VALUES ('v1', 'x', 0, 0, 1, 0, 't')"
    )
    raw.execute(
        "INSERT INTO functions (version_id, idx, stable_id, imported, type_sig)"
        " VALUES (1, 0, ?, 0, '() -> ()')",
        (SIDS[0],),
    )
    raw.execute(
        "INSERT INTO annotation_events (stable_id, kind, written, reason, provenance,"
        " actor, created_at) VALUES (?, 'rejection', 0, 'locked', 'agent', 'agent:t',"
        " '2025-01-01T00:00:00.000000Z')",
        (SIDS[0],),
    )
    raw.execute("COMMIT")
    raw.close()
    conn = open_rw(db)  # any writing command migrates
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION >= 4
    events = queries.annotation_events(conn, SIDS[0])
    assert [(e["kind"], e["repeats"], e["last_at"]) for e in events] == [
        ("rejection", 1, "2025-01-01T00:00:00.000000Z")
    ]
    upsert_symbol(conn, SIDS[0], "owner", provenance="human", confidence=1.0, actor="human:t")
    for _ in range(3):  # the migrated KB counts repeats from now on
        upsert_symbol(conn, SIDS[0], "guess", provenance="agent", confidence=0.5, actor="agent:t")
    assert [r["repeats"] for r in refusals(conn)] == [1, 3]
    conn.close()


def test_mcp_refusal_loop_adds_one_row(tmp_path):
    """The reported case through the real server: 300 identical refused propose_symbol calls."""
    db = tmp_path / "kb.db"
    conn = bare_kb(db, SIDS)
    upsert_symbol(
        conn, SIDS[0], "parse_header", provenance="human", confidence=1.0, actor="human:t"
    )
    conn.close()
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    lines += [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": i + 1,
                "method": "tools/call",
                "params": {
                    "name": "propose_symbol",
                    "arguments": {"stable_id": SIDS[0], "name": "agent_guess", "confidence": 0.9},
                },
            }
        )
        for i in range(300)
    ]
    done = subprocess.run(
        CLI + ["mcp", "--db", str(db)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("locked") >= 300
    conn = open_ro(db)
    rows = refusals(conn)
    conn.close()
    assert [r["repeats"] for r in rows] == [300]


def test_refusal_growth_benchmark_smoke():
    """benchmarks/refusal_growth.py --smoke: 200 identical refused calls add one event row."""
    root = ROOT
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "refusal_growth.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    assert "refused propose_symbol calls: 200/200" in done.stdout
    assert "annotation_events rows: 1 -> 2" in done.stdout
