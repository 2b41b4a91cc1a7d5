"""kbtool.wasm reader: sections, module model, custom sections, malformed input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbtool.wasm import (
    FuncType,
    WasmFormatError,
    analyze_module,
    parse_module,
)
from kbtool.wasm.leb import encode_sleb, encode_uleb, read_sleb, read_uleb
from testkit.wasmbuild import (
    CORPUS,
    custom_section,
    have_wabt,
    module,
    name,
    producers_payload,
    section,
    tiny_module,
    uleb,
    vec,
    wasm_builder,
)

needs_wabt = pytest.mark.skipif(not have_wabt(), reason="wabt not installed")


@pytest.fixture(scope="module")
def wasm(tmp_path_factory):
    if not have_wabt():
        pytest.skip("wabt not installed")
    return wasm_builder(tmp_path_factory.mktemp("wasm"))


# ----------------------------------------------------------------------------- model


def test_functype_text():
    assert FuncType(("i32", "i32"), ("i32",)).text() == "(i32, i32) -> i32"
    assert FuncType(("i32",), ()).text() == "(i32) -> ()"
    assert FuncType((), ("i32", "i64")).text() == "() -> (i32, i64)"
    assert FuncType().text() == "() -> ()"


def test_mvp_module(wasm):
    m = parse_module(wasm("mvp"))
    assert [t.text() for t in m.types][:2] == ["(i32, i32) -> i32", "(i32, i32) -> ()"]
    assert [(i.module, i.field, i.kind) for i in m.imports] == [
        ("env", "log", "func"),
        ("env", "tbl", "table"),
        ("env", "base", "global"),
        ("env", "counter", "global"),
    ]
    assert m.num_func_imports == 1 and m.func_imports[0].type_index == 1
    assert len(m.func_type_indices) == len(m.code) == 6
    assert m.func_type(1).text() == "() -> ()"  # $init
    assert m.func_type(2).text() == "(i32, i32) -> i32"  # $add
    assert m.tables[0].imported and m.tables[0].min == 4 and m.tables[0].reftype == "funcref"
    mem = m.memories[0]
    assert (mem.min, mem.max, mem.shared, mem.memory64, mem.imported) == (1, 2, False, False, False)
    assert not m.shared_memory
    g = m.globals
    assert [(x.valtype, x.mutable, x.imported) for x in g] == [
        ("i32", False, True),
        ("i64", True, True),
        ("i32", True, False),
        ("i64", False, False),
    ]
    assert g[2].init == 65536 and g[3].init == 42
    assert {(e.name, e.kind, e.index) for e in m.exports} == {
        ("memory", "memory", 0),
        ("add", "func", 2),
        ("plus", "func", 2),
        ("control", "func", 4),
        ("memory_ops", "func", 6),
    }
    assert m.start == 1
    assert [(e.mode, e.table_index, e.offset, e.func_indices) for e in m.elements] == [
        ("active", 0, 0, [2, 3])
    ]
    assert [(d.offset, d.data, d.passive) for d in m.data_segments] == [
        (1024, b"Hello, world!\0", False),
        (1040, bytes(range(1, 9)), False),
    ]
    for d in m.data_segments:
        assert wasm("mvp")[d.file_offset : d.file_offset + len(d.data)] == d.data
    # code offsets: start after the size LEB, end exclusive, bodies end with `end`
    data = wasm("mvp")
    for s, e in m.code:
        assert data[e - 1] == 0x0B and s < e
    assert [s.name for s in m.sections][:3] == ["type", "import", "function"]


def test_name_section(wasm):
    m = parse_module(wasm("mvp", debug_names=True))
    assert m.module_name == "mvp"
    assert m.func_names[0] == "log"
    assert m.func_names[4] == "control"
    assert m.local_names[4] == {0: "n", 1: "i", 2: "acc"}
    assert m.custom("name") is not None
    assert parse_module(wasm("mvp")).func_names == {}


def test_producers_and_target_features(wasm):
    prod = producers_payload(
        {
            "language": [("Rust", "")],
            "processed-by": [("rustc", "1.80.0 (051478957 2024-07-21)"), ("walrus", "0.20.3")],
        }
    )
    feats = vec([b"+" + name("sign-ext"), b"-" + name("simd128"), b"=" + name("atomics")])
    data = (
        wasm("signext_sat")
        + custom_section("producers", prod)
        + custom_section("target_features", feats)
        + custom_section("my.custom", b"\x01\x02\x03")
    )
    m = parse_module(data)
    assert m.producers == {
        "language": ["Rust"],
        "processed-by": ["rustc 1.80.0 (051478957 2024-07-21)", "walrus 0.20.3"],
    }
    assert m.target_features == ["+sign-ext", "-simd128", "=atomics"]
    c = m.custom("my.custom")
    assert c.data == b"\x01\x02\x03" and data[c.offset : c.offset + 3] == c.data
    assert [c.name for c in m.customs] == ["producers", "target_features", "my.custom"]
    assert m.warnings == []


def test_malformed_custom_sections_are_tolerated(wasm):
    data = (
        wasm("signext_sat")
        + custom_section("producers", b"\x05\x03abc")
        + custom_section("name", b"\x01\x10\x01")
    )
    m = parse_module(data)
    assert m.producers == {}
    assert len(m.warnings) == 2 and "producers" in m.warnings[0]
    assert m.custom("name").data == b"\x01\x10\x01"  # kept raw


def test_element_segments_all_eight_forms():
    ref_f0 = b"\xd2\x00\x0b"
    null = b"\xd0\x70\x0b"
    off = b"\x41\x03\x0b"
    segs = [
        b"\x00" + off + vec([b"\x00", b"\x01"]),  # 0 active table 0, funcidx
        b"\x01\x00" + vec([b"\x01"]),  # 1 passive, elemkind
        b"\x02\x01" + off + b"\x00" + vec([b"\x00"]),  # 2 active table 1
        b"\x03\x00" + vec([b"\x01"]),  # 3 declarative
        b"\x04" + off + vec([ref_f0, null]),  # 4 active table 0, exprs
        b"\x05\x70" + vec([null]),  # 5 passive exprs
        b"\x06\x01" + off + b"\x70" + vec([ref_f0]),  # 6 active table 1, exprs
        b"\x07\x70" + vec([ref_f0]),  # 7 declarative exprs
    ]
    data = module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00", b"\x00"])),
        section(4, vec([b"\x70\x00\x08", b"\x70\x00\x08"])),
        section(9, vec(segs)),
        section(10, vec([b"\x02\x00\x0b", b"\x02\x00\x0b"])),
    )
    m = parse_module(data)
    got = [(e.mode, e.table_index, e.offset, e.reftype, e.func_indices) for e in m.elements]
    assert got == [
        ("active", 0, 3, "funcref", [0, 1]),
        ("passive", 0, None, "funcref", [1]),
        ("active", 1, 3, "funcref", [0]),
        ("declarative", 0, None, "funcref", [1]),
        ("active", 0, 3, "funcref", [0, None]),
        ("passive", 0, None, "funcref", [None]),
        ("active", 1, 3, "funcref", [0]),
        ("declarative", 0, None, "funcref", [0]),
    ]


def test_index_runs_and_body_sizes_of_every_leb_length():
    """Type indices, element function indices and body sizes of 1-5 byte LEBs (the one- and
    two-byte ones read inline, a non-canonical ``80 00`` among them) read as their values;
    a u32 past 32 bits is an overflow at its own offset."""
    funcs = [b"\x00", b"\x80\x00", b"\x00"]  # type index 0, the middle one in two bytes
    idx = [b"\x00", b"\x80\x00", b"\x7f", b"\xac\x02", b"\xf0\xa2\x04", b"\xff\xff\xff\xff\x0f"]
    seg = b"\x00\x41\x00\x0b" + vec(idx)
    bodies = [b"\x00" + b"\x01" * n + b"\x0b" for n in (1, 200, 20000)]
    data = module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec(funcs)),
        section(9, vec([seg])),
        section(10, vec([uleb(len(b)) + b for b in bodies])),
    )
    m = parse_module(data)
    assert m.func_type_indices == [0, 0, 0]
    assert m.elements[0].func_indices == [0, 0, 127, 300, 70000, 2**32 - 1]
    assert [e - s for s, e in m.code] == [3, 202, 20002]
    bad = seg[:-5] + b"\xff\xff\xff\xff\x1f"  # 2**33 - 1: past 32 bits
    data = module(section(1, vec([b"\x60\x00\x00"])), section(9, vec([bad])))
    e = _err(data)
    assert "overflow" in str(e) and e.offset == data.index(b"\xff\xff\xff\xff\x1f")


def test_elements_and_extended_const_data(wasm):
    m = parse_module(wasm("elements"))
    assert [e.mode for e in m.elements] == [
        "active",
        "passive",
        "active",
        "declarative",
        "active",
        "passive",
        "active",
        "declarative",
    ]
    assert m.elements[2].table_index == 1 and m.elements[2].offset == 2
    assert m.elements[4].func_indices == [1, None]
    segs = [(d.offset, d.data, d.passive) for d in m.data_segments]
    assert segs == [
        (16, b"const", False),
        (4112, b"extended", False),
        (None, b"relocatable", False),
        (None, b"passive", True),
    ]


def test_memory_flags(wasm):
    m = parse_module(wasm("atomics"))
    assert m.shared_memory and m.memories[0].max == 16
    m64 = parse_module(wasm("memory64"))
    assert m64.memories[0].memory64 and not m64.shared_memory
    assert m64.data_segments[0].offset == 256


def test_tags(wasm):
    m = parse_module(wasm("eh"))
    assert [(i.kind, i.field) for i in m.imports] == [("tag", "ext_tag")]
    assert len(m.tags) == 2
    assert m.types[m.tags[1].type_index].text() == "(i32) -> ()"
    assert ("e", "tag", 1) in {(e.name, e.kind, e.index) for e in m.exports}


def test_gc_types_are_skipped_gracefully():
    struct = b"\x5f" + vec([b"\x7f\x01", b"\x78\x00"])  # struct (mut i32) i8
    array = b"\x5e\x7e\x01"  # array (mut i64)
    func = b"\x60" + vec([b"\x64\x00"]) + vec([b"\x63\x70"])  # (ref 0) -> funcref
    sub = b"\x50" + vec([b"\x00"]) + b"\x5f" + vec([])
    types = vec([b"\x4e" + vec([struct, array]), func, sub, b"\x4f\x00\x60\x00\x00"])
    m = parse_module(module(section(1, types)))
    assert [t.kind for t in m.types] == ["struct", "array", "func", "struct", "func"]
    assert m.types[2].text() == "((ref 0)) -> funcref"
    assert m.types[0].text() == "(struct)"


def test_compact_import_encodings():
    imp = vec([])[:0]
    imp = (
        uleb(4)
        + name("env")
        + name("")
        + b"\x7f"
        + vec([name("a") + b"\x00\x00", name("b") + b"\x03\x7f\x00"])
    )
    imp += name("js") + name("") + b"\x7e" + b"\x00\x00" + vec([name("x"), name("y")])
    m = parse_module(module(section(1, vec([b"\x60\x00\x00"])), section(2, imp)))
    assert [(i.module, i.field, i.kind, i.index) for i in m.imports] == [
        ("env", "a", "func", 0),
        ("env", "b", "global", 0),
        ("js", "x", "func", 1),
        ("js", "y", "func", 2),
    ]
    assert m.num_func_imports == 3


# ----------------------------------------------------------------------------- errors


def _err(data) -> WasmFormatError:
    with pytest.raises(WasmFormatError) as ei:
        analyze_module(data)
    return ei.value


def test_bad_magic_and_version():
    e = _err(b"\x7fELF\x01\x01\x01\x00")
    assert e.offset == 0 and "not a WebAssembly module (bad magic)" in str(e)
    assert str(e).startswith("offset 0x0: expected ")
    assert "bad magic" in str(_err(b""))
    e = _err(b"\0asm\x02\0\0\0")
    assert e.offset == 4 and "version" in e.expected
    assert "component" in str(_err(b"\0asm\x0d\x00\x01\x00"))
    e = _err(b"\0asm\x01\0")
    assert e.offset == 4


def test_bad_section_id():
    e = _err(module(section(1, vec([])), b"\x0e\x00"))
    assert e.offset == 11 and "section id" in e.expected and "14" in str(e)


def test_section_order_and_duplicates():
    t = section(1, vec([]))
    assert "order" in _err(module(t, t)).expected
    assert "order" in _err(module(section(3, vec([])), t)).expected


def test_leb_overflow():
    e = _err(module(b"\x01\xff\xff\xff\xff\x7f"))
    assert e.offset == 9 and "overflow" in str(e)
    e = _err(module(b"\x01\x80\x80\x80\x80\x80\x00"))
    assert "overflow" in str(e)
    # a 6-byte u32 LEB inside a function body (local.get)
    data = tiny_module(b"\x20\x80\x80\x80\x80\x80\x00\x1a\x0b")
    e = _err(data)
    assert "overflow" in str(e) or "LEB" in str(e)


def test_unknown_opcode_with_offset():
    data = tiny_module(b"\x01\xff\x0b")
    body_start = parse_module(data).code[0][0]
    e = _err(data)
    assert e.offset == body_start + 2  # after the local count and the nop
    assert "unknown opcode 0xff" in str(e)
    data = tiny_module(b"\xfc\x30\x0b")
    e = _err(data)
    assert "unknown opcode 0xfc 0x30" in str(e)
    data = tiny_module(b"\xfd\x9a\x01\x0b")  # a hole in the SIMD table
    assert "0xfd" in str(_err(data))


def test_bodies_must_end_with_end():
    e = _err(tiny_module(b"\x01\x01"))
    assert "end" in e.expected
    e = _err(tiny_module(b"\x41"))  # i32.const without its immediate
    assert isinstance(e, WasmFormatError)


def test_count_mismatches():
    data = module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00", b"\x00"])),
        section(10, vec([b"\x02\x00\x0b"])),
    )
    assert "function bodies" in _err(data).expected
    data = module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x05"])),
        section(10, vec([b"\x02\x00\x0b"])),
    )
    assert "type index" in _err(data).expected
    data = module(section(12, uleb(2)), section(11, vec([b"\x01\x01x"])))
    assert "data segments" in _err(data).expected


def test_invalid_utf8_name():
    imp = vec([name(b"\xff\xfe") + name("f") + b"\x00\x00"])
    e = _err(module(section(1, vec([b"\x60\x00\x00"])), section(2, imp)))
    assert "UTF-8" in e.expected


def _section_boundaries(data: bytes) -> set[int]:
    m = parse_module(data)
    return {8} | {s.offset + s.size for s in m.sections}


@needs_wabt
@pytest.mark.parametrize("fixture", ["mvp", "eh", "simd", "elements"])
def test_truncated_at_every_byte(wasm, fixture):
    data = wasm(fixture, debug_names=True)
    ok_at = _section_boundaries(data)
    for n in range(len(data)):
        try:
            analyze_module(data[:n])
        except WasmFormatError as e:
            assert 0 <= e.offset <= n
            continue
        assert n in ok_at, f"truncation at {n} accepted"


@needs_wabt
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_mutations_raise_only_wasm_format_error(wasm, d):
    data = bytearray(wasm(d.draw(st.sampled_from(["mvp", "eh", "bulk", "reftypes"]))))
    for _ in range(d.draw(st.integers(1, 4))):
        i = d.draw(st.integers(0, len(data) - 1))
        op = d.draw(st.sampled_from(["flip", "insert", "delete"]))
        if op == "flip":
            data[i] = d.draw(st.integers(0, 255))
        elif op == "insert":
            data.insert(i, d.draw(st.integers(0, 255)))
        elif len(data) > 9:
            del data[i]
    try:
        analyze_module(bytes(data))
    except WasmFormatError:
        pass


@given(st.integers(0, 2**32 - 1))
def test_uleb_roundtrip(v):
    b = encode_uleb(v)
    assert read_uleb(b, 0, len(b)) == (v, len(b))


@given(st.integers(-(2**63), 2**63 - 1))
def test_sleb_roundtrip(v):
    b = encode_sleb(v)
    assert read_sleb(b, 0, len(b), 64) == (v, len(b))
    if -(2**31) <= v < 2**31:
        assert read_sleb(b, 0, len(b), 32) == (v, len(b))


# ----------------------------------------------------------------------------- corpus


def _manifest():
    p = CORPUS / "MANIFEST.json"
    if not p.is_file():
        return []
    return json.loads(p.read_text())["modules"]


@pytest.mark.skipif(not _manifest(), reason="corpus not present")
@pytest.mark.parametrize("entry", _manifest(), ids=lambda e: e["file"])
def test_corpus_module_matches_manifest(entry):
    m = parse_module((CORPUS / entry["file"]).read_bytes())
    assert m.num_func_imports == entry["imported_functions"]
    assert len(m.code) == entry["defined_functions"]
    assert len(m.exports) == entry["exports"]
    assert sum(1 for e in m.exports if e.kind == "func") == entry["exported_functions"]
    assert [c.name for c in m.customs] == entry["custom_sections"]
    assert (m.producers or None) == entry["producers"]
    assert (m.target_features or None) == entry["target_features"]
    assert m.shared_memory == entry["shared_memory"]
    mem = m.memories[0]
    assert (mem.imported, mem.min, mem.max) == (
        entry["memory"]["imported"],
        entry["memory"]["min_pages"],
        entry["memory"]["max_pages"],
    )
    assert len(m.func_names) == entry["named_functions"]
    assert m.warnings == []


def test_core_does_not_import_front_ends():
    code = (
        "import sys, kbtool.wasm; bad = [m for m in ('textual', 'starlette', 'uvicorn', "
        "'mcp', 'typer') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
