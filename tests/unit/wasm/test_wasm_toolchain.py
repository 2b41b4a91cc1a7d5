"""kbtool.wasm.toolchain: producers first, then evidence in the module."""

from __future__ import annotations

import json

import pytest

from kbtool.wasm import analyze_module, detect_toolchain, parse_module
from testkit.wasmbuild import (
    CORPUS,
    custom_section,
    module,
    name,
    producers_payload,
    section,
    vec,
)

EMPTY = module(section(1, vec([b"\x60\x00\x00"])))


def _with_producers(fields) -> bytes:
    return EMPTY + custom_section("producers", producers_payload(fields))


def _imports(*pairs) -> bytes:
    imps = vec([name(m) + name(f) + b"\x00\x00" for m, f in pairs])
    return module(section(1, vec([b"\x60\x00\x00"])), section(2, imps))


def _data(blob: bytes, imports: bytes = b"") -> bytes:
    seg = b"\x00\x41\x80\x08\x0b" + bytes([len(blob)]) + blob
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        imports,
        section(5, vec([b"\x00\x01"])),
        section(11, vec([seg])),
    )


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"processed-by": [("clang", "22.1.8")]}, "clang 22.1.8"),
        (
            {
                "language": [("Rust", "")],
                "processed-by": [("rustc", "1.83.0 (90b35a623 2024-11-26)"), ("clang", "18.1.2")],
            },
            "rustc 1.83.0",
        ),
        (
            {"processed-by": [("walrus", "0.20.3"), ("rustc", "1.80.0 (x 2024-07-21)")]},
            "rustc 1.80.0",
        ),
        (
            {
                "processed-by": [
                    ("clang", "17.0.0 (https://github.com/llvm x)"),
                    ("Emscripten", "3.1.50"),
                ]
            },
            "Emscripten 3.1.50",
        ),
        ({"processed-by": [("Go", "go1.21.3")]}, "go1.21.3"),
        ({"processed-by": [("wasm-opt", "")]}, "wasm-opt"),
        ({"language": [("C11", "")]}, None),
    ],
)
def test_from_producers(fields, expected):
    m = parse_module(_with_producers(fields))
    assert detect_toolchain(m, []) == expected


def test_rust_runtime_strings():
    path = "/rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/fmt/mod.rs"
    m = parse_module(EMPTY)
    assert detect_toolchain(m, ["x", path]) == "rustc 90b35a623 (from runtime strings)"
    m = parse_module(_data(path.encode()))
    assert detect_toolchain(m, []) == "rustc 90b35a623 (from runtime strings)"


def test_go_evidence():
    m = parse_module(_imports(("gojs", "runtime.wasmExit")))
    assert detect_toolchain(m, []) == "go (from runtime)"
    m = parse_module(_data(b"runtime.main\0go1.21.3\0"))
    assert detect_toolchain(m, []) == "go1.21.3"
    assert (
        detect_toolchain(parse_module(EMPTY), ["runtime.a", "runtime.b", "runtime.c"])
        == "go (from runtime)"
    )


@pytest.mark.parametrize(
    ("blob", "want"),
    [
        (b"x runtime.gopanic\0", "go (from runtime)"),
        (b"runtime.main", "go (from runtime)"),
        (b"runtime.other runtime.\0", None),  # ``runtime.`` alone is no evidence
        (b"gopanic main\0", None),
    ],
)
def test_go_evidence_in_data(blob, want):
    """A data blob with Go's runtime names (behind the one ``runtime.`` scan) marks Go."""
    assert detect_toolchain(parse_module(_data(blob)), []) == want


def test_emscripten_evidence():
    m = parse_module(
        _imports(("env", "emscripten_memcpy_js"), ("wasi_snapshot_preview1", "fd_write"))
    )
    assert detect_toolchain(m, []) == "emscripten"
    m = parse_module(_imports(("a", "a"), ("a", "b"), ("a", "c")))
    assert detect_toolchain(m, []) == "emscripten (minified imports)"


def test_no_evidence():
    assert detect_toolchain(parse_module(EMPTY), []) is None
    m = parse_module(_imports(("env", "puts"), ("wasi_snapshot_preview1", "fd_write")))
    assert detect_toolchain(m, ["hello world"]) is None


EXPECTED = {
    "gt/zstd-1.5.7.O2.named.wasm": "clang 22.1.8",
    "gt/zstd-1.5.7.O2.stripped.wasm": None,  # wasi-libc C, no producers: no evidence
    "release/sql.js-1.12.0.sql-wasm.wasm": "emscripten (minified imports)",
}


@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").is_file(), reason="corpus not present")
@pytest.mark.parametrize("rel, expected", sorted(EXPECTED.items()))
def test_corpus_toolchains(rel, expected):
    a = analyze_module((CORPUS / rel).read_bytes())
    assert a.toolchain_version == expected


@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").is_file(), reason="corpus not present")
def test_big_corpus_toolchains_without_decoding():
    """The large modules: detection needs only the module model and its data."""
    entries = json.loads((CORPUS / "MANIFEST.json").read_text())["modules"]
    got = {
        e["file"]: detect_toolchain(parse_module((CORPUS / e["file"]).read_bytes()), [])
        for e in entries
        if e["file"].startswith("release/")
    }
    assert got["release/lightningcss-wasm-1.29.1.wasm"] == "rustc 1.83.0"
    assert (
        got["release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm"]
        == "emscripten (minified imports)"
    )
    stripped = parse_module((CORPUS / "release/lightningcss-wasm-1.29.1.wasm").read_bytes())
    stripped.producers = {}
    assert detect_toolchain(stripped, []) == "rustc 90b35a623 (from runtime strings)"
