"""kbtool.wasm decoder: instruction families, per-function facts, hashes, strings."""

from __future__ import annotations

from array import array
from hashlib import blake2b

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.wasm import (
    MNEMONICS,
    analyze_module,
    disassemble,
    function_body,
    iter_instructions,
    parse_module,
)
from kbtool.wasm import facts as decoder
from kbtool.wasm.opcodes import OP_BY_NAME
from testkit.wasmbuild import (
    CORPUS,
    custom_section,
    have_wabt,
    module,
    objdump_mnemonics,
    producers_payload,
    section,
    sleb,
    uleb,
    vec,
    wasm_builder,
)

FAMILIES = [
    "mvp",
    "signext_sat",
    "multivalue",
    "bulk",
    "reftypes",
    "simd",
    "atomics",
    "tailcall",
    "eh",
    "funcref",
    "memory64",
    "elements",
    "facts_a",
]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    if not have_wabt():
        pytest.skip("wabt not installed")
    out = tmp_path_factory.mktemp("wasm")
    get = wasm_builder(out)

    def analysed(fixture: str, debug_names: bool = True):
        data = get(fixture, debug_names)
        return data, analyze_module(data)

    analysed.out = out
    return analysed


def _by_name(a):
    return {f.raw_name: f for f in a.functions}


def _mn(f):
    return f.mnemonics()


@pytest.mark.parametrize("fixture", FAMILIES)
def test_family_matches_wasm_objdump(build, fixture):
    data, a = build(fixture)
    path = build.out / f"{fixture}.check.wasm"
    path.write_bytes(data)
    ref = objdump_mnemonics(path)
    defined = [f for f in a.functions if not f.imported]
    assert defined
    for f in defined:
        assert _mn(f) == ref[f.index], f.raw_name
        assert f.instr_count == len(f.ops) // 2 == len(ref[f.index])
        # the careful decoder agrees with the fast one
        ops = array("H")
        ops.frombytes(f.ops)
        s, e = function_body(data, a.module, f.index)
        assert [op for _o, op, _t in iter_instructions(data, s, e)] == list(ops)


def test_mvp_facts(build):
    data, a = build("mvp")
    fs = _by_name(a)
    log, add, control, memory = fs["log"], fs["add"], fs["control"], fs["memory"]
    assert log.imported and (log.import_module, log.import_field) == ("env", "log")
    assert log.type_sig == "(i32, i32) -> ()" and log.instr_count == 0 and log.body_size == 0
    assert log.ops == b"" and log.body_hash == log.shape_hash
    assert add.export_names == ["add", "plus"] and add.type_sig == "(i32, i32) -> i32"
    assert _mn(add) == ["local.get", "local.get", "i32.add", "end"]
    m = a.module
    s, e = m.code[add.index - m.num_func_imports]
    assert (add.body_offset, add.body_size) == (s, e - s)
    assert add.body_hash == blake2b(data[s:e], digest_size=16).hexdigest()
    assert control.calls == [0]
    assert control.call_indirect == 1
    assert control.loops == 1
    assert control.consts == [1, 2, 1024, 13, 3, 4]
    assert control.strings == ["Hello, world!"]
    assert control.globals_used == [0, 1, 2]
    assert control.export_names == ["control"]
    i32_load = OP_BY_NAME["i32.load"]
    assert memory.mem_ops == [
        (i32_load, 4, 4),
        (OP_BY_NAME["i32.load8_u"], 1, 1),
        (OP_BY_NAME["i32.load16_s"], 2, 2),
        (OP_BY_NAME["i32.store"], 8, 4),
        (OP_BY_NAME["i64.store32"], 16, 4),
        (OP_BY_NAME["f32.store"], 20, 4),
        (OP_BY_NAME["f64.load"], 24, 8),
        (OP_BY_NAME["i64.load"], 32, 8),
    ]
    assert memory.atomic_sites == 0
    num = fs["numeric"]
    assert 0x123456789 in num.consts and -1 in num.consts and -2 in num.consts


def test_consts_are_distinct_in_first_use_order():
    body = b"".join(b"\x41" + sleb(v) + b"\x1a" for v in (5, -3, 5, 300, -3))
    body += b"\x42" + sleb(-(2**40)) + b"\x1a\x0b"
    a = analyze_module(_one_func(body))
    assert a.functions[1].consts == [5, -3, 300, -(2**40)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=40),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=10),
)
def test_const_values_roundtrip_through_the_fast_decoder(i32s, i64s):
    body = b"".join(b"\x41" + sleb(v) + b"\x1a" for v in i32s)
    body += b"".join(b"\x42" + sleb(v) + b"\x1a" for v in i64s) + b"\x0b"
    f = analyze_module(_one_func(body)).functions[1]
    assert f.consts == list(dict.fromkeys(i32s + i64s))
    assert f.instr_count == 2 * (len(i32s) + len(i64s)) + 1


def _one_func(
    body: bytes, extra: bytes = b"", data_sec: bytes = b"", locals_: bytes = b"\x00"
) -> bytes:
    code = locals_ + body
    return module(
        section(1, vec([b"\x60\x00\x00", b"\x60\x02\x7f\x7f\x00"])),
        section(2, vec([b"\x03env\x04sink\x00\x01"])),
        section(3, vec([b"\x00"])),
        section(5, vec([b"\x00\x01"])),
        section(10, vec([uleb(len(code)) + code])),
        data_sec,
        extra,
    )


def test_families_facts(build):
    _, a = build("atomics")
    f = _by_name(a)["atomics"]
    assert f.atomic_sites == 8
    assert a.module.shared_memory
    widths = [(MNEMONICS[op], off, w) for op, off, w in f.mem_ops]
    assert widths == [
        ("i32.atomic.load", 8, 4),
        ("i32.atomic.store", 12, 4),
        ("i32.atomic.rmw.add", 4, 4),
        ("i64.atomic.rmw8.xchg_u", 0, 1),
        ("i32.atomic.rmw.cmpxchg", 16, 4),
        ("memory.atomic.wait32", 0, 4),
        ("memory.atomic.notify", 0, 4),
    ]
    _, a = build("tailcall")
    fs = _by_name(a)
    assert fs["even"].calls == [fs["odd"].index] and "return_call" in _mn(fs["even"])
    assert fs["odd"].call_indirect == 1 and "return_call_indirect" in _mn(fs["odd"])
    _, a = build("reftypes")
    fs = _by_name(a)
    assert fs["refs"].ref_funcs == [fs["target"].index]
    _, a = build("funcref")
    fs = _by_name(a)
    assert fs["use"].call_indirect == 1 and fs["tail"].call_indirect == 1
    assert "br_on_null" in _mn(fs["null"])
    _, a = build("simd")
    f = _by_name(a)["simd"]
    assert [(MNEMONICS[o], off, w) for o, off, w in f.mem_ops] == [
        ("v128.load", 16, 16),
        ("v128.load32_splat", 0, 4),
        ("v128.load8_lane", 3, 1),
        ("v128.store", 32, 16),
    ]
    _, a = build("eh")
    fs = _by_name(a)
    assert {"try", "catch", "catch_all", "delegate", "rethrow"} <= set(_mn(fs["legacy"]))
    assert {"try_table", "throw_ref"} <= set(_mn(fs["modern"]))
    assert fs["legacy"].calls == [fs["thrower"].index]
    _, a = build("bulk")
    f = _by_name(a)["bulk"]
    assert {
        "memory.init",
        "data.drop",
        "memory.copy",
        "memory.fill",
        "table.init",
        "elem.drop",
        "table.copy",
    } <= set(_mn(f))
    _, a = build("memory64")
    f = _by_name(a)["m64"]
    assert f.strings == ["memory64 text"]
    assert [(MNEMONICS[o], off, w) for o, off, w in f.mem_ops] == [
        ("i64.load", 8, 8),
        ("i32.load8_u", 0, 1),
    ]


def test_shape_hash_survives_index_and_address_shifts(build):
    _, a = build("facts_a")
    _, b = build("facts_b")
    _, c = build("facts_c")
    fa, fb, fc = _by_name(a), _by_name(b), _by_name(c)
    # indices and addresses moved: exact bodies differ, shapes agree
    assert fa["main"].index != fb["main"].index
    assert fa["main"].consts != fb["main"].consts
    assert fa["main"].body_hash != fb["main"].body_hash
    assert fa["main"].shape_hash == fb["main"].shape_hash
    assert fa["helper"].body_hash == fb["helper"].body_hash
    assert fa["helper"].shape_hash == fb["helper"].shape_hash
    # a different string is a different shape
    assert fc["main"].shape_hash != fa["main"].shape_hash
    assert fc["helper"].shape_hash == fa["helper"].shape_hash
    # facts of $main
    m = fa["main"]
    assert m.calls == [fa["puts"].index, fa["puts"].index, fa["helper"].index]
    assert m.strings == ["first string", "second string"]
    assert fb["main"].strings == ["first string", "second string"]
    assert m.consts == [1024, 1037, 1, 5]
    assert m.loops == 1 and m.globals_used == [0]
    assert m.mem_ops == [(OP_BY_NAME["i32.load"], 12, 4)]
    # the import keeps its identity by name
    assert fa["puts"].shape_hash == fb["puts"].shape_hash


def test_shape_hash_normalises_type_and_table_indices():
    # call_indirect through type 1 vs the same signature at type index 2
    def mod(types, ti):
        code = b"\x00\x41\x00\x41\x01\x41\x02\x11" + uleb(ti) + b"\x00\x0b"
        return module(
            section(1, vec(types)),
            section(3, vec([b"\x00"])),
            section(4, vec([b"\x70\x00\x01"])),
            section(10, vec([uleb(len(code)) + code])),
        )

    t0, t1 = b"\x60\x00\x00", b"\x60\x02\x7f\x7f\x00"
    a = analyze_module(mod([t0, t1], 1)).functions[0]
    b = analyze_module(mod([t0, b"\x60\x00\x01\x7f", t1], 2)).functions[0]
    assert a.body_hash != b.body_hash and a.shape_hash == b.shape_hash
    assert a.call_indirect == 1


def test_c_strings_start_only_and_printable():
    seg = b"\x00abc\x00Hello there\x00\x01\x02\x03\x04binary\x00tab\there\n\x00"
    data_sec = section(11, vec([b"\x00\x41\x80\x08\x0b" + uleb(len(seg)) + seg]))
    base = 1024

    def strings_of(addr):
        body = b"\x41" + sleb(addr) + b"\x1a\x0b"
        return analyze_module(_one_func(body, data_sec=data_sec)).functions[1].strings

    assert strings_of(base + 5) == ["Hello there"]
    assert strings_of(base + 7) == []  # middle of a string: start only
    assert strings_of(base + 1) == []  # "abc": fewer than 4 chars
    assert strings_of(base + 17) == []  # binary bytes
    assert strings_of(base + 28) == ["tab\there\n"]
    assert strings_of(base + 500) == []  # outside the data


def _rust_module(body: bytes, seg: bytes, seg2: bytes = b"") -> bytes:
    segs = [b"\x00\x41" + sleb(4096) + b"\x0b" + uleb(len(seg)) + seg]
    if seg2:
        segs.append(b"\x00\x41" + sleb(8192) + b"\x0b" + uleb(len(seg2)) + seg2)
    prod = producers_payload(
        {"language": [("Rust", "")], "processed-by": [("rustc", "1.80.0 (051478957 2024-07-21)")]}
    )
    return _one_func(body, data_sec=section(11, vec(segs)), extra=custom_section("producers", prod))


def test_rust_strings_by_length_run_and_fat_pointer():
    blob = b"hello worldsecond-piece-text\x01\x02"
    # (ptr, len) passed as adjacent constants
    body = b"\x41" + sleb(4096) + b"\x41" + sleb(11) + b"\x10\x00\x0b"
    a = analyze_module(_rust_module(body, blob))
    assert a.toolchain_version == "rustc 1.80.0"
    assert a.functions[1].strings == ["hello world"]
    # no length: a conservative printable run up to the first non-printable byte
    body = b"\x41" + sleb(4096 + 11) + b"\x1a\x0b"
    assert analyze_module(_rust_module(body, blob)).functions[1].strings == ["second-piece-text"]
    # a constant pointing at an in-data (ptr, len) pair: a &str in a struct
    fat = (4096).to_bytes(4, "little") + (11).to_bytes(4, "little") + b"\x00" * 8
    body = b"\x41" + sleb(8192) + b"\x1a\x0b"
    assert analyze_module(_rust_module(body, blob, fat)).functions[1].strings == ["hello world"]
    # too short or not texty: nothing
    body = b"\x41" + sleb(4096 + 26) + b"\x1a\x0b"
    assert analyze_module(_rust_module(body, blob)).functions[1].strings == []


def test_passive_segment_addresses_from_memory_init():
    seg = b"passive string\x00"
    init = (
        b"\x41"
        + sleb(2048)
        + b"\x41\x00\x41"
        + sleb(len(seg))
        + b"\xfc\x08\x00\x00"
        + b"\x41"
        + sleb(2048)
        + b"\x1a\x0b"
    )
    data = _one_func(init, data_sec=section(11, vec([b"\x01" + uleb(len(seg)) + seg])), extra=b"")
    data = data.replace(section(10, b"")[:0], b"")  # no-op, keeps the builder symmetric
    # datacount is required for memory.init; insert it before the code section
    m = parse_module(data)
    code_sec = next(s for s in m.sections if s.id == 10)
    hdr = code_sec.offset - 1 - len(uleb(code_sec.size))
    data = data[:hdr] + section(12, uleb(1)) + data[hdr:]
    a = analyze_module(data)
    assert a.functions[1].strings == ["passive string"]


def test_iter_instructions_and_disassemble(build):
    data, a = build("mvp")
    f = _by_name(a)["memory"]
    s, e = function_body(data, a.module, f.index)
    items = list(iter_instructions(data, s, e))
    assert items[0][0] > s  # local declarations skipped
    assert [MNEMONICS[op] for _o, op, _t in items[:3]] == ["local.get", "local.get", "i32.load"]
    assert items[2][2] == "2 4"  # align log2, offset: as wasm-objdump prints
    lines = disassemble(data, s, e)
    assert lines[-1] == "end" and "i64.store32 2 16" in lines
    _, c = build("mvp")
    ctl = _by_name(c)["control"]
    s, e = function_body(data, a.module, ctl.index)
    text = disassemble(data, s, e)
    assert "br_table 2 1 0" in text and "call 0" in text
    assert "call_indirect 0 (type 0)" in text


def test_progress_and_workers_agree(build, monkeypatch):
    monkeypatch.setattr(decoder, "PROGRESS_STEP", 64 * 1024)

    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    calls = []
    one = analyze_module(data, progress=lambda d, t: calls.append((d, t)))
    assert len(calls) >= 5 and calls[-1][0] == calls[-1][1]
    assert [d for d, _t in calls] == sorted(d for d, _t in calls)
    assert all(d <= t for d, t in calls)
    two = analyze_module(data, workers=2)
    assert one.functions == two.functions
    assert one.toolchain_version == two.toolchain_version


def test_facts_are_deterministic(build):
    data, a = build("mvp")
    b = analyze_module(data)
    assert a.functions == b.functions
