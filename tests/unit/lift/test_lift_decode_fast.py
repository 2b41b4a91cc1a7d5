"""The lifter's body decoder reads long constants and one-result block types inline, with
the careful decoder's values (issue 28 point 6: whole-module lift cost)."""

from __future__ import annotations

import struct

import pytest

from kbtool.lift.lifter import decode
from kbtool.lift.lifter.base import _Budget
from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import decode_one


def _sleb(v: int, width: int) -> bytes:
    """``v`` as a signed LEB128 of exactly ``width`` bytes (padded with sign bytes)."""
    out = bytearray()
    for k in range(width):
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if k < width - 1 else 0))
    return bytes(out)


def _body(ops: bytes) -> bytes:
    return b"\x00" + ops + b"\x0b"  # no local declarations; the final end


def _careful(data: bytes) -> tuple[list[int], list[tuple]]:
    """Opcodes and immediates as the careful decoder reads them (f32: value and bits)."""
    p, ops, args = 1, [], []
    while p < len(data):
        op, q, imms = decode_one(data, p, len(data))
        if op == 0x43:
            imms = (imms[0], int.from_bytes(data[p + 1 : p + 5], "little"))
        ops.append(op)
        args.append(imms)
        p = q
    return ops, args


CONSTS = [
    (0x41, 1162892, 4),  # i32.const, four bytes
    (0x41, -5000000, 4),
    (0x41, 0x3FFFFFFF, 5),  # five bytes whose last one extends the sign
    (0x41, -0x7FFFFFFF, 5),
    (0x41, 3, 5),  # padded
    (0x42, 3, 1),  # i64.const, short
    (0x42, -70, 2),
    (0x42, 99999999, 4),
    (0x42, -(1 << 31), 5),
]


@pytest.mark.parametrize(("op", "value", "width"), CONSTS)
def test_long_constants_decode_inline_with_the_careful_value(monkeypatch, op, value, width):
    code = bytes([op]) + _sleb(value, width) + b"\x1a"  # const; drop
    data = _body(code)
    want = _careful(data)
    calls: list[int] = []
    monkeypatch.setattr(
        decode, "decode_one", lambda d, p, e: calls.append(p) or decode_one(d, p, e)
    )
    _decls, ops, args, _ctrl, _arith = decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert (ops, args) == want
    assert args[0] == (value,)
    assert calls == []  # no careful decode: the fast path read it


def test_f32_const_and_typed_blocks_decode_inline(monkeypatch):
    nan = struct.pack("<I", 0x7FC00123)  # a NaN with a payload: its bits are kept
    code = (
        b"\x02\x7f\x43"
        + nan
        + b"\x0b"  # block (result i32) f32.const nan end ... (shape only)
        + b"\x04\x7e\x0b"  # if (result i64) end
        + b"\x03\x7c\x0b"  # loop (result f64) end
        + b"\x02\x7d\x0b"  # block (result f32) end
    )
    data = _body(code)
    want_ops, want_args = _careful(data)
    calls: list[int] = []
    monkeypatch.setattr(
        decode, "decode_one", lambda d, p, e: calls.append(p) or decode_one(d, p, e)
    )
    _decls, ops, args, _ctrl, _arith = decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert ops == want_ops
    assert [a[0] for a in args if a and isinstance(a[0], str)] == ["i32", "i64", "f64", "f32"]
    f32 = args[ops.index(0x43)]
    assert f32[1] == 0x7FC00123 == want_args[ops.index(0x43)][1]
    assert calls == []


def test_a_constant_running_past_the_body_still_fails_cleanly():
    data = b"\x00\x41\x80\x80\x80\x80"  # a LEB the body's end cuts short
    with pytest.raises(WasmFormatError):
        decode._decode(data, 0, len(data), _Budget(10**9, None))
