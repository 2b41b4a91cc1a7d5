"""Triage rules added in round 2 of issue 29 (a call's result now kept, a value reloaded
after a call; reasons weighed with diminishing returns) and the per-function diff that
aligns labels (branch depths), nesting and callees (issue 29.2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.code import callee_pairing, diff_lines, disassembly, function_diff_at
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.view import read_report

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")

# $grow may move the buffer. v1: $use keeps the old pointer after the call (the bug) and
# $load reads a field once; v2: $use keeps grow's result, $load reads the field again after
# the call. $pad (an unrelated import-free function first in v2) shifts every index.
V1 = """(module (memory 1)
  (func $grow (param i32) (result i32) local.get 0 i32.const 16 i32.add)
  (func $use (export "use") (param i32) (result i32)
    local.get 0 call $grow drop
    local.get 0 i32.load offset=4)
  (func $load (export "load") (param i32) (result i32) (local i32)
    local.get 0 i32.load offset=8 local.set 1
    local.get 0 call $grow drop
    local.get 1))
"""
V2 = """(module (memory 1)
  (func $pad (export "pad") (param i32) (result i32) local.get 0 i32.const 99 i32.mul)
  (func $grow (param i32) (result i32) local.get 0 i32.const 16 i32.add)
  (func $use (export "use") (param i32) (result i32) (local i32)
    local.get 0 call $grow local.set 1
    local.get 1 i32.load offset=4)
  (func $load (export "load") (param i32) (result i32) (local i32)
    local.get 0 i32.load offset=8 local.set 1
    local.get 0 call $grow drop
    local.get 0 i32.load offset=8))
"""


def _kb(tmp: Path, v1: str, v2: str) -> Path:
    db = tmp / "kb.db"
    for name, text in (("v1", v1), ("v2", v2)):
        (tmp / f"{name}.wat").write_text(text)
        subprocess.run(
            ["wat2wasm", str(tmp / f"{name}.wat"), "-o", str(tmp / f"{name}.wasm")], check=True
        )
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "--db",
                str(db),
                "ingest",
                str(tmp / f"{name}.wasm"),
                "-l",
                name,
            ],
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        assert r.returncode == 0, r.stderr
    return db


def test_call_result_kept_and_value_reloaded_are_reasons(tmp_path):
    conn = open_ro(_kb(tmp_path, V1, V2))
    report, pairing = read_report(conn, 1, 2)
    cl = changelog(conn, report, pairing=pairing)
    by_name = {m["name"]: m for m in cl["modified"]}
    use, load = by_name["use"], by_name["load"]
    assert any(
        r.startswith("+ call result kept: call ") and "refreshed after the call" in r
        for r in use["reasons"]
    ), use["reasons"]
    assert use["triage_kind"] == "fix"
    assert any(r.startswith("+ value reloaded after call") for r in load["reasons"]), load[
        "reasons"
    ]
    assert load["triage_kind"] == "fix"


def test_function_diff_aligns_callees_through_the_pairing(tmp_path):
    conn = open_ro(_kb(tmp_path, V1, V2))
    report, _ = read_report(conn, 1, 2)
    ch = next(c for c in report["changes"] if c["name"] == "load")
    assert ch["from_index"] != ch["to_index"]  # $pad shifted every index
    a = disassembly(conn, 1, ch["from_index"])["mnemonics"]
    b = disassembly(conn, 2, ch["to_index"])["mnemonics"]
    plain = diff_lines(a, b)["summary"]
    paired = diff_lines(a, b, same_callee=callee_pairing(conn, 1, 2))["summary"]
    assert plain["changed"] == paired["changed"] + 1  # `call func[0]` vs `call func[1]`
    assert paired["callees"] == 1
    fd = function_diff_at(conn, 1, ch["from_index"], 2, ch["to_index"])
    assert fd["summary"]["callees"] == 1
    assert not [r for r in fd["rows"] if r["op"] == "changed" and "call" in (r["a"] or "")]


A = """func[3] (i32) -> i32
 0001a: block
 0001a:   local.get 0
 0001a:   br_if 0
 0001a:   local.get 0
 0001a:   i32.const 1
 0001a:   i32.add
 0001a:   return
 0001a: end
 0001a: i32.const 0
"""
# the same code wrapped in one more block (a new check before it): the branch now says
# `br_if 1` for the same target, the wrapped lines are nested one level deeper
B = """func[3] (i32) -> i32
 0001a: block
 0001a:   local.get 0
 0001a:   i32.const 7
 0001a:   i32.gt_u
 0001a:   br_if 0
 0001a:   block
 0001a:     local.get 0
 0001a:     br_if 1
 0001a:     local.get 0
 0001a:     i32.const 1
 0001a:     i32.add
 0001a:     return
 0001a:   end
 0001a: end
 0001a: i32.const 0
"""


def _changes(s: dict) -> int:
    return s["changed"] + s["deleted"] + s["inserted"]


def test_labels_and_nesting_are_aligned():
    before = diff_lines(A, B, align=False)["summary"]
    after = diff_lines(A, B)["summary"]
    # only the new check (4 lines) and the new block's opener and end remain: `br_if 0` ->
    # `br_if 1` lands at the same line (`i32.const 0`), so it is no change
    assert _changes(after) == 6 and after["labels"] == 1, after
    assert _changes(before) > _changes(after)
    # the same `br_if 1` when the outer construct is a loop lands at the loop's start
    # (a retry instead of an exit): a change
    b2 = B.replace(" 0001a: block\n", " 0001a: loop\n", 1)
    s2 = diff_lines(A, b2)["summary"]
    assert s2["labels"] == 0 and s2["changed"] == 1
