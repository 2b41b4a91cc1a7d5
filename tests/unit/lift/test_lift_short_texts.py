"""Texts and locals' tuples the lifter makes without a format call or a set (session 28):
the locals' union, a frame slot's name, a note's offset, hex constants, an f32 constant's
text remembered per raw bits; pure and compiled agree with the plain expressions."""

from __future__ import annotations

import importlib
import random
import struct

import pytest

from kbtool.lift import active
from kbtool.lift.context import c_type as context_c_type
from kbtool.lift.context import type_code as context_type_code
from kbtool.lift.lifter import base, memory, notes

COMPILED = active.load_compiled()
IMPLS = [(base, memory, notes)]
if COMPILED is not None:
    IMPLS.append(
        tuple(
            importlib.import_module(f"{COMPILED.__name__}.{m}") for m in ("base", "memory", "notes")
        )
    )


def _f32_bits(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.3:  # short, common values
        return struct.unpack("<I", struct.pack("<f", rng.choice([0.5, 1.0, -2.0, 0.1, 3.25])))[0]
    if pick < 0.4:  # NaNs with payloads, infinities
        return rng.choice([0x7FC00000, 0x7F800001, 0xFFC01234, 0x7F800000, 0xFF800000])
    return rng.getrandbits(32)


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_union_keeps_the_members_once_each(impl):
    """``_union`` gives the members of both tuples once each (what the lifter reads of a
    locals' tuple: ``in``, its length, the one member of a one-local tuple)."""
    b = IMPLS[impl][0]
    rng = random.Random(28)
    locs = [3, 5, ~3, ~7, 0, 300, ~300] + list(range(1000, 1020))
    for _ in range(6000):
        x = tuple(rng.choices(locs, k=rng.randint(1, 14)))  # repeats too
        y = tuple(rng.choices(locs, k=rng.randint(1, 14)))
        u = b._union(x, y)
        assert type(u) is tuple
        assert sorted(u) == sorted(set(x) | set(y))
    assert b._union((3, 3), (3,)) == (3,)
    assert b._union((4,), (4,)) == (4,)
    assert sorted(b._union((4,), (~4,))) == [~4, 4]


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_texts_without_format_calls_equal_the_formatted_ones(impl):
    b, mem, nt = IMPLS[impl]
    rng = random.Random(7)
    offsets = list(range(-3, 1100)) + [rng.getrandbits(rng.randint(1, 40)) for _ in range(3000)]
    for o in offsets:
        assert mem._slot(o) == f"local_{o:02x}"
        assert nt.note_line(o, "x") == f"/* @{o:06x}: x */"
    for _ in range(5000):
        v = rng.getrandbits(32) - (1 << 31)
        expect = str(v)
        if v == -0x80000000:
            expect = "(-2147483647 - 1)"
        elif v >= 0x10000 and v & 0xFFF == 0 or v >= 0x1000000:
            expect = f"0x{v:x}"
        assert b._i32_text(v) == expect
        w = rng.getrandbits(64) - (1 << 63)
        if w != -(1 << 63):
            assert b._i64_text(w) == (f"0x{w:x}LL" if w >= 0x1000000 else f"{w}LL")
    for vt in ("i32", "i64", "f32", "f64", "v128", "funcref", "externref", "anyref"):
        assert b.c_type(vt) == context_c_type(vt)
    for vts in [(), ("i32",), ("f64", "i64", "funcref", "v128", "f32")]:
        assert b.type_code(vts) == context_type_code(vts)


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_f32_text_per_bits_equals_a_fresh_one(impl):
    """The remembered text of an ``f32.const`` equals the one worked out afresh, asked
    twice (the second from the memo), NaN payloads included."""
    b = IMPLS[impl][0]
    rng = random.Random(32)
    for _ in range(3000):
        bits = _f32_bits(rng)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        fresh = b._f32_new(v, bits)
        assert b._f32_text(v, bits) == fresh
        assert b._f32_text(v, bits) == fresh
    nan = struct.unpack("<f", struct.pack("<I", 0x7FC00001))[0]
    assert b._f32_text(nan, 0x7FC00001) != b._f32_text(nan, 0x7FC00002)


def _decode_mod(impl: int):
    if impl == 0:
        return importlib.import_module("kbtool.lift.lifter.decode")
    return importlib.import_module(f"{COMPILED.__name__}.decode")


def _outcome(f, *args):
    try:
        return ("ok", f(*args))
    except Exception as e:  # the same error, type and text, from both readers
        return ("error", type(e).__name__, str(e))


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_local_decls_read_as_the_careful_reader_does(impl):
    """The one-byte fast path gives the careful reader's declarations and end, and any
    other body (long LEBs, reference types, cut short, counts past the body) the careful
    reader's answer or error."""
    from kbtool.wasm.instr import read_local_decls

    dec = _decode_mod(impl)
    rng = random.Random(64)
    types = [0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F, 0x63, 0x40, 0x00]
    for _ in range(20000):
        data = bytearray([rng.choice([0, 1, 2, 3, 5, 127, 128, 200])])
        for _ in range(rng.randint(0, 6)):
            data += bytes([rng.choice([0, 1, 5, 127, 128, 255]), rng.choice(types)])
        data += bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 3)))
        end = rng.randint(0, len(data))
        got = _outcome(dec._local_decls, bytes(data), 0, end)
        assert got == _outcome(read_local_decls, bytes(data), 0, end), data.hex()


@pytest.mark.parametrize("impl", range(len(IMPLS)))
def test_c_ident_fast_path_equals_c_ident(impl):
    from kbtool.lift.names import c_ident

    b = IMPLS[impl][0]
    rng = random.Random(9)
    word = "abzAZ09_"
    other = word + "-.$ é\x00"
    for _ in range(20000):
        chars = word if rng.random() < 0.6 else other
        s = "".join(rng.choice(chars) for _ in range(rng.randint(0, 110)))
        assert b._c_ident(s) == c_ident(s), s


def test_a_views_fields_order_by_count_then_first_seen():
    """Several C types at one offset: the width and kind most accesses use is the plain
    ``field_N`` (the first seen among equal counts), its type the one most loads use
    (the first seen among equals)."""
    from kbtool.lift.lifter.views import Use, _fields

    def use(count: int, loads: int) -> Use:
        u = Use("t", False)
        u.count, u.loads = count, loads
        return u

    offs = {
        8: {"int16_t": use(2, 1), "int32_t": use(2, 2), "uint32_t": use(1, 2), "float": use(2, 0)}
    }
    items = _fields(offs)  # int16 (2), int32/uint32 (3), float (2): the i32 pair first
    names = {it[3]: it[2] for it in items}
    assert names["field_8"] == "int32_t"  # 2 loads each: int32_t seen first
    assert set(names) == {"field_8", "field_8_i16", "field_8_f32"}, names


def _escape_by_loop(s: str, limit: int) -> str:
    """escape_text as a loop per character (its reference)."""
    esc = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for n, ch in enumerate(s):
        if n >= limit:
            out.append("...")
            break
        e = esc.get(ch)
        if e is None:
            o = ord(ch)
            if ch.isprintable():
                e = ch
            elif o < 0x100:
                e = f"\\x{o:02x}"
            else:
                e = f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
        out.append(e)
    t = "".join(out)
    return t.replace("*/", "*\\/").replace("/*", "/\\*").replace("??", "?\\?")


def test_escape_text_by_its_table_equals_the_loop():
    from kbtool.lift.names import escape_text

    rng = random.Random(11)
    pool = 'ab \\"*/?\n\t\r\x00\x01\x7f\x80\x9f\xa0\xad\u00e9\u200b\u2028\ufeff\U0001f600\ud800'
    pool += "".join(chr(rng.randrange(0x110000)) for _ in range(100))
    for _ in range(20000):
        s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 90)))
        limit = rng.choice([0, 1, 5, 60, 80])
        assert escape_text(s, limit) == _escape_by_loop(s, limit), repr(s)
