"""The compiled data walk's shortcut on an all-unknown stack (``_QUIET``): an opcode taken
by it has no immediate or one LEB, and its class finds nothing there (not a constant, a
memory access, a global or an indirect call), or it is a one-byte load or store (only its
offset counts there); bodies that mix such opcodes with constants,
memory accesses, globals and indirect calls give the careful walk's references, pure and
compiled, in Go mode too."""

from __future__ import annotations

import random

import pytest

from kbtool.analysis import datawalk, datawalk_active
from kbtool.analysis.datarefs import function_refs_careful
from tests.support.wasm_bodies import random_body

COMPILED = datawalk_active.load_compiled()
SIDES = [datawalk] + ([COMPILED] if COMPILED is not None else [])
_FINDS = (1, 2, 3, 9, 10, 11)  # const, load, store, global.get/set, call_indirect


def test_quiet_opcodes_find_nothing_on_an_unknown_stack():
    q = datawalk._QUIET
    assert len(q) == 256
    assert {q[op] for op in range(256)} == {0, 1, 2, 3, 4, 5}
    immediates = {1: (0,), 2: (1, 4, 5, 12, 14, 16), 4: (6,)}
    for op in range(256):
        if q[op] == 3:
            assert datawalk._CLS[op] in (2, 3) and datawalk._WK[op] == 2, hex(op)
        elif q[op] == 5:
            assert datawalk._CLS[op] == 1 and datawalk._WK[op] in (3, 7), hex(op)
        elif q[op]:
            assert datawalk._CLS[op] not in _FINDS, hex(op)
            assert datawalk._WK[op] in immediates[q[op]], hex(op)
    # the common ones are taken, those that find something are not
    for op in (0x20, 0x21, 0x22, 0x6A, 0x1A, 0x10, 0x0C, 0x0D, 0x45, 0x0B, 0x02, 0x03, 0x04):
        assert q[op], hex(op)
    for op in (0x23, 0x24, 0x11, 0xFC, 0xFD):
        assert not q[op], hex(op)
    # behind a prefix: the same rule by op id (those that find something are not taken)
    qo = datawalk._QOPS
    for op in range(len(qo)):
        if qo[op]:
            assert op >= 256 and datawalk._CLS[op] not in _FINDS, op
            assert (
                datawalk._WK[op]
                in {1: (0,), 2: (1, 4, 5, 12, 14, 16), 7: (19, 22), 8: (21,)}[qo[op]]
            ), op
    assert q[0x28] == q[0x36] == q[0x3E] == 3
    assert q[0x41] == q[0x42] == 5
    assert q[0x02] == q[0x03] == q[0x04] == 4


@pytest.mark.parametrize("go", [False, True])
def test_random_bodies_give_the_careful_walks_references(go):
    rng = random.Random(28 + go)
    lo, hi, mem_hi = 1024, 2500, 4096
    kinds: set[str] = set()
    for _ in range(60):
        data = b"\x00" * 3 + random_body(rng, rng.randrange(1, 40))
        start, end = 3, len(data)
        want = [
            (r.func_index, r.offset, r.kind, r.target_kind, r.target, r.width)
            for r in function_refs_careful(data, 7, start, end - start, lo, hi, go, mem_hi)
        ]
        for side in SIDES:
            for floor in (lo - 8, -100):  # (-100: small constants start a stack too)
                got: list = []
                side.body_refs(data, 7, start, end, lo, hi, go, mem_hi, floor, got)
                assert [tuple(r) for r in got] == want, side.__name__
        kinds.update(r[2] for r in want)
    assert {"addr", "load", "store", "read", "write", "call_indirect"} <= kinds
