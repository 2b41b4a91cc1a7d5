"""Triage rules of issue 29 round 4 (general rules, checked on a project not used for tuning):
overflow checks, NULL checks (of a call's result, before a dereference), a branch that skips
or lands on a bail-out block, a switch with a new case, code moved between functions
(inlining changed) not counted as a change, and one new call as the only new code ranked as
a fix; outlining into a new helper is not taken for such a call."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.triage import SYSTEMATIC, finish, triage_pair
from kbtool.services.diff.view import read_report
from kbtool.wasm.opcodes import MNEMONICS

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")

# distinctive straight-line code (fields reset): moved between functions by v2
PREFIX = """local.get 0 i32.const 0 i32.store offset=136
    local.get 0 i64.const 0 i64.store offset=128
    local.get 0 i32.const 8 i32.store16 offset=77
    local.get 0 i32.const 0 i32.store offset=152
    local.get 0 i32.const 0 i32.store offset=20
    local.get 0 i64.const 0 i64.store offset=144
    local.get 0 local.get 0 i32.load offset=88 i32.const 24 i32.and
    local.get 0 i32.load offset=96 i32.or i32.store offset=100"""
OTHER = PREFIX.replace("offset=1", "offset=2")  # other code, outlined into a new helper
SETDEBT = """(func $setdebt (export "setdebt") (param i32 i32)
    local.get 0 local.get 1 i32.store offset=12)
  (func $lookup (export "lookup") (param i32) (result i32) local.get 0 i32.load offset=32)"""
SWITCH = """block block block {extra} local.get 0 br_table 0 1 {cases} end i32.const 10 return end
    i32.const 20 return end {tail} i32.const 30"""
V1 = f"""(module (memory 1)
  {SETDEBT}
  (func $grow (export "grow") (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.add)
  (func $get (export "get") (param i32 i32) (result i32)
    local.get 0 i32.load offset=4)
  (func $switch (export "switch") (param i32) (result i32)
    {SWITCH.format(extra="", cases="2", tail="")})
  (func $gc (export "collect") (param i32) (result i32)
    {PREFIX}
    local.get 0 i32.load offset=20)
  (func $full (export "full") (param i32) local.get 0 call $gc drop)
  (func $find (export "find") (param i32) (result i32)
    local.get 0 call $lookup i32.load offset=4)
  (func $close (export "close") (param i32 i32) (local i32)
    local.get 1 i32.load16_u offset=96 local.set 2 local.get 0 local.get 2 i32.store offset=96)
  (func $parse (export "parse") (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.store offset=8 i32.const 1)
  (func $big (export "big") (param i32) (result i32)
    {OTHER}
    local.get 0 i32.load offset=24))
"""
V2 = f"""(module (memory 1)
  {SETDEBT}
  (func $grow (export "grow") (param i32 i32) (result i32) (local i32)
    local.get 0 local.get 1 i32.add local.tee 2 i32.const 0 i32.lt_s
    if i32.const 0 return end local.get 2)
  (func $get (export "get") (param i32 i32) (result i32)
    block local.get 1 i32.const 64 i32.le_u br_if 0
      local.get 0 i32.const 1 i32.store offset=8 i32.const 0 return end
    local.get 0 i32.load offset=4)
  (func $switch (export "switch") (param i32) (result i32)
    {SWITCH.format(extra="block", cases="2 3", tail="i32.const 99 return end")})
  (func $gc (export "collect") (param i32) (result i32)
    local.get 0 i32.const 0 local.get 0 i32.load offset=12 i32.const 100 i32.div_u
    i32.sub call $setdebt
    local.get 0 i32.load offset=20)
  (func $full (export "full") (param i32)
    {PREFIX}
    local.get 0 call $gc drop)
  (func $find (export "find") (param i32) (result i32) (local i32)
    block local.get 0 call $lookup local.tee 1 i32.eqz br_if 0
      local.get 1 i32.load offset=4 return end
    i32.const 0)
  (func $close (export "close") (param i32 i32) (local i32)
    i32.const 0 local.set 2
    block local.get 1 i32.eqz br_if 0 local.get 1 i32.load16_u offset=96 local.set 2 end
    local.get 0 local.get 2 i32.store offset=96)
  (func $parse (export "parse") (param i32 i32) (result i32)
    block
      block local.get 1 i32.const 0 i32.lt_s br_if 0 br 1 end
      local.get 0 i32.const 41 i32.store offset=284 i32.const 0 return
    end
    local.get 0 local.get 1 i32.store offset=8 i32.const 1)
  (func $outlined (param i32) {OTHER})
  (func $big (export "big") (param i32) (result i32)
    local.get 0 call $outlined
    local.get 0 i32.load offset=24))
"""


def _changelog(tmp: Path) -> dict[str, dict]:
    db = tmp / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
        (tmp / f"{name}.wat").write_text(text)
        subprocess.run(
            ["wat2wasm", str(tmp / f"{name}.wat"), "-o", str(tmp / f"{name}.wasm")], check=True
        )
        r = subprocess.run(
            [sys.executable, "-m", "kbtool.cli", "--db", str(db), "ingest"]
            + [str(tmp / f"{name}.wasm"), "-l", name],
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        assert r.returncode == 0, r.stderr
    conn = open_ro(db)
    report, pairing = read_report(conn, 1, 2)
    cl = changelog(conn, report, pairing=pairing)
    conn.close()
    return {m["name"]: m for m in cl["modified"]}


@pytest.fixture(scope="module")
def entries(tmp_path_factory) -> dict[str, dict]:
    return _changelog(tmp_path_factory.mktemp("moves"))


def test_sign_test_of_a_sum_is_an_overflow_check(entries):
    grow = entries["grow"]
    assert grow["triage_kind"] == "fix"
    assert grow["reasons"][0].startswith("+ overflow check: "), grow["reasons"]


def test_branch_over_a_bail_out_block_guards_an_error_path(entries):
    get = entries["get"]
    assert any(
        r.startswith("+ bounds check: l1 <=u 0x40") and "guards an error/return path" in r
        for r in get["reasons"]
    ), get["reasons"]


def test_switch_with_a_new_target_is_a_new_case(entries):
    sw = entries["switch"]
    assert any(r.startswith("+ switch case: br_table 3 -> 4 targets") for r in sw["reasons"]), sw[
        "reasons"
    ]


def test_code_moved_out_and_one_new_call_is_a_focused_fix(entries):
    gc = entries["collect"]
    assert gc["triage_kind"] == "fix"
    assert gc["reasons"][0] == "+ new call: setdebt (the only code added)", gc["reasons"]
    assert any(r.startswith("moved: ") for r in gc["reasons"]), gc["reasons"]
    order = list(entries)  # the changelog's default (triage) order
    assert order.index("collect") < order.index("big")


def test_outlining_into_a_new_helper_is_not_a_new_call_fix(entries):
    big = entries["big"]
    assert not any(r.startswith("+ new call") for r in big["reasons"]), big["reasons"]
    assert not any(r.startswith("moved: ") for r in big["reasons"]), big["reasons"]


def test_null_checks_of_a_call_result_and_before_a_dereference(entries):
    find, close = entries["find"], entries["close"]
    assert find["reasons"][0] == "+ NULL check of a call's result: call lookup", find["reasons"]
    assert close["reasons"][0] == "+ NULL check: l1 == 0 (guards a dereference)", close["reasons"]


def test_branch_to_a_bail_out_block_guards_an_error_path(entries):
    parse = entries["parse"]
    assert parse["reasons"][0] == "+ bounds check: l1 < 0 (guards an error/return path)", parse[
        "reasons"
    ]


def _tokens(text: str) -> list[tuple[int, tuple]]:
    """``"local.get 0; i32.const 5; i32.add"`` as decoded tokens."""
    op = {m: i for i, m in enumerate(MNEMONICS) if m}
    out = []
    for ins in text.split(";"):
        m, *imm = ins.split()
        out.append((op[m], tuple(int(x) for x in imm)))
    return out


def _first_reason(old: str, new: str) -> str:
    ex = {"instr_from": len(old.split(";")), "instr_to": len(new.split(";"))}
    t = triage_pair(ex, _tokens(old), _tokens(new), str, lambda i: ())
    return t["reasons"][0]


BASE = "local.get 0; local.get 1; i32.add; local.set 2"


def test_unsigned_bound_near_int_max_is_an_overflow_check():
    new = f"{BASE}; local.get 2; i32.const 2147483638; i32.gt_u; br_if 0"
    assert _first_reason(BASE, new) == "+ overflow check: l2 >u 0x7ffffff6"


def test_a_difference_tested_for_sign_is_a_length_test_not_an_overflow_check():
    new = f"{BASE}; local.get 1; local.get 0; i32.sub; i32.const 0; i32.lt_s; br_if 0"
    assert _first_reason(BASE, new).startswith("+ bounds check: (… sub) < 0")


def test_the_same_new_check_in_many_functions_is_one_change_copied():
    new = f"{BASE}; local.get 2; i32.const 2; i32.ge_u; br_if 0"
    ex = {"instr_from": 4, "instr_to": 8}

    def entry() -> dict:
        return triage_pair(ex, _tokens(BASE), _tokens(new), str, lambda i: (), private=True)

    alone = entry()
    finish([alone])
    copies = [entry() for _ in range(SYSTEMATIC)]
    finish(copies)
    assert alone["reasons"][0] == "+ bounds check: l2 >=u 2 (guards an error/return path)"
    assert copies[0]["reasons"][0] == (
        f"+ bounds check: l2 >=u 2 (guards an error/return path) (new in {SYSTEMATIC} functions)"
    )
    assert copies[0]["triage"] < alone["triage"]
    assert copies[0]["triage_kind"] == "fix"  # still listed as a fix, after distinct ones
