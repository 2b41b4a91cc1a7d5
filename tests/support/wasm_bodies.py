"""Random straight-line function bodies for the data walk's tests (the quiet shortcut and the
decoder's stops): every kind of instruction the walk treats apart, in any order."""

from __future__ import annotations

import random

from testkit.wasmbuild import sleb, uleb

# i8x16.shuffle with 16 lane bytes, the last one global.set's opcode (a misread length finds it)
_SHUFFLE = b"\xfd\x0d" + bytes(15) + b"\x24"


def random_body(rng: random.Random, n: int) -> bytes:
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
