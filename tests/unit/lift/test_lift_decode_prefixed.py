"""The lifter's body decoder reads the common ``0xFC``/``0xFD``/``0xFE`` ops (bulk memory,
SIMD, atomics) inline, with the careful decoder's op ids and immediates (issue #30:
ffmpeg's whole-module C spent ~18 % of its instructions in the careful decoder)."""

from __future__ import annotations

import importlib
import random

import pytest

from kbtool.lift import active
from kbtool.lift.lifter import decode
from kbtool.lift.lifter.base import _Budget
from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one


def _careful(data: bytes) -> tuple[list[int], list[tuple]]:
    p, ops, args = 1, [], []
    while p < len(data):
        op, q, imms = decode_one(data, p, len(data))
        ops.append(op)
        args.append(imms)
        p = q
    return ops, args


V16 = bytes(range(0xF0, 0x100))
PREFIXED = [
    (b"\xfc\x08\x05\x00", True),  # memory.init 5 0
    (b"\xfc\x08\xc8\x01\x00", True),  # memory.init 200 0 (two-byte index)
    (b"\xfc\x08\x80\x80\x01\x00", False),  # a three-byte index: careful
    (b"\xfc\x09\x07", True),  # data.drop 7
    (b"\xfc\x0a\x00\x00", True),  # memory.copy
    (b"\xfc\x0b\x00", True),  # memory.fill
    (b"\xfc\x00", True),  # i32.trunc_sat_f32_s
    (b"\xfc\x10\x00", True),  # table.size
    (b"\xfd\x0c" + V16, True),  # v128.const
    (b"\xfd\x0d" + V16, True),  # i8x16.shuffle
    (b"\xfd\xae\x01", True),  # i32x4.add (a two-byte sub-opcode)
    (b"\xfd\xae\x81\x00", False),  # ... padded to three bytes: careful
    (b"\xfd\x00\x04\x10", True),  # v128.load align 4 offset 16
    (b"\xfd\x00\x04\x90\x03", True),  # ... offset 400
    (b"\xfd\x00\x44\x00\x10", False),  # ... with a memory index: careful
    (b"\xfd\x00\x04\x80\x80\x01", False),  # a three-byte offset: careful
    (b"\xfd\x1b\x03", True),  # i32x4.extract_lane 3
    (b"\xfd\x54\x00\x08\x0f", True),  # v128.load8_lane align 0 offset 8 lane 15
    (b"\xfe\x10\x02\x04", True),  # i32.atomic.load
    (b"\xfe\x00\x02\x00", True),  # memory.atomic.notify
    (b"\xfe\x03\x00", True),  # atomic.fence
]

#: plain ops with a three-byte index or memarg offset (inline) and longer ones (careful)
THREE_BYTES = [
    (b"\x20\x80\x80\x01", True),  # local.get 16384
    (b"\x20\xff\xff\x7f", True),  # local.get 2**21 - 1
    (b"\x20\x80\x80\x80\x01", False),  # four bytes: careful
    (b"\x10\x81\x80\x02", True),  # call
    (b"\x28\x02\x80\x80\x01", True),  # i32.load offset 16384
    (b"\x36\x02\xff\xff\x7f", True),  # i32.store offset 2**21 - 1 (shape only)
    (b"\x28\x02\x80\x80\x80\x01", False),  # a four-byte offset: careful
]
PREFIXED += THREE_BYTES


@pytest.mark.parametrize(
    ("code", "inline"),
    PREFIXED,
    ids=lambda x: x.hex() if isinstance(x, bytes) else str(x),
)
def test_prefixed_ops_read_inline_with_the_careful_values(monkeypatch, code, inline):
    data = b"\x00" + code
    want = _careful(data)
    calls: list[int] = []
    monkeypatch.setattr(
        decode, "decode_one", lambda d, p, e: calls.append(p) or decode_one(d, p, e)
    )
    _decls, ops, args, _ctrl, _arith = decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert (ops, args) == want
    assert [[type(x) for x in a] for a in args] == [[type(x) for x in a] for a in want[1]]
    assert (calls == []) == inline


@pytest.mark.parametrize(
    "code",
    [
        b"\x28\x02\x80\x80",
        b"\x20\x80\x80",
        b"\xfc",
        b"\xfc\x08\x05",
        b"\xfd\x0c\x00\x01",
        b"\xfd\x00\x04",
        b"\xfd\x54\x00\x08",
    ]
    + [b"\xfd\x1b", b"\xfe\x03", b"\xfd\xa0\x02", b"\xfc\x1f", b"\xfe\x80\x01"],
)
def test_a_prefixed_op_cut_short_or_unknown_fails_as_the_careful_decoder_does(code):
    data = b"\x00" + code
    with pytest.raises(WasmFormatError) as want:
        _careful(data)
    with pytest.raises(WasmFormatError) as got:
        decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert str(got.value) == str(want.value)


def _random_prefixed(rnd: random.Random) -> tuple[bytes, int, int]:
    pick = (lambda: rnd.randint(0, 255), lambda: rnd.randint(0, 0x7F), lambda: 0x40)
    tail = bytes(rnd.choice(pick)() for _ in range(rnd.randint(0, 20)))
    head = bytes(rnd.randint(0, 2))
    code = bytes([rnd.choice((0xFC, 0xFD, 0xFE, 0xFB, 0xFF))]) + tail
    return head + code + bytes(rnd.randint(0, 2)), len(head), len(head) + len(code)


def _check_against_careful(prefixed, n: int, seed: int) -> int:
    rnd = random.Random(seed)
    fast = 0
    for _ in range(n):
        data, p, end = _random_prefixed(rnd)
        op, imms, q = prefixed(data, p, end)
        if q < 0:
            continue  # the careful decoder reads it
        fast += 1
        got = decode_one(data, p, end)
        assert got == (op, q, imms), (data.hex(), p, end)
        assert [type(x) for x in got[2]] == [type(x) for x in imms]
    return fast


def test_random_prefixed_ops_read_inline_agree_with_the_careful_decoder():
    assert _check_against_careful(decode._prefixed, 6000, 24) > 1000


COMPILED = active.load_compiled()


@pytest.mark.skipif(COMPILED is None, reason="compiled lifter not built")
def test_the_compiled_decoder_reads_prefixed_ops_as_the_careful_one():
    cdec = importlib.import_module(COMPILED.__name__ + ".decode")
    assert _check_against_careful(cdec._prefixed, 6000, 25) > 1000
    for code, _inline in PREFIXED:
        data = b"\x00" + code
        got = cdec._decode(data, 0, len(data), cdec._Budget(10**9, None))
        assert (got[1], got[2]) == _careful(data)
