"""`kbtool functions` streams an aligned plain table; `--help` summaries are whole sentences;
benchmarks/functions_table.py --smoke runs (figures printed, no timing asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from kbtool.cli import main, short_help
from kbtool.commands.core import function_lines
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.paths import ROOT
from tests.support.tui_kb import ESC_RAW, MARKUP_NAME


def test_functions_table_has_one_line_per_row(demo_kb_master, capsys):
    assert main(["--db", str(demo_kb_master), "functions", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    conn = open_ro(str(demo_kb_master))
    rows = queries.list_functions(conn, 2)
    conn.close()
    assert lines[0] == f"functions of version 2: {len(rows):,}"
    assert lines[1].split() == ["index", "stable_id", "type", "provenance", "conf", "name"]
    assert len(lines) == len(rows) + 2
    for line, r in zip(lines[2:], rows, strict=True):
        cells = line.split()
        assert int(cells[0]) == r["index"] and cells[1] == r["stable_id"]
        assert line.endswith(r["name"] or "—")


def test_hostile_names_are_shown_escaped(tui_kb_master, capsys):
    assert main(["--db", str(tui_kb_master), "functions", "1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert MARKUP_NAME in out  # markup shown literally, never interpreted
    assert ESC_RAW not in out and "red" in out


def test_terminal_width_clips_names_only():
    rows = [
        {
            "index": 7,
            "stable_id": "a" * 16,
            "type": "(i32) -> i32",
            "name": "n" * 300,
            "provenance": "human",
            "confidence": 1.0,
        },
        {
            "index": 12345,
            "stable_id": "b" * 16,
            "type": "(" + "i64, " * 40 + ") -> ()",
            "name": None,
            "provenance": None,
            "confidence": None,
        },
    ]
    wide = list(function_lines(rows))
    assert wide[1].endswith("n" * 300)  # a pipe gets whole names
    narrow = list(function_lines(rows, width=100))
    assert all(len(line) <= 100 for line in narrow[1:])
    assert narrow[1].endswith("…") and "…" in narrow[2]  # the long type is clipped too
    assert narrow[1].index("a" * 16) == narrow[2].index("b" * 16)  # columns aligned


def test_help_summaries_are_not_cut(capsys):
    env_cols = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "200"
    try:
        assert main(["--help"]) == 0
    finally:
        if env_cols is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = env_cols
    out = capsys.readouterr().out
    commands = [line for line in out.splitlines() if re.match(r"\s{2}[a-z-]+\s{2,}\S", line)]
    assert len(commands) > 10
    assert not [line for line in commands if line.rstrip().endswith("...")]
    assert short_help("Do a thing. More words.\n\nDetails.") == "Do a thing."
    assert short_help("One long\n    line wrapped") == "One long line wrapped"


def test_functions_benchmark_smoke():
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "functions_table.py"), "--smoke"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "functions 500" in res.stdout
    assert re.search(r"kbtool functions \(streamed\)\s+[\d.]+ s\s+502 lines", res.stdout)
    assert re.search(r"Rich Table, before .*1,005 lines", res.stdout)
