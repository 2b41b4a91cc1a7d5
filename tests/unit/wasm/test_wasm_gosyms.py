"""Go symbol recovery (kbtool.wasm.gosyms): real Go builds checked against their own name
section, stripped builds, all four pclntab layouts, non-Go modules and corrupt tables."""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.wasm import parse_module
from kbtool.wasm.gosyms import (
    FORMATS,
    KNOWN_MAGICS,
    MAX_NAME_BYTES,
    GoSymbols,
    GoSymbolsError,
    recover_go_names,
)
from testkit.gopcln import PCLNTAB_ADDR, go_like_module, pclntab
from testkit.wasmbuild import CORPUS, build_wat, have_wabt
from tests.support.paths import FIXTURES, ROOT

HELLO = FIXTURES / "go" / "hello"
NAMES = [
    "go:buildid",
    "runtime.mallocgc",
    "main.main",
    "main.(*greeter).Greet",
    "main.shout.func1",
    "github.com/evanw/esbuild/internal/js_parser.(*parser).parseStmt",
    "slices.Sort[...]",
]


def _format_for(version: str) -> str:
    minor = int(re.match(r"go1\.(\d+)", version).group(1))
    return (
        "go1.2-1.15"
        if minor < 16
        else "go1.16-1.17"
        if minor < 18
        else "go1.18-1.19"
        if minor < 20
        else "go1.20-1.24"
        if minor < 25
        else "go1.25+"
    )


def _linker_name(go_name: str) -> str:
    """The name Go's wasm linker writes into the name section (``[^\\w.]`` -> ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", go_name)


def _same_function(go_name: str, section_name: str) -> bool:
    """pclntab names equal the name section's, except that the pclntab elides type
    arguments (first ``[`` to last ``]`` -> ``[...]``, cmd/link/internal/ld/pcln.go)."""
    if "[...]" not in go_name:
        return _linker_name(go_name) == section_name
    head, _, tail = go_name.partition("[...]")
    pat = re.escape(_linker_name(head)) + "_.*_" + re.escape(_linker_name(tail))
    return re.fullmatch(pat, section_name) is not None


# ----------------------------------------------------------------------------- real Go builds


@pytest.fixture(scope="session")
def go_builds(tmp_path_factory) -> dict[str, Path]:
    """tests/fixtures/go/hello built with the ``go`` on PATH (skipped without one)."""
    if shutil.which("go") is None:
        pytest.skip("go toolchain not on PATH (apt-get install golang-go)")
    out = tmp_path_factory.mktemp("go-hello")
    subprocess.run(["sh", str(HELLO / "build.sh"), str(out)], check=True, capture_output=True)
    return {p.name: p for p in out.glob("*.wasm")}


@pytest.fixture(scope="session")
def go_version() -> str:
    return subprocess.run(
        ["go", "env", "GOVERSION"], check=True, capture_output=True, text=True
    ).stdout.strip()


def _recover(path: Path) -> tuple[GoSymbols, object]:
    module = parse_module(path.read_bytes())
    syms = recover_go_names(module)
    assert syms is not None
    return syms, module


def test_real_build_names_equal_the_name_section(go_builds, go_version):
    syms, module = _recover(go_builds["hello.js.wasm"])
    assert module.func_names, "Go's linker keeps a name section without -s"
    defined = range(module.num_func_imports, module.num_functions)
    assert set(module.func_names) == set(defined)
    wrong = {
        i: (syms.names.get(i), n)
        for i, n in module.func_names.items()
        if not _same_function(syms.names.get(i, ""), n)
    }
    assert wrong == {}
    assert syms.coverage == 1.0 and syms.unmapped == 0 and syms.unnamed_functions == 0
    assert syms.pclntab_funcs == syms.mapped == len(defined)
    assert syms.go_version == go_version and syms.version_source == "producers"
    assert syms.pclntab_format == _format_for(go_version)
    assert syms.mapping == "element-table"
    names = set(syms.names.values())
    assert {
        "main.main",
        "main.shout",
        "main.(*greeter).Greet",
        "main.shout.func1",
        "runtime.mallocgc",
        "fmt.Fprintf",
    } <= names
    exports = {e.name: syms.names[e.index] for e in module.exports if e.kind == "func"}
    assert exports == {
        "run": "wasm_export_run",
        "resume": "wasm_export_resume",
        "getsp": "wasm_export_getsp",
    }
    ev = syms.evidence(next(i for i, n in syms.names.items() if n == "main.main"))
    assert ev["source"] == "go-pclntab" and ev["go_version"] == go_version
    assert int(ev["entry_pc"], 16) >> 16 >= 0x1000 and int(ev["entry_pc"], 16) & 0xFFFF == 0


def test_stripped_build_recovers_the_same_names(go_builds):
    full, _ = _recover(go_builds["hello.js.wasm"])
    stripped, module = _recover(go_builds["hello.js.stripped.wasm"])
    assert module.func_names == {} and module.custom("name") is None
    assert sorted(stripped.names.values()) == sorted(full.names.values())
    assert stripped.coverage == 1.0


def test_no_custom_sections_at_all(go_builds, go_version, tmp_path):
    if shutil.which("wasm-tools") is None:
        pytest.skip("wasm-tools not on PATH")
    bare = tmp_path / "bare.wasm"
    subprocess.run(
        ["wasm-tools", "strip", "--all", str(go_builds["hello.js.wasm"]), "-o", str(bare)],
        check=True,
    )
    full, _ = _recover(go_builds["hello.js.wasm"])
    syms, module = _recover(bare)
    assert module.customs == []
    assert syms.names == full.names
    assert (syms.go_version, syms.version_source) == (go_version, "runtime.buildVersion")


def test_wasip1_build_when_the_toolchain_has_it(go_builds):
    if "hello.wasip1.wasm" not in go_builds:
        pytest.skip("GOOS=wasip1 needs Go >= 1.21")
    syms, module = _recover(go_builds["hello.wasip1.wasm"])
    wrong = [
        i for i, n in module.func_names.items() if not _same_function(syms.names.get(i, ""), n)
    ]
    assert wrong == [] and syms.coverage == 1.0


# ----------------------------------------------------------------------------- synthetic layouts


LAYOUTS = [  # (magic, Go 1.25+ function-number entries, expected format, a matching version)
    (0xFFFFFFFB, False, "go1.2-1.15", "go1.15"),
    (0xFFFFFFFA, False, "go1.16-1.17", "go1.17.2"),
    (0xFFFFFFF0, False, "go1.18-1.19", "go1.19.8"),
    (0xFFFFFFF1, False, "go1.20-1.24", "go1.21.5"),
    (0xFFFFFFF1, True, "go1.25+", "go1.27.3"),
]


def test_layouts_cover_every_supported_format():
    assert {m for m, *_ in LAYOUTS} == set(KNOWN_MAGICS)
    assert [fmt for _, _, fmt, _ in LAYOUTS] == list(FORMATS)


@pytest.mark.parametrize(("magic", "by_index", "fmt", "version"), LAYOUTS)
@pytest.mark.parametrize("with_table", [True, False])
def test_every_known_layout(magic, by_index, fmt, version, with_table):
    data = go_like_module(
        NAMES,
        magic=magic,
        by_index=by_index,
        imports=3,
        element_table=with_table,
        producers_version=version,
    )
    syms = recover_go_names(parse_module(data))
    assert syms.names == {3 + i: n for i, n in enumerate(NAMES)}
    assert syms.pclntab_format == fmt and syms.pclntab_magic == magic
    assert syms.entry_pcs == {3 + i: (0x1000 + i) << 16 for i in range(len(NAMES))}
    assert syms.pclntab_address == PCLNTAB_ADDR
    assert syms.mapping == ("element-table" if with_table else "linker-formula")
    assert (syms.go_version, syms.version_source) == (version, "producers")
    assert syms.notes == []


def test_entry_encoding_that_contradicts_the_version_is_noted():
    data = go_like_module(NAMES, by_index=True, producers_version="go1.22.0")
    syms = recover_go_names(parse_module(data))
    assert syms.pclntab_format == "go1.25+" and len(syms.names) == len(NAMES)
    assert syms.notes == ["entry encoding go1.25+ is unexpected for go1.22.0"]


def test_mapping_follows_the_function_table_not_the_order():
    """A table reordered by a post-processor still names the right functions."""
    data = go_like_module(NAMES[:3], imports=1)
    module = parse_module(data)
    module.elements[0].func_indices.reverse()
    syms = recover_go_names(module)
    assert syms.names == {3: NAMES[0], 2: NAMES[1], 1: NAMES[2]}


def test_pclntab_split_over_zero_gaps():
    """Go's linker drops runs of zeros and emits many data segments; gaps read as zero."""
    table = pclntab(0xFFFFFFF1, NAMES)
    data = go_like_module(NAMES, table=b"")
    module = parse_module(data)
    seg = module.data_segments[0]
    pieces, pos = [], 0
    for m in re.finditer(rb"\0{8,}", table):
        pieces.append((pos, table[pos : m.start()]))
        pos = m.end()
    pieces.append((pos, table[pos:]))
    assert len(pieces) > 2
    module.data_segments = [type(seg)(0, PCLNTAB_ADDR + p, d, False) for p, d in pieces if d]
    syms = recover_go_names(module)
    assert list(syms.names.values()) == NAMES


def test_names_are_capped_and_undecodable_bytes_replaced():
    long = "p." + "x" * (MAX_NAME_BYTES + 50)
    syms = recover_go_names(parse_module(go_like_module(["ok", long, b"bad\xff\xfe.name"])))
    assert syms.names[2] == "ok"
    assert syms.names[3] == long[:MAX_NAME_BYTES]
    assert syms.names[4] == "bad\ufffd\ufffd.name"
    assert any("1 names longer than" in n for n in syms.notes)


def test_version_from_a_string_header_without_custom_sections():
    """runtime.buildVersion: a "go1.N" string only counts when a Go string header points at it."""
    text = b"go1.22.3"
    ptr = 0x30000
    header = struct.pack("<QQ", ptr, len(text))
    decoy = (0x40000, b"see go1.9 release notes")
    data = go_like_module(NAMES, extra_data=[(ptr, text), (0x38000, header), decoy])
    syms = recover_go_names(parse_module(data))
    assert (syms.go_version, syms.version_source) == ("go1.22.3", "runtime.buildVersion")
    no_header = go_like_module(NAMES, extra_data=[(ptr, text), decoy])
    assert recover_go_names(parse_module(no_header)).go_version is None


# ----------------------------------------------------------------------------- not Go


@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not on PATH")
def test_tiny_wat_module_is_not_go(tmp_path):
    wasm = build_wat(
        '(module (memory 1) (data (i32.const 16) "go1.21 \\f1\\ff\\ff\\ff")'
        ' (func (export "f") (result i32) i32.const 1))',
        tmp_path,
    )
    assert recover_go_names(parse_module(wasm.read_bytes())) is None


def test_zstd_corpus_modules_are_not_go():
    files = sorted(CORPUS.glob("gt/zstd-*.wasm"))[:4]
    if not files:
        pytest.skip("corpus not present")
    for f in files:
        assert recover_go_names(parse_module(f.read_bytes())) is None, f.name


def test_pclntab_of_another_architecture_is_not_used():
    """An amd64-style table (PCs not (n << 16)) in a non-Go module is ignored."""
    table = pclntab(0xFFFFFFF1, NAMES, pc_of=lambda i: 0x401000 + 0x40 * i, text_start=0x401000)
    data = go_like_module(NAMES, table=table, buildid=False, element_table=False)
    assert recover_go_names(parse_module(data)) is None
    with pytest.raises(GoSymbolsError, match="not a GOARCH=wasm table"):
        recover_go_names(parse_module(go_like_module(NAMES, table=table)))


# ----------------------------------------------------------------------------- corrupt input


def test_unknown_layout_is_reported_not_guessed():
    data = go_like_module(NAMES, magic=0xFFFFFFF2)
    with pytest.raises(GoSymbolsError, match=r"unknown pclntab magic 0xfffffff2"):
        recover_go_names(parse_module(data))
    plain = go_like_module(NAMES, magic=0xFFFFFFF2, buildid=False, element_table=False)
    assert recover_go_names(parse_module(plain)) is None


def test_go_module_without_pclntab_is_reported():
    with pytest.raises(GoSymbolsError, match="no pclntab header"):
        recover_go_names(parse_module(go_like_module(NAMES, table=b"")))


@pytest.mark.parametrize("nfunc", [0, 2**31, 2**40, 2**64 - 1])
def test_declared_counts_are_checked(nfunc):
    table = bytearray(pclntab(0xFFFFFFF1, NAMES))
    struct.pack_into("<Q", table, 8, nfunc)
    with pytest.raises(GoSymbolsError, match="does not fit|functab"):
        recover_go_names(parse_module(go_like_module(NAMES, table=bytes(table))))


def test_offsets_outside_the_data_are_errors():
    table = bytearray(pclntab(0xFFFFFFF1, NAMES))
    struct.pack_into("<Q", table, 8 + 3 * 8, 2**33)  # funcnameOffset
    with pytest.raises(GoSymbolsError, match="outside initialised data"):
        recover_go_names(parse_module(go_like_module(NAMES, table=bytes(table))))


@pytest.mark.parametrize(("magic", "by_index", "fmt", "version"), LAYOUTS)
def test_truncated_and_bit_flipped_tables_never_escape(magic, by_index, fmt, version):
    table = pclntab(magic, NAMES, by_index=by_index)
    rng = random.Random(f"{fmt}")
    variants = [table[:k] for k in range(0, len(table), 7)]
    for _ in range(150):
        b = bytearray(table)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(8, len(b))] = rng.randrange(256)
        variants.append(bytes(b))
    outcomes = {"ok": 0, "error": 0}
    for v in variants:
        try:
            syms = recover_go_names(parse_module(go_like_module(NAMES, table=v)))
        except GoSymbolsError as exc:
            assert "\n" not in str(exc)
            outcomes["error"] += 1
        else:
            assert syms is not None and all(
                len(n.encode()) <= MAX_NAME_BYTES * 3 for n in syms.names.values()
            )
            outcomes["ok"] += 1
    assert outcomes["error"] > 0 and outcomes["ok"] > 0


def test_benchmark_smoke():
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gosyms.py"),
            "--smoke",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert res.stdout.count("named from the pclntab (100.0%)") == len(LAYOUTS)
    for _magic, _by_index, fmt, _version in LAYOUTS:
        assert f"{fmt} table of 300" in res.stdout


def test_headers_sharing_one_functab_are_parsed_once():
    """Copies of a header that point at one big functab cost one parse, not one each."""
    names = [f"p.f{i}" for i in range(2000)]
    table = pclntab(0xFFFFFFF1, names, pc_of=lambda i: 0x401000 + 0x40 * i, text_start=0x401000)
    copies = []
    for k in range(1, 6):
        addr = PCLNTAB_ADDR - 0x100 * k
        hdr = bytearray(table[:72])
        words = struct.unpack_from("<8Q", hdr, 8)
        shift = PCLNTAB_ADDR - addr
        struct.pack_into("<8Q", hdr, 8, *words[:3], *(w + shift for w in words[3:]))
        copies.append((addr, bytes(hdr)))
    data = go_like_module(names, table=table, extra_data=copies)
    with pytest.raises(GoSymbolsError) as exc:
        recover_go_names(parse_module(data))
    msg = str(exc.value)
    assert "maps 0 of 2000 entries" in msg and msg.count("already examined") == 2
