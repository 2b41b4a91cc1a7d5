"""Switches without trampolines: a br_table's case bodies sit inside their case, the last
case's code (after the chain of blocks) inside the switch as ``default:``, fall-through
kept, and the lifted C agrees with wasmtime."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.support import lift_sem
from tests.support.paths import FIXTURES

pytest.importorskip("wasmtime")
FIX = FIXTURES / "lift"
pytestmark = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)


@pytest.mark.parametrize("opt", ["-O2", "-O1"])
def test_switch_cases_inline_and_agree(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIX / "loops.c").read_text(), opt)
    assert not r.mismatches, r.mismatches[:5]
    classify = r.c["classify"]
    assert "switch (" in classify
    assert "goto" not in classify, classify
    # the default body is inside the switch, right under its label
    # (the register: clang 14 negates p0 in place, newer clangs into a new local)
    assert re.search(r"default:\n +[rpl]\d+ = -p0;\n +}", classify), classify
    # fall-through from case 1/2 into case 3 is kept (no break between)
    assert re.search(r"case 1: case 2:\n +p0 \+= 7;\n +case 3:", classify), classify
    # cases branching past the switch are `break`, not `goto`
    assert classify.count("break;") >= 3


def test_switch_in_loop(tmp_path):
    r = lift_sem.check(tmp_path, (FIX / "loops.c").read_text(), "-O2")
    sw = r.c["switch_in_loop"]
    assert not r.mismatches
    # `r5 = l4 + 1;` or, when the compiler keeps the sum in place, `l4++;`
    assert re.search(r"case 0:\n +(?:[rpl]\d+ = l\d+ \+ 1|l\d+\+\+);\n +break;", sw), sw
    assert re.search(r"default:\n +[rpl]\d+ = ", sw), sw
    assert not re.search(r"case \d+: goto", sw)
