"""A switch that LLVM split into an outer ``br_table`` whose default runs an inner one on
the same value (its cases landing on the outer one's case blocks) lifts as ONE C ``switch``
on the value with every case label, as Hex-Rays or Ghidra print it, instead of
``switch (x - 1000) { default: switch (x - 2000) { case 1: goto L8; ... } }``; every case
value agrees with wasmtime (fixtures: tests/fixtures/lift/nested_switch.c, built by clang
-O2, and nested_switch.wat, the shape of sql.js 1.12.0's func 164)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import lift_sem
from tests.support.paths import FIXTURES
from tests.support.switches import TRAMPOLINE, case_values

wasmtime = pytest.importorskip("wasmtime")


@pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)
def test_clang_split_switch_lifts_as_one_switch(tmp_path):
    r = lift_sem.check(tmp_path, (FIXTURES / "lift" / "nested_switch.c").read_text(), "-O2")
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    assert r.agree >= 3 * 24  # ns_step, ns_classify, ns_scan (every case value per call)
    c = r.c["ns_classify"]
    assert c.count("switch (") == 1 and "switch (p0) {" in c, c
    assert not TRAMPOLINE.search(c), c
    cases = case_values(c, skip_labels=True)
    # the second table's values sit beside the first one's on the shared bodies
    assert any({1001, 1002, 2001} <= set(v) for v in cases.values()), c
    assert any(v == [2003] for v in cases.values()), c


@pytest.mark.skipif(not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="wat2wasm")
def test_inner_table_in_the_outer_default_joins_it(tmp_path):
    """The outer table (174..177) opens into the inner table's case blocks (167..169) and
    the equality tests after it (36, 77, `!= 113`): all one switch, the inner cases on the
    outer bodies, the body after `!= 113` under `case 113:` and the default on the body
    the `!=` test went to."""
    data = lift_sem.wat(tmp_path, (FIXTURES / "lift" / "nested_switch.wat").read_text())
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    assert r.agree == 3 * 24  # `scan` runs `nested` and `plain` over 0 .. 299 in each call
    c = r.c["nested"]
    assert c.count("switch (") == 1 and "switch (p0) {" in c, c
    assert not TRAMPOLINE.search(c), c
    assert "p0 - 1" not in c and "if (p0 ==" not in c and "p0 != 113" not in c, c
    cases = case_values(c, skip_labels=True)
    assert cases["l2 = p1 * 3;"] == [113], c
    assert cases["l2 = p1 + 100;"] == [77, 167], c
    assert cases["l2 = (p1 + 12) ^ 1000;"] == [36, 174], c
    assert cases["l2 = p1 << 20;"] == [177], c
    assert [v for k, v in cases.items() if k.startswith("if ((p1 & 1) == 0) goto L")] == [[169]]
    lines = [ln.strip() for ln in c.splitlines()]
    assert lines[lines.index("default:") + 2] == "l2 = -1 - p1;", c


@pytest.mark.skipif(not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="wat2wasm")
def test_inner_table_with_no_tests_after_it_joins_too(tmp_path):
    data = lift_sem.wat(tmp_path, (FIXTURES / "lift" / "nested_switch.wat").read_text())
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    c = r.c["plain"]
    assert c.count("switch (") == 1 and "switch (p0) {" in c, c
    assert "goto" not in c, c
    cases = case_values(c, skip_labels=True)
    assert cases["return p1 + 100;"] == [167], c
    assert cases["return p1 << 20;"] == [169, 175], c
    assert cases["return p1 ^ -1;"] == [168, 174, 176], c
