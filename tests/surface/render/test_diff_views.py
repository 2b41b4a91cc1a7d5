"""Terminal diff views: diff_table, render_diff, the changelog, and `kbtool ui diff` (read-only)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.render.terminal import diff_lines, parse_only
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.report import get_diff
from kbtool.terminal import changelog_renderable, coverage_panel, diff_table, render_diff
from tests.support.paths import ROOT


def record(width: int = 80) -> Console:
    return Console(
        record=True, width=width, force_terminal=False, color_system=None, highlight=False
    )


def kb_state(path: Path) -> dict[str, str]:
    """Hash of the KB file and of any WAL/journal content (SQLite may create an *empty* WAL
    and the shared-memory index when a reader opens a WAL database; neither holds data)."""
    out = {}
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists() and (suffix == "" or p.stat().st_size):
            out[suffix] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def kbtool(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, COLUMNS="80", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=e,
        timeout=120,
    )


def test_diff_table_one_row_per_change(demo_kb_master):
    t = diff_table(demo_kb_master, 1, 2)
    assert isinstance(t, Table)
    report = get_diff(open_ro(demo_kb_master), 1, 2)
    assert t.row_count == len(report["changes"])
    headers = [c.header for c in t.columns]
    assert (
        headers[:6] == ["change", "from", "to", "name", "provenance", "conf"] and "flags" in headers
    )
    # an open connection works too, and filters keep only what was asked
    conn = open_ro(demo_kb_master)
    t = diff_table(conn, 1, 2, only="new")
    assert t.row_count == report["summary"]["added"]


def test_render_diff_table_then_changelog(demo_kb_master):
    con = record(80)
    render_diff(demo_kb_master, 1, 2, console=con)
    text = con.export_text()
    assert text.index("zstd-1.5.5 → zstd-1.5.6") < text.index("change") < text.index("changelog")
    assert "(stored)" in text  # the report ingest stored for the pair
    assert all(len(line) <= 80 for line in text.splitlines())
    for word in ("unchanged", "moved", "modified", "new (", "deleted ("):
        assert word in text
    # a named function whose calls changed shows how
    assert "+ calls" in text or "- calls" in text
    wide = record(140)
    render_diff(demo_kb_master, 1, 2, console=wide)
    header = next(line for line in wide.export_text().splitlines() if line.startswith("change"))
    assert "score" in header and "score" not in next(
        line for line in text.splitlines() if line.startswith("change")
    )


def test_changelog_data(demo_kb_master):
    conn = open_ro(demo_kb_master)
    report = get_diff(conn, 1, 2)
    cl = changelog(conn, report)
    named_modified = [
        c for c in report["changes"] if c["classification"] == "modified" and c["name"]
    ]
    # every modified function is listed, named or not, most changed first
    assert len(cl["modified"]) == report["summary"]["modified"]
    assert cl["modified_unnamed"] == report["summary"]["modified"] - len(named_modified)
    assert all(m["items"] for m in cl["modified"])
    assert all(m["hint"] for m in cl["modified"] if not m["name"])
    # order="weight": most changed first (the default is triage, see test_diff_triage.py)
    weights = [m["weight"] for m in changelog(conn, report, order="weight")["modified"]]
    assert weights == sorted(weights, reverse=True)
    assert (
        len(cl["new"]) == report["summary"]["added"]
        and len(cl["deleted"]) == report["summary"]["removed"]
    )
    for m in cl["modified"]:
        assert {
            "calls_added",
            "calls_removed",
            "strings_added",
            "strings_removed",
            "instr_from",
            "instr_to",
            "size_from",
            "size_to",
        } <= set(m)
    assert any(m["calls_added"] or m["calls_removed"] for m in cl["modified"])
    # the TUI's hook: a renderable from a report plus the KB
    assert changelog_renderable(report, conn) is not None
    assert changelog_renderable(report) is None


def test_swapped_diff_lists_deleted_functions(demo_kb_master):
    con = record(100)
    render_diff(demo_kb_master, 2, 1, console=con, only="deleted")
    text = con.export_text()
    report = get_diff(open_ro(demo_kb_master), 2, 1)
    assert (
        report["summary"]["removed"] == get_diff(open_ro(demo_kb_master), 1, 2)["summary"]["added"]
    )
    assert f"deleted ({report['summary']['removed']})" in text
    assert "modified (" not in text


def test_parse_only():
    assert parse_only(None) is None and parse_only("all") is None
    assert parse_only("modified,new") == {"modified", "new"}
    assert parse_only("changed") == {"modified", "new", "deleted"}
    assert parse_only(["added", "removed"]) == {"new", "deleted"}
    with pytest.raises(ValueError, match="unknown --only value"):
        parse_only("modifed")


def test_untrusted_names_are_shown_literally(demo_kb):
    conn = open_rw(demo_kb)
    report = get_diff(conn, 1, 2)
    target = next(c for c in report["changes"] if c["classification"] == "new" and not c["name"])
    evil = "[bold red]pwn[/bold red][link=http://x]y"
    assert upsert_symbol(
        conn, target["to_stable_id"], evil, provenance="export", confidence=0.9, actor="test"
    )["written"]
    conn.close()
    con = Console(record=True, width=200, color_system="truecolor", force_terminal=True)
    render_diff(demo_kb, 1, 2, console=con)
    text = con.export_text()
    # the table row and the changelog entries show it verbatim: markup never parsed
    assert text.count(evil) >= 2 and text.count("pwn") == text.count(evil)


def test_coverage_panel_beside_it(demo_kb_master):
    t = coverage_panel(demo_kb_master, 2)
    assert isinstance(t, Table) and t.row_count == 1


def test_ui_diff_is_read_only_byte_identical(demo_kb):
    before = kb_state(demo_kb)
    assert "" in before
    with open_ro(demo_kb) as conn:
        events = conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]
        stored = conn.execute("SELECT COUNT(*) FROM diffs").fetchone()[0]
    r = kbtool("ui", "diff", "1", "2", "--db", str(demo_kb))
    assert r.returncode == 0, r.stderr
    assert "modified" in r.stdout and "by triage" in r.stdout  # the short view (issue 29)
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    r = kbtool("ui", "diff", "1", "2", "--only", "modified,new", "--db", str(demo_kb))
    rows = [
        line.split()[0]
        for line in r.stdout.splitlines()[4:]
        if line.strip() and line.split()[0] in ("unchanged", "moved", "modified", "new", "deleted")
    ]
    assert set(rows) <= {"modified", "new"} and "modified" in rows
    assert kb_state(demo_kb) == before
    conn = open_ro(demo_kb)
    assert conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0] == events
    assert conn.execute("SELECT COUNT(*) FROM diffs").fetchone()[0] == stored


def test_ui_diff_pager_and_errors(demo_kb):
    r = kbtool(
        "ui",
        "diff",
        "1",
        "2",
        "--pager",
        "--only",
        "new",
        "--db",
        str(demo_kb),
        env={"PAGER": "cat", "MANPAGER": "cat"},
    )
    assert r.returncode == 0 and "changelog" in r.stdout
    r = kbtool("ui", "diff", "1", "42", "--db", str(demo_kb))
    assert (
        r.returncode == 1
        and "unknown version id 42" in r.stderr
        and "known version ids: 1, 2" in r.stderr
    )
    r = kbtool("ui", "diff", "1", "2", "--only", "bogus", "--db", str(demo_kb))
    assert r.returncode == 1 and "unknown --only value bogus" in r.stderr
    r = kbtool("ui", "diff", "1", "2", "--db", str(demo_kb.parent / "nope.db"))
    assert r.returncode == 1 and "no KB at" in r.stderr


def test_diff_lines_fit_any_width():
    long = "_ZN12lightningcss10properties4font" + "x" * 300
    report = {
        "changes": [
            {
                "classification": "modified",
                "from_index": 123456,
                "to_index": 123457,
                "name": long,
                "provenance": "diff-carry",
                "confidence": 0.5,
                "score": 0.61,
                "review": True,
                "runtime": True,
            },
            {
                "classification": "new",
                "from_index": None,
                "to_index": 9,
                "name": "名前_関数_テスト" * 8,
                "provenance": "agent",
                "confidence": 0.3,
                "score": None,
                "review": False,
                "runtime": False,
            },
            {
                "classification": "deleted",
                "from_index": 1,
                "to_index": None,
                "name": None,
                "provenance": None,
                "confidence": None,
                "score": None,
                "review": False,
                "runtime": False,
            },
        ]
    }
    for width in (80, 100, 160):
        text = diff_lines(report, width=width, toolchain_changed=True, show_score=width >= 100)
        lines = text.plain.splitlines()
        assert len(lines) == 5 and all(cell_len(line) <= width for line in lines)
        assert "…" in lines[2] and "churn review" in lines[2]
