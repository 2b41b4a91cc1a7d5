"""A sparse switch that LLVM split into several ``br_table`` tests on the same value (each in
the previous one's default) lifts as one C ``switch`` with re-based cases: no
``case N: goto L;`` trampolines, bodies inside their cases, fall-through kept; checked
against wasmtime over every case value (fixture: tests/fixtures/lift/switch_merge.wat)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import lift_sem
from tests.support.paths import FIXTURES
from tests.support.switches import TRAMPOLINE, case_values

wasmtime = pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)


def test_split_switch_lifts_as_one_switch(tmp_path):
    data = lift_sem.wat(tmp_path, (FIXTURES / "lift" / "switch_merge.wat").read_text())
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    # `scan` runs classify over base - 8 .. base + 300, `scan2` the ranges over -8 .. 1099
    assert r.agree == 6 * 24
    c = r.c["classify"]
    assert not TRAMPOLINE.search(c), c
    assert "goto" not in c and c.count("switch (") == 1, c
    assert "switch (p0) {" in c, c  # the value itself, not `p0 - 110`
    assert "if (p0 == 34)" not in c, c  # the trailing equality test joined as a case
    cases = case_values(c)
    # the first test to claim a value keeps it (111: first table, not the c - 108 one);
    # a value the first table sends on (118) belongs to a later one
    assert cases["l1 = 100;"] == [15, 34, 108, 117, 118], c
    assert cases["l1 += 7;"] == [-3, 10, 109, 116], c  # fall-through from the case above
    assert cases["l1 = 55;"] == [-5, 13, 110, 114], c  # c + 5: negative case values
    assert cases["l1 = -1;"] == [11, 12, 111, 112, 113, 115], c


def test_range_guard_joins_with_the_default_split(tmp_path):
    """LLVM's binary search: `if (c > 399)` skips the first table for the values later
    tables check; merged, the guard is one test under `default:`, for the side whose
    default lands further on."""
    data = lift_sem.wat(tmp_path, (FIXTURES / "lift" / "switch_merge.wat").read_text())
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    for name, test in (("ranges", "if (p0 > 399) return -1;"), ("ranges2", "if (p0 <= 399)")):
        c = r.c[name]
        assert c.count("switch (") == 1 and "switch (p0) {" in c, c
        assert "goto" not in c and not TRAMPOLINE.search(c), c
        lines = [ln.strip() for ln in c.splitlines()]
        assert lines[lines.index("default:") + 1].startswith(test), c
    assert case_values(r.c["ranges"])["return 1;"] == [100, 102, 400]
    # 402 goes to the default's own block: its label would sit above the guard's test
    assert "switch (p0 - 100) {" in r.c["ranges3"], r.c["ranges3"]


def test_follower_on_another_value_stays_apart(tmp_path):
    """A second table on a different local is not the same switch: both stay, and agree."""
    text = (FIXTURES / "lift" / "switch_merge.wat").read_text()
    other = text.replace(
        "(param $c i32) (result i32)\n    (local $r i32)",
        "(param $c i32) (result i32)\n    (local $r i32) (local $d i32)\n"
        "    local.get $c\n    i32.const 1\n    i32.add\n    local.set $d",
    ).replace(
        "local.get $c\n                i32.const 10\n",
        "local.get $d\n                i32.const 10\n",
    )
    data = lift_sem.wat(tmp_path, other)
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    c = r.c["classify"]
    assert "switch (l2 - 10) {" in c, c
    # the first table keeps its own offset; the later tests on p0 cannot skip l2's
    assert "switch (p0 - 110) {" in c, c
