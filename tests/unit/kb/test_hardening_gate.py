"""Hardening (issue 11, points 4 and 5): refused proposals leave bounded events; summaries,
type signatures and binary names refuse terminal/bidi controls; JSON output escapes them;
a broken stdout pipe ends a command quietly; huge integers are one-line errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.commands import common
from kbtool.kb.gate import EXCERPT, MAX_EVIDENCE_TEXT, upsert_symbol
from kbtool.mcp.server import as_json
from testkit.kb import bare_kb
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]
SID = "a" * 16
ESCAPES = "\x1b]0;TITLE\x07\x1b[2J"


def kbtool(*args: str | Path, stdout=subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    return subprocess.run(
        [*CLI, *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
    )


def event_bytes(conn) -> int:
    return conn.execute(
        "SELECT COALESCE(SUM(LENGTH(COALESCE(old,'')) + LENGTH(COALESCE(new,''))"
        " + LENGTH(COALESCE(evidence,'')) + LENGTH(COALESCE(old_name,''))"
        " + LENGTH(COALESCE(new_name,'')) + LENGTH(reason)), 0) FROM annotation_events"
    ).fetchone()[0]


# ----------------------------------------------------------------- 4: bounded events


def test_refused_proposals_keep_a_bounded_excerpt(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    upsert_symbol(conn, SID, "owner", provenance="human", confidence=1.0, actor="human:t")
    big_summary, big_name = "s" * (8 << 20), "n" * (1 << 20)
    for _ in range(5):
        d = upsert_symbol(
            conn,
            SID,
            "agent_name",
            provenance="agent",
            confidence=0.5,
            actor="agent:t",
            summary=big_summary,
        )
        assert not d["written"] and "summary" in d["reason"]
        d = upsert_symbol(conn, SID, big_name, provenance="agent", confidence=0.5, actor="agent:t")
        assert not d["written"] and "name" in d["reason"]
    # refused by the gate's decision (a locked human name) with a valid long summary
    d = upsert_symbol(
        conn,
        SID,
        "agent_name",
        provenance="agent",
        confidence=0.9,
        actor="agent:t",
        summary="x" * 8000,
    )
    assert d == {"written": False, "reason": "locked"}
    rows = conn.execute(
        "SELECT new, new_name, evidence FROM annotation_events WHERE written = 0"
    ).fetchall()
    assert len(rows) == 3  # identical refusals are one row with a count (issue #24.10)
    assert (
        conn.execute("SELECT SUM(repeats) FROM annotation_events WHERE written = 0").fetchone()[0]
        == 11
    )
    for row in rows:
        new = json.loads(row["new"])
        assert len(new["name"]) <= EXCERPT + 40 and len(row["new_name"]) <= EXCERPT + 40
        assert new["summary"] is None or len(new["summary"]) <= EXCERPT + 40
    assert json.loads(rows[0]["new"])["summary"].endswith(f"({8 << 20} characters)")
    assert event_bytes(conn) < 20_000  # the whole history, not 50 MB


def test_evidence_is_bounded_in_events_and_records(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    evidence = {
        "blob": "e" * 100_000,
        "many": list(range(10_000)),
        "huge": 10**5000,
        "nested": {"a": {"b": {"c": {"d": {"e": "deep"}}}}},
    }
    d = upsert_symbol(
        conn, SID, "named", provenance="agent", confidence=0.5, actor="agent:t", evidence=evidence
    )
    assert d["written"]
    stored = json.loads(conn.execute("SELECT evidence FROM symbols").fetchone()[0])[0]
    assert len(stored["blob"]) <= MAX_EVIDENCE_TEXT + 40
    assert len(stored["many"]) <= 32
    assert stored["huge"].startswith("<integer of")
    assert event_bytes(conn) < 20_000


def test_confidence_of_any_size_is_refused_in_one_short_line(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    for bad in (True, 10**5000, float("nan"), float("inf"), "0.5", 1.5, -0.1):
        d = upsert_symbol(conn, SID, "named", provenance="agent", confidence=bad, actor="agent:t")
        assert not d["written"] and d["reason"].startswith("invalid confidence"), d
        assert len(d["reason"]) < 120
    assert upsert_symbol(conn, SID, "named", provenance="agent", confidence=1, actor="agent:t")[
        "written"
    ]
    json.loads(conn.execute("SELECT json_group_array(new) FROM annotation_events").fetchone()[0])


# ----------------------------------------------------------------- 5: control characters


@pytest.mark.parametrize(
    "summary",
    [
        ESCAPES,
        "bell\x07",
        "cr\r",
        "del\x7f",
        "csi\x9b2J",
        "nel\x85",
        "ls\u2028",
        "rlo\u202e",
        "isolate\u2066x\u2069",
        "rlm\u200f",
    ],
)
def test_summaries_refuse_control_and_bidi_characters(tmp_path, summary):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    for prov in ("human", "agent", "oracle"):
        d = upsert_symbol(
            conn, SID, "named", provenance=prov, confidence=1.0, actor="t", summary=summary
        )
        assert not d["written"] and d["reason"].startswith("invalid summary"), (prov, d)
    assert conn.execute("SELECT COUNT(*) FROM symbols").fetchone()[0] == 0


def test_summaries_keep_newlines_and_tabs(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    text = "Decompresses a frame.\n\tsrc: input\n\tdst: output"
    assert upsert_symbol(
        conn, SID, "named", provenance="agent", confidence=0.5, actor="t", summary=text
    )["written"]
    assert conn.execute("SELECT summary FROM symbols").fetchone()[0] == text


def test_type_signatures_and_binary_names_refuse_controls(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", [SID])
    d = upsert_symbol(
        conn,
        SID,
        "named",
        provenance="human",
        confidence=1.0,
        actor="t",
        type_signature="int f(void)" + ESCAPES,
    )
    assert not d["written"] and d["reason"].startswith("invalid type signature")
    d = upsert_symbol(
        conn,
        SID,
        "named",
        provenance="human",
        confidence=1.0,
        actor="t",
        type_signature="int f(\nvoid)",
    )
    assert not d["written"]
    for name in ("evil\u202etxt.exe", "a\u2028b", "x\x1b[2J"):  # names copied from binaries
        d = upsert_symbol(conn, SID, name, provenance="export", confidence=0.9, actor="t")
        assert not d["written"] and d["reason"].startswith("invalid name"), name
    assert upsert_symbol(
        conn,
        SID,
        "std::vector<int>::push_back(int&&)",
        provenance="export",
        confidence=0.9,
        actor="t",
    )["written"]


def test_set_name_refuses_terminal_escapes_and_export_stays_clean(tmp_path):
    kb = tmp_path / "kb.db"
    bare_kb(kb, [SID]).close()
    res = kbtool("--db", kb, "set-name", SID, "named", "--summary", ESCAPES)
    assert res.returncode == 1 and "invalid summary" in res.stderr
    assert "\x1b" not in res.stderr
    res = kbtool("--db", kb, "export", "1")
    assert res.returncode == 0 and "\x1b" not in res.stdout and "\x07" not in res.stdout


# ----------------------------------------------------------------- 5: JSON output

UNSAFE = "csi\x9b2J nel\x85 ls\u2028 ps\u2029 rlo\u202e lri\u2066 pdi\u2069 del\x7f esc\x1b"


def _no_raw_unsafe(text: str) -> None:
    for ch in "\x9b\x85\u2028\u2029\u202e\u2066\u2069\x7f\x1b":
        assert ch not in text, repr(ch)


def test_print_json_escapes_c1_separators_and_bidi(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    value = {"summary": UNSAFE, "name": "plain ünïcode ✓"}
    common.print_json(value)
    text = out.getvalue()
    _no_raw_unsafe(text)
    assert "\\u009b" in text and "\\u2028" in text and "\\u202e" in text
    assert "ünïcode ✓" in text  # other non-ASCII stays readable
    assert json.loads(text) == value


def test_mcp_answers_escape_c1_separators_and_bidi():
    value = [{"referenced_strings": [UNSAFE]}]
    text = as_json(value)
    _no_raw_unsafe(text)
    assert json.loads(text) == value


def test_cli_json_of_an_old_kb_with_escapes_in_a_summary(tmp_path):
    """A KB written before summaries were checked: its --json output is still safe."""
    kb = tmp_path / "kb.db"
    conn = bare_kb(kb, [SID])
    upsert_symbol(conn, SID, "named", provenance="human", confidence=1.0, actor="t")
    conn.execute("UPDATE symbols SET summary = ?", (UNSAFE,))
    conn.close()
    res = kbtool("--db", kb, "show", SID, "--json")
    assert res.returncode == 0, res.stderr
    _no_raw_unsafe(res.stdout)
    assert json.loads(res.stdout)["summary"] == UNSAFE


# ----------------------------------------------------------------- CLI rough edges


@pytest.mark.parametrize(
    "command", [["ui", "diff", "1", "2"], ["functions", "1"], ["diff", "1", "2", "--json"]]
)
def test_broken_stdout_pipe_ends_quietly_with_status_0(demo_kb, command):
    r, w = os.pipe()
    os.close(r)  # the reader is gone before kbtool writes a byte (like `| head` exiting)
    try:
        res = kbtool("--db", demo_kb, *command, stdout=w)
    finally:
        os.close(w)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""


def test_a_real_error_with_a_broken_pipe_still_fails(demo_kb):
    r, w = os.pipe()
    os.close(r)
    try:
        res = kbtool("--db", demo_kb, "functions", "99", stdout=w)
    finally:
        os.close(w)
    assert res.returncode == 1 and "unknown version id 99" in res.stderr


def test_integers_beyond_64_bits_are_one_line_errors(demo_kb):
    res = kbtool("--db", demo_kb, "functions", str(10**30))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: a number is out of range (at most {2**63 - 1})"
    ]
