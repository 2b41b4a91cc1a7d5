"""The data model's compiled reference walk (``kbtool.analysis._cdatawalk``, the mypyc twin
of :mod:`kbtool.analysis.datawalk`) gives exactly the pure scan's references
(:mod:`kbtool.analysis.datascan`) and so the same data model, on corpus modules, the wat
families and a Go build; ``KBTOOL_DATASCAN`` chooses; a stale build is never used. Tests
that need the twin skip cleanly when it is not built (``python -m kbtool.lift.accel build
datawalk``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datascan, datawalk_active
from kbtool.analysis.datatypes import DataRef
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS, have_wabt, wasm_builder
from tests.support.paths import FIXTURES, ROOT

COMPILED = datawalk_active.load_compiled()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled data walk {datawalk_active.compiled_state()}"
)

CORPUS_MODULES = [
    "gt/zstd-1.5.6.Os.stripped.wasm",
    "gt/zstd-1.5.7.O2.named.wasm",
    "release/sql.js-1.10.3.sql-wasm.wasm",
    "release/sql.js-1.12.0.sql-wasm.wasm",
]
FIXTURE_NAMES = ["datamodel", "roles", "simd", "atomics", "bulk", "memory64", "eh", "elements"]


def _both(data: bytes, go: bool = False) -> tuple[list[list[DataRef]], list[list[DataRef]]]:
    """Every body's references, by the pure scan and by the compiled walk, with the
    bounds ``build_data_model`` uses."""
    a = analyze_module(data)
    sp = None if go else stack_pointer_global(a, data)
    _passive, lo, hi, mem_hi = dmod.scan_bounds(a, data, sp)
    plan = dmod.scan_plan(a, lo, mem_hi)
    pure = datascan.module_refs(data, plan, lo, hi, go, mem_hi)
    compiled = COMPILED.module_refs(data, plan, lo, hi, go, mem_hi, DataRef)
    return pure, compiled


def _model(data: bytes, go: bool, compiled: bool, monkeypatch) -> dmod.DataModel:
    monkeypatch.setattr(datawalk_active, "IMPL", COMPILED if compiled else None)
    a = analyze_module(data)
    sp = None if go else stack_pointer_global(a, data)
    return dmod.build_data_model(a, data, stack_pointer=sp, go=go)


@needs_twin
def test_twin_is_the_compiled_extension():
    assert not str(COMPILED.__file__).endswith(".py")
    assert COMPILED.__name__ == "kbtool.analysis._cdatawalk"


@needs_twin
@pytest.mark.parametrize("rel", CORPUS_MODULES)
def test_corpus_modules_same_references_and_model(rel, monkeypatch):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    pure, compiled = _both(data)
    assert sum(map(len, pure)) > 1000
    assert compiled == pure
    # the whole model (items, labels, counts, globals) built either way
    assert _model(data, False, True, monkeypatch) == _model(data, False, False, monkeypatch)


@needs_twin
def test_wat_families_same_references(tmp_path_factory):
    if not have_wabt():
        pytest.skip("wabt not installed")
    wat = wasm_builder(tmp_path_factory.mktemp("walk"))
    found = 0
    for name in FIXTURE_NAMES:
        pure, compiled = _both(wat(name, False))
        assert compiled == pure, name
        found += sum(map(len, pure))
    assert found > 0


@needs_twin
def test_go_build_same_references_and_go_strings(tmp_path, monkeypatch):
    """Go: (pointer, length) pairs counted in instructions, i64 constants, no constant
    skipped as too small (a length is one)."""
    if shutil.which("go") is None:
        pytest.skip("go not installed")
    out = tmp_path / "strings.wasm"
    src = FIXTURES / "go" / "strings" / "main.go"
    env = dict(
        os.environ,
        GOOS="js",
        GOARCH="wasm",
        CGO_ENABLED="0",
        GOCACHE=os.environ.get("GOCACHE", "/tmp/kbtool-go-cache"),
    )
    subprocess.run(
        ["go", "build", "-o", str(out), str(src)],
        check=True,
        env=env,
        cwd=src.parent,
        capture_output=True,
    )
    data = out.read_bytes()
    pure, compiled = _both(data, go=True)
    assert compiled == pure
    assert any(r.kind == "gostring" for refs in compiled for r in refs)
    assert _model(data, True, True, monkeypatch) == _model(data, True, False, monkeypatch)


@needs_twin
def test_build_data_model_uses_the_walk(monkeypatch):
    """With the twin loaded, the pure scan never runs (no fork pool either)."""
    data = (ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes()
    monkeypatch.setattr(datawalk_active, "IMPL", COMPILED)

    def boom(*a, **k):
        raise AssertionError("the pure scan ran")

    monkeypatch.setattr(dmod, "module_refs", boom)
    monkeypatch.setattr(dmod, "parallel_refs", boom)
    a = analyze_module(data)
    model = dmod.build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    assert len(model.refs) > 1000


def _child(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def test_env_forces_the_pure_scan():
    p = _child(
        "from kbtool.analysis import datawalk_active as d; print(d.PATH, d.IMPL)",
        {"KBTOOL_DATASCAN": "pure"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["pure", "None"]


def test_env_compiled_without_a_ready_twin_is_an_error():
    p = _child(
        "from kbtool.analysis import datawalk_active as d; print(d.PATH, d.compiled_state())",
        {"KBTOOL_DATASCAN": "compiled"},
    )
    if COMPILED is not None:
        assert p.stdout.split() == ["compiled", "ready"]
        return
    assert p.returncode != 0
    assert "KBTOOL_DATASCAN=compiled but the compiled data walk is" in p.stderr


@needs_twin
def test_stale_stamp_means_pure(monkeypatch, tmp_path):
    stamp = tmp_path / "_cdatawalk.sha256"
    stamp.write_text("0" * 64 + "\n")
    monkeypatch.setattr(datawalk_active, "STAMP", stamp)
    assert datawalk_active.compiled_state() == "stale"
    assert datawalk_active.load_compiled() is None


@needs_twin
def test_a_failing_walk_hands_the_module_to_the_pure_scan(monkeypatch, caplog):
    """A body the compiled walk cannot read (it trusts the decoder's validation) is never a
    wrong model: the pure scan answers instead, and the failure is logged."""
    from types import SimpleNamespace

    data = (ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes()
    want = _model(data, False, False, monkeypatch)

    def truncated(*_a, **_k):
        raise IndexError("index out of range")

    fake = SimpleNamespace(
        module_refs=truncated,
        module_refs_flat=truncated,
        count_item_refs=COMPILED.count_item_refs,
        scan_plan=COMPILED.scan_plan,
    )
    monkeypatch.setattr(datawalk_active, "IMPL", fake)
    a = analyze_module(data)
    got = dmod.build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    assert got == want
    assert "compiled data walk failed" in caplog.text
