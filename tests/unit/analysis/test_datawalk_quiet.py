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
from testkit.wasmbuild import sleb, uleb

COMPILED = datawalk_active.load_compiled()
SIDES = [datawalk] + ([COMPILED] if COMPILED is not None else [])
_FINDS = (1, 2, 3, 9, 10, 11)  # const, load, store, global.get/set, call_indirect
# i8x16.shuffle with 16 lane bytes, the last one global.set's opcode (a misread length finds it)
_SHUFFLE = b"\xfd\x0d" + bytes(15) + b"\x24"


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


def _body(rng: random.Random, n: int) -> bytes:
    """Random straight-line code over one i32 local: constants in and out of the data,
    loads, stores, globals, calls, indirect calls and quiet opcodes, in any order."""
    out = bytearray()
    for _ in range(n):
        r = rng.randrange(16)
        if r == 15:  # prefixed ops: quiet ones of each immediate, a SIMD load, an atomic store
            out += rng.choice(
                [
                    b"\xfd\x0c" + bytes(15) + b"\x23\x1a",  # v128.const; drop
                    b"\x41" + sleb(1100) + b"\xfd\x0c" + bytes(16) + _SHUFFLE,
                    b"\x41" + sleb(1200) + b"\xfd\x11\xfd\x15\x03\x1a",  # splat; lane
                    b"\x43" + bytes(4) + b"\xfc\x00\x1a",  # f32.const; i32.trunc_sat
                    b"\x41" + sleb(1300) + b"\x41\x00\x41\x04\xfc\x0b\x00",  # memory.fill
                    b"\x41" + sleb(1400) + b"\xfd\x00\x04" + uleb(rng.choice([0, 8])) + b"\x1a",
                    b"\x41" + sleb(1500) + b"\x41\x07\xfe\x17\x02\x00",  # i32.atomic.store
                    b"\xfc\x80\x00",  # i32.trunc_sat_f32_s, its op in two LEB bytes
                ]
            )
            continue
        if r == 12:  # a block of each block type (empty, a value, a type index) around a constant
            bt = rng.choice([b"\x40", b"\x7f", b"\x7e", b"\x00", b"\x80\x23"])
            out += (
                rng.choice([b"\x02", b"\x03"])
                + bt
                + b"\x41"
                + sleb(rng.choice([3, 1100]))
                + b"\x1a\x0b"
            )
        elif r == 13:  # if / else
            out += b"\x20\x00\x04\x40\x41" + sleb(1200) + b"\x1a\x05\x0b"
        elif r == 14:  # i64.const in and out of the data, and far out of range
            out += b"\x42" + sleb(rng.choice([5, 1150, -3, 1 << 40, -(1 << 62)])) + b"\x1a"
        elif r == 0:
            out += b"\x41" + sleb(rng.choice([4, 1100, 2048, 3000, 5000, -7]))
        elif r == 1:
            out += b"\x20\x00"  # local.get 0
        elif r == 2:
            out += b"\x41" + sleb(rng.choice([1024, 2100])) + b"\x28\x02" + uleb(rng.choice([0, 8]))
            out += b"\x20\x00\x2d\x00" + uleb(rng.choice([5, 1500, 4000, 300_000])) + b"\x1a"
        elif r == 3:
            out += b"\x41" + sleb(rng.choice([1100, 7])) + b"\x20\x00\x36\x02\x00"
        elif r == 4:
            out += b"\x23\x00\x1a"  # global.get 0; drop
        elif r == 5:
            out += b"\x41" + sleb(2300) + b"\x24\x00"  # global.set 0
        elif r == 6:
            out += b"\x6a"  # i32.add
        elif r == 7:
            out += b"\x1a"  # drop
        elif r == 8:
            out += b"\x21\x00"  # local.set 0
        elif r == 9:
            out += b"\x10\x00"  # call 0
        elif r == 10:
            out += b"\x41" + sleb(2400) + b"\x28\x02\x00\x11\x00\x00"  # load; call_indirect
        else:
            out += b"\x22\x00\x45"  # local.tee 0; i32.eqz
    return b"\x01\x01\x7f" + bytes(out) + b"\x0b"


@pytest.mark.parametrize("go", [False, True])
def test_random_bodies_give_the_careful_walks_references(go):
    rng = random.Random(28 + go)
    lo, hi, mem_hi = 1024, 2500, 4096
    kinds: set[str] = set()
    for _ in range(60):
        data = b"\x00" * 3 + _body(rng, rng.randrange(1, 40))
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
