"""The body decoder's flags: whether an ``i32.add``/``i32.sub`` and a ``global.get`` occur
(the frame pass runs only with both), as a scan of the decoded opcodes says."""

from __future__ import annotations

from kbtool.lift import prepare
from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.decode import _decode
from kbtool.lift.lifter.opnames import OP_GLOBAL_GET, OP_I32_ADD, OP_I32_SUB
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _flags(ops: list[int]) -> int:
    arith = OP_I32_ADD in ops or OP_I32_SUB in ops
    return (1 if arith else 0) | (2 if OP_GLOBAL_GET in ops else 0)


def test_the_flags_say_what_the_opcodes_hold_on_every_body():
    lm = prepare(DEMO.read_bytes())
    seen = set()
    for start, end in lm.module.code:
        _decls, ops, _args, _ctrl, flags = _decode(lm.data, start, end, _Budget(10**9, None))
        assert flags == _flags(ops), (start, flags)
        seen.add(flags)
    assert {0, 1, 3} <= seen


def test_a_global_get_read_by_the_careful_decoder_is_seen():
    # global.get 5 with a padded five-byte index (no fast path), then global.get 1 near the
    # end of the body (the careful decoder again), each alone
    for body in (bytes([0x00, 0x23, 0x85, 0x80, 0x80, 0x80, 0x00, 0x1A, 0x0B]), b"\x00\x23\x01"):
        _decls, ops, _args, _ctrl, flags = _decode(body, 0, len(body), _Budget(10**9, None))
        assert ops[0] == OP_GLOBAL_GET and flags == 2
