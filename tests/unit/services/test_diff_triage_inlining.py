"""Triage rules of issue 29 round 3: code inlined from a callee, a comparison that only moved
and a constant renumbered in many functions do not rank as fixes; a comparison widened to
64 bits does; the bounded alignment of big bodies finds the same inserted check as difflib."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.triage import align, triage_pair
from kbtool.services.diff.view import read_report
from kbtool.wasm.opcodes import MNEMONICS

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")

# a helper's body with comparisons (inlined into $caller in v2)
HELPER = """local.get 0 i32.load offset=4 local.get 0 i32.load offset=8 i32.lt_u
    if local.get 0 i32.load offset=4 i32.const 1 i32.add local.set 1 local.get 0 local.get 1
      i32.store offset=4 end
    local.get 0 i32.load offset=12 i32.const 0 i32.ne
    if local.get 0 i32.load offset=12 i32.const 3 i32.and local.set 1 local.get 0 local.get 1
      i32.store offset=16 end"""
ERRS = "".join(
    f"""
  (func $e{k} (export "e{k}") (param i32) (result i32)
    local.get 0 i32.const {{code}} i32.eq if i32.const {k} return end local.get 0)"""
    for k in range(3)
)
V1 = (
    """(module (memory 1)
  (func $helper (param i32) (local i32) """
    + HELPER
    + """)
  (func $caller (export "caller") (param i32) (result i32) local.get 0 call $helper
    local.get 0 i32.load)
  (func $moved (export "moved") (param i32 i32) (result i32)
    local.get 0 i32.const 100 i32.lt_s if i32.const 1 return end
    local.get 1 i32.const 7 i32.mul local.set 1
    local.get 1)
  (func $wide (export "wide") (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.lt_u)
  (func $bound (export "bound") (param i32) (result i32)
    local.get 0 i32.const 60 i32.gt_u if i32.const -1 return end local.get 0)"""
    + ERRS.replace("{code}", "20")
    + ")"
)
V2 = (
    """(module (memory 1)
  (func $helper (param i32) (local i32) """
    + HELPER
    + """)
  (func $caller (export "caller") (param i32) (result i32) (local i32 i32)
    """
    + HELPER.replace("local.set 1", "local.set 2").replace("local.get 1", "local.get 2")
    + """
    local.get 0 i32.load)
  (func $moved (export "moved") (param i32 i32) (result i32)
    local.get 1 i32.const 7 i32.mul local.set 1
    local.get 0 i32.const 100 i32.lt_s if i32.const 1 return end
    local.get 1)
  (func $wide (export "wide") (param i32 i32) (result i32)
    local.get 0 i64.extend_i32_u local.get 1 i64.extend_i32_u i64.lt_u)
  (func $bound (export "bound") (param i32) (result i32)
    local.get 0 i32.const 64 i32.gt_u if i32.const -1 return end local.get 0)"""
    + ERRS.replace("{code}", "22")
    + ")"
)


@pytest.fixture(scope="module")
def entries(tmp_path_factory) -> dict[str, dict]:
    tmp: Path = tmp_path_factory.mktemp("inl")
    db = tmp / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
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
    conn = open_ro(db)
    report, pairing = read_report(conn, 1, 2)
    cl = changelog(conn, report, pairing=pairing)
    names = {1: "caller", 2: "moved", 3: "wide", 4: "bound", 5: "e0", 6: "e1", 7: "e2"}
    return {names[m["to_index"]]: m for m in cl["modified"]}


def test_inlined_callee_is_not_a_fix(entries):
    m = entries["caller"]
    assert not any(r.startswith("+ bounds check") for r in m["reasons"]), m["reasons"]
    assert any(r.startswith("inlining:") for r in m["reasons"])
    assert m["triage_kind"] != "fix"


def test_moved_comparison_is_not_new(entries):
    m = entries["moved"]
    assert not any(r.startswith("+ bounds check") for r in m["reasons"]), m["reasons"]


def test_widened_comparison_and_a_changed_bound_rank_first(entries):
    assert "arith widened: i32.lt_u -> i64.lt_u" in entries["wide"]["reasons"]
    assert "bound changed: 0x3c -> 0x40" in entries["bound"]["reasons"]
    assert entries["bound"]["triage_kind"] == "fix"


def test_constant_renumbered_in_many_functions(entries):
    for k in ("e0", "e1", "e2"):
        m = entries[k]
        assert "constant renumbered in 3 functions: 0x14 -> 0x16" in m["reasons"], m["reasons"]
        assert not any(r.startswith("bound changed") for r in m["reasons"])
        assert m["triage"] < entries["bound"]["triage"]


def _body(n: int, check_at: int | None) -> list[tuple[int, tuple]]:
    op = {m: i for i, m in enumerate(MNEMONICS) if m}
    arith = [op[m] for m in ("i32.add", "i32.sub", "i32.xor", "i32.mul", "i32.and", "i32.or")]
    out: list[tuple[int, tuple]] = []
    x = 1
    for q in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)  # a varied body, as compiled code is
        out += [
            (op["local.get"], (q % 5,)),
            (op["i32.const"], (q,)),
            (arith[x % len(arith)], ()),
            (arith[(x >> 8) % len(arith)], ()),
            (op["local.set"], (q % 7,)),
        ]
        if q == check_at:
            out += [
                (op["local.get"], (1,)),
                (op["i32.const"], (4096,)),
                (op["i32.gt_u"], ()),
                (op["br_if"], (0,)),
            ]
    return out


def test_bounded_alignment_matches_difflib_on_a_big_body():
    ta, tb = _body(1500, None), _body(1500, 700)
    ka, kb = [(t[0],) for t in ta], [(t[0],) for t in tb]
    fast = align(ka, kb, exact_cells=10_000)
    # the bounded path covers both bodies in order, and inserts exactly the new check
    changed = [o for o in fast if o[0] != "equal"]
    assert len(changed) == 1 and changed[0][0] == "insert" and changed[0][4] - changed[0][3] == 4
    assert sum(o[2] - o[1] for o in fast) == len(ta) and sum(o[4] - o[3] for o in fast) == len(tb)
    ex = {"instr_from": len(ta), "instr_to": len(tb)}
    kw = {"callee_label": str, "callee_strings": lambda i: ()}
    a = triage_pair(ex, ta, tb, exact_cells=10_000, **kw)
    b = triage_pair(ex, ta, tb, exact_cells=10**12, **kw)
    # (the new check's br_if 0 leaves the function: it guards an early return)
    assert a == b and a["reasons"][0].startswith("+ bounds check: l1 >u 0x1000")
