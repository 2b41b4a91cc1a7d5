"""Triage order (issue 29.3/29.4): patch-like changes first, each with its reasons; the
short `kbtool ui diff`; the order on MCP/web/changelog."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.diff.changelog import changelog, reorder
from kbtool.services.diff.report import get_diff
from kbtool.services.diff.triage import order_changes

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")

# v1: f divides, g multiplies 32-bit, h and k are refactored (k grows a lot, no checks)
V1 = """(module (memory 1) (export "f" (func $f)) (export "g" (func $g)) (export "k" (func $k))
  (func $f (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_u)
  (func $g (param i32 i32) (result i32) local.get 0 local.get 1 i32.mul)
  (func $k (param i32) (result i32) local.get 0 i32.const 3 i32.add))
"""
# v2: f gets a bounds check with an early return, g is widened, k grows (no checks)
V2 = """(module (memory 1) (export "f" (func $f)) (export "g" (func $g)) (export "k" (func $k))
  (func $f (param i32 i32) (result i32)
    local.get 1 local.get 0 i32.gt_u if i32.const -1 return end
    local.get 0 local.get 1 i32.div_u)
  (func $g (param i32 i32) (result i32)
    local.get 0 i64.extend_i32_u local.get 1 i64.extend_i32_u i64.mul i32.wrap_i64)
  (func $k (param i32) (result i32)
    local.get 0 i32.const 3 i32.add i32.const 5 i32.add i32.const 7 i32.xor i32.const 9 i32.add))
"""


def kbtool(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
    )


@pytest.fixture(scope="module")
def pair_kb(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("triage")
    db = tmp / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
        (tmp / f"{name}.wat").write_text(text)
        subprocess.run(
            ["wat2wasm", str(tmp / f"{name}.wat"), "-o", str(tmp / f"{name}.wasm")], check=True
        )
        base = ("--base", "1") if name == "v2" else ()
        r = kbtool("ingest", str(tmp / f"{name}.wasm"), "-l", name, *base, db=db)
        assert r.returncode == 0, r.stderr
    return db


def test_changelog_ranks_fix_like_changes_first_with_reasons(pair_kb):
    conn = open_ro(pair_kb)
    report = get_diff(conn, 1, 2)
    cl = changelog(conn, report)
    assert cl["order"] == "triage"
    names = {0: "f", 1: "g", 2: "k"}
    by_name = {names[m["to_index"]]: m for m in cl["modified"]}
    assert {"f", "k"} <= set(by_name)
    assert any(r.startswith("+ bounds check: l1 >u l0") for r in by_name["f"]["reasons"])
    assert "+ early return" in by_name["f"]["reasons"]
    if "g" in by_name:  # the matcher may call the rewritten g new
        assert any(r.startswith("arith widened") for r in by_name["g"]["reasons"])
    assert by_name["k"]["triage_kind"] != "fix"
    order = [names[m["to_index"]] for m in cl["modified"]]
    assert order[-1] == "k"  # the change with no fix-like reason ranks last
    # index order on request, the same entries
    assert [m["to_index"] for m in reorder(cl, "index")["modified"]] == sorted(
        m["to_index"] for m in cl["modified"]
    )
    # the report entries carry the same triage (MCP get_diff / web / TUI sort by it)
    ranked = [
        names[c["to_index"]]
        for c in order_changes(report["changes"])
        if c["classification"] == "modified"
    ]
    assert ranked[-1] == "k"
    assert all("reasons" in c for c in report["changes"] if c["classification"] == "modified")


def test_ui_diff_short_view_and_all(pair_kb):
    r = kbtool("ui", "diff", "1", "2", db=pair_kb)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "by triage" in out and "+ bounds check: l1 >u l0" in out
    assert out.index("  1. ") < out.index("+ bounds check")
    assert "--all" in out  # says where the full listing is
    full = kbtool("ui", "diff", "1", "2", "--all", db=pair_kb)
    assert full.returncode == 0 and "changelog" in full.stdout and "provenance" in full.stdout
    bad = kbtool("ui", "diff", "1", "2", "--order", "size", db=pair_kb)
    assert bad.returncode != 0 and "unknown --order" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_web_changelog_order(pair_kb):
    import orjson

    from kbtool.web.router import route

    status, _, raw = route(str(pair_kb), "/api/changelog", {"from": ["1"], "to": ["2"]})
    assert status == 200
    body = orjson.loads(raw)
    assert body["order"] == "triage" and body["modified"][-1]["to_index"] == 2
    assert body["modified"][0]["reasons"]
    status, _, raw = route(
        str(pair_kb), "/api/changelog", {"from": ["1"], "to": ["2"], "order": ["index"]}
    )
    assert [m["to_index"] for m in orjson.loads(raw)["modified"]] == sorted(
        m["to_index"] for m in body["modified"]
    )
    status, _, raw = route(
        str(pair_kb), "/api/changelog", {"from": ["1"], "to": ["2"], "order": ["nope"]}
    )
    assert status == 400
