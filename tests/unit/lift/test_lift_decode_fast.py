"""The lifter's body decoder reads long constants and one-result block types inline, with
the careful decoder's values (issue 28 point 6: whole-module lift cost)."""

from __future__ import annotations

import importlib
import struct

import pytest

from kbtool.lift import active
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


COMPILED = active.load_compiled()
#: the native-int (i64) decode's edges: each LEB width's extremes, long i64 constants
EDGES = CONSTS + [
    (0x41, 63, 1),
    (0x41, -64, 1),
    (0x41, 8191, 2),
    (0x41, -8192, 2),
    (0x41, 0x7FFFFFFF, 5),
    (0x41, -(1 << 31), 5),
    (0x42, (1 << 62) - 1, 9),
    (0x42, -(1 << 62), 9),
    (0x42, (1 << 63) - 1, 10),
    (0x42, -(1 << 63), 10),
]


@pytest.mark.skipif(COMPILED is None, reason="compiled lifter not built")
@pytest.mark.parametrize(("op", "value", "width"), EDGES)
def test_the_compiled_decoder_reads_constants_as_the_careful_one(op, value, width):
    cdec = importlib.import_module(COMPILED.__name__ + ".decode")
    data = _body(bytes([op]) + _sleb(value, width) + b"\x1a")
    budget = cdec._Budget(10**9, None)  # the twin's own class (a native one)
    _decls, ops, args, _ctrl, _arith = cdec._decode(data, 0, len(data), budget)
    assert (ops, args) == _careful(data)
    assert args[0] == (value,)


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


def _uleb(v: int, width: int) -> bytes:
    """``v`` as an unsigned LEB128 of exactly ``width`` bytes (padded)."""
    out = bytearray()
    for k in range(width):
        out.append((v & 0x7F) | (0x80 if k < width - 1 else 0))
        v >>= 7
    return bytes(out)


RARE = [
    # br_table: count, labels, default (one- and two-byte LEBs, a padded one)
    (b"\x0e" + _uleb(3, 1) + _uleb(0, 1) + _uleb(200, 2) + _uleb(5, 2) + _uleb(1, 1), True),
    (b"\x0e\x00\x07", True),  # no labels, only the default
    (b"\x0e\x01" + _uleb(16383, 2) + b"\x00", True),
    (b"\x0e\x01" + _uleb(20000, 3) + b"\x00", False),  # a three-byte label: careful
    (b"\x0e" + _uleb(1, 3) + b"\x00\x00", False),  # a three-byte count: careful
    (b"\x11" + _uleb(300, 2) + b"\x00", True),  # call_indirect type 300, table 0
    (b"\x11\x05" + _uleb(1, 3), False),
    (b"\x42" + _sleb(-(1 << 62), 9), True),  # i64.const, nine bytes
    (b"\x42" + _sleb((1 << 62) - 1, 9), True),
    (b"\x42" + _sleb(1 << 40, 7), True),
    (b"\x42" + _sleb(-(1 << 63), 10), False),  # ten bytes: careful (overflow check)
    (b"\x44" + struct.pack("<d", -2.5), True),  # f64.const
    (b"\x44" + struct.pack("<Q", 0x7FF8000000000001), True),  # a NaN
]


@pytest.mark.parametrize(
    ("code", "inline"), RARE, ids=lambda x: x.hex() if isinstance(x, bytes) else str(x)
)
def test_br_table_call_indirect_i64_and_f64_read_inline_with_the_careful_values(
    monkeypatch, code, inline
):
    data = _body(code + (b"\x1a" if code[0] in (0x42, 0x44) else b""))  # a constant is dropped
    want_ops, want_args = _careful(data)
    calls: list[int] = []
    monkeypatch.setattr(
        decode, "decode_one", lambda d, p, e: calls.append(p) or decode_one(d, p, e)
    )
    _decls, ops, args, _ctrl, _arith = decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert ops == want_ops
    if code[0] == 0x44:
        assert struct.pack("<d", args[0][0]) == struct.pack("<d", want_args[0][0])
        assert args[1:] == want_args[1:]
    else:
        assert args == want_args
    assert (calls == []) == inline


@pytest.mark.parametrize(
    "code",
    [b"\x0e\x02\x00", b"\x0e\x05\x00\x00", b"\x11\x80", b"\x42\x80\x80", b"\x44\x00\x00\x00"],
)
def test_a_rare_shape_cut_short_fails_as_the_careful_decoder_does(code):
    data = b"\x00" + code
    with pytest.raises(WasmFormatError) as want:
        _careful(data)
    with pytest.raises(WasmFormatError) as got:
        decode._decode(data, 0, len(data), _Budget(10**9, None))
    assert str(got.value) == str(want.value)
