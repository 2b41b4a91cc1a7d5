"""Loops as people write them: while (cond), for (i = a; c; i++), do { } while (c) and
break/continue instead of gotos, each checked for shape and for semantics (the lifted C
built with gcc and run against wasmtime)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kbtool.lift import lift_function, prepare
from tests.support import lift_sem
from tests.support.paths import FIXTURES
from tests.support.wat import LOOPS_WAT

pytest.importorskip("wasmtime")
FIX = FIXTURES / "lift"
needs_clang = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)
needs_wat = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)


@needs_wat
def test_loop_shapes_from_wat(tmp_path):
    data = lift_sem.wat(tmp_path, LOOPS_WAT)
    r = lift_sem.check_wasm(tmp_path, data)
    assert not r.mismatches, r.mismatches[:5]
    assert r.agree == 4 * 24
    count, halve, digits, scan = r.c["count"], r.c["halve"], r.c["digits"], r.c["scan"]
    assert "for (l1 = 0; l1 < p0; l1++) {" in count, count
    assert "while (1)" not in count and "continue" not in count
    assert "while ((uint32_t)p0 >= 2) {" in halve, halve
    assert "} while (p0);" in digits and "while (1)" not in digits, digits
    assert "for (; l1 < 64; l1++) {" in scan and "goto" not in scan, scan
    assert "uint32_t l1 = 0;" in scan, scan  # every use of l1 is unsigned
    assert "& 31 & 31" not in scan
    for text in r.c.values():
        assert "goto" not in text


@needs_clang
@pytest.mark.parametrize("opt", ["-O2", "-O1", "-Os"])
def test_loops_fixture_agrees_with_wasmtime(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIX / "loops.c").read_text(), opt)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    assert r.agree == 15 * 24  # every exported function of the fixture, 24 calls each


@needs_clang
def test_loops_fixture_reads_like_c(tmp_path):
    r = lift_sem.check(tmp_path, (FIX / "loops.c").read_text(), "-O2")
    assert "while ((p0 & 3) != 3) {" in r.c["early_exit_loop"], r.c["early_exit_loop"]
    text = "".join(r.c.values())
    assert "while (1)" not in text
    assert "- -" not in text
    for name in ("two_exits", "find_first", "skip_continue", "nested", "early_exit_loop"):
        assert "goto" not in r.c[name], r.c[name]


def test_break_keeps_dead_code_tracking():
    """A loop left only by `break` still lets the code after it be lifted."""
    import subprocess
    import tempfile

    if not shutil.which("wat2wasm"):
        pytest.skip("needs wat2wasm")
    with tempfile.TemporaryDirectory() as tmp:
        data = lift_sem.wat(Path(tmp), LOOPS_WAT)
        subprocess.run(["true"], check=True)
    lm = prepare(data)
    for fi in range(lm.module.num_functions):
        r = lift_function(lm, fi)
        assert not r.truncated
        assert r.text.rstrip().endswith("}")
        assert "return" in r.text
