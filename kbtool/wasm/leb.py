"""Bounds-checked LEB128 readers (slow path) and encoders (tests, fixtures).

Every reader takes ``(data, pos, end)`` and returns ``(value, new_pos)``; on truncation or
overflow it raises :class:`WasmFormatError` with the file offset. The hot decode loop in
:mod:`kbtool.wasm.facts` inlines the one-byte case and only calls here for longer LEBs.
"""

from __future__ import annotations

from .errors import WasmFormatError


def read_uleb(data, pos: int, end: int, bits: int = 32, what: str = "u32 LEB128"):
    result = 0
    shift = 0
    start = pos
    maxbytes = (bits + 6) // 7
    while True:
        if pos >= end:
            raise WasmFormatError(pos, what, "unexpected end of data")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if pos - start >= maxbytes:
            raise WasmFormatError(start, what, "LEB128 too long (overflow)")
    if pos - start == maxbytes:
        # the unused high bits of the last byte must be zero
        used = bits - 7 * (maxbytes - 1)
        if b >> used:
            raise WasmFormatError(start, what, "LEB128 value out of range (overflow)")
    return result, pos


def read_sleb(data, pos: int, end: int, bits: int = 32, what: str = "s32 LEB128"):
    result = 0
    shift = 0
    start = pos
    maxbytes = (bits + 6) // 7
    while True:
        if pos >= end:
            raise WasmFormatError(pos, what, "unexpected end of data")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
        if pos - start >= maxbytes:
            raise WasmFormatError(start, what, "LEB128 too long (overflow)")
    if pos - start == maxbytes:
        used = bits - 7 * (maxbytes - 1)  # payload bits in the last byte (incl. sign)
        rest = b & 0x7F
        top = rest >> (used - 1)  # sign bit and the unused bits: all 0 or all 1
        if top not in (0, (1 << (8 - used)) - 1):
            raise WasmFormatError(start, what, "LEB128 value out of range (overflow)")
    if result & (1 << (shift - 1)):
        result -= 1 << shift
    # normalise to the requested width (sign preserved)
    if shift > bits:
        result = (result + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return result, pos


def skip_leb(data, pos: int, end: int, maxbytes: int = 10, what: str = "LEB128") -> int:
    start = pos
    while True:
        if pos >= end:
            raise WasmFormatError(pos, what, "unexpected end of data")
        b = data[pos]
        pos += 1
        if not b & 0x80:
            return pos
        if pos - start >= maxbytes:
            raise WasmFormatError(start, what, "LEB128 too long (overflow)")


def encode_uleb(value: int) -> bytes:
    if value < 0:
        raise ValueError("negative value for unsigned LEB128")
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if (value == 0 and not b & 0x40) or (value == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)
