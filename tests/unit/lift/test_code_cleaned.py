"""``kbtool code V I --cleaned`` (issue #23.11): one function's cleaned C, through a real
``kbtool`` subprocess on the demo KB: the lifter's C through the cleaner when ``kbtool deep``
has no record, the deep record's once it has; bad combinations are one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.lift.clean import clean_c
from kbtool.services import code as code_service
from kbtool.services.deep import run_deep

CLI = [sys.executable, "-m", "kbtool.cli"]
INDEX = 100  # demo version 2: (i32 x6) -> i32, a loop, memory through p4


def kbtool(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=db.parent,
        env=dict(os.environ, COLUMNS="200"),
    )


def test_cleaned_from_the_cleaner_then_from_deep(demo_kb: Path):
    conn = open_ro(demo_kb)
    try:
        lifted = code_service.disassembly(conn, 2, INDEX)["lifted_c"]
    finally:
        conn.close()
    r = kbtool(demo_kb, "code", "2", str(INDEX), "--cleaned", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["source"] == "cleaner" and d["func_index"] == INDEX and d["version_id"] == 2
    assert d["rename_map"] and all(old[0] in "pl" for old in d["rename_map"])
    assert d["clean_c"] != lifted and "p0" not in d["clean_c"]
    assert d["clean_c"] == clean_c(lifted).text  # stripped: the stack pointer is g0

    text = kbtool(demo_kb, "code", f"2:{INDEX}", "--cleaned", "--no-pager")
    assert text.returncode == 0, text.stderr
    assert "cleaned C" in text.stdout and "through the cleaner" in text.stdout
    assert "raw wasm" not in text.stdout and "local.get" not in text.stdout
    assert "renamed: p0 -> " in text.stdout

    conn = open_rw(demo_kb)
    try:
        run_deep(conn, 2, functions=[INDEX], force=True, name=False)
        rec = queries.get_analysis(conn, d["stable_id"])
    finally:
        conn.close()
    assert rec is not None and rec["clean_c"]
    deep = json.loads(
        kbtool(demo_kb, "code", d["stable_id"], "--cleaned", "--json", "--version", "2").stdout
    )
    assert deep["source"] == "deep" and deep["clean_c"] == rec["clean_c"]
    shown = kbtool(demo_kb, "code", "2", str(INDEX), "--cleaned", "--no-pager").stdout
    assert "from kbtool deep (version 2)" in shown


def test_cleaned_refuses_other_views_in_one_line(demo_kb_master: Path):
    for extra in (["--c"], ["--wasm"]):
        r = kbtool(demo_kb_master, "code", "2", str(INDEX), "--cleaned", *extra)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "--cleaned" in r.stderr and "Traceback" not in r.stderr
    r = kbtool(demo_kb_master, "code", "2", "999999", "--cleaned")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
