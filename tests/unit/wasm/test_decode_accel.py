"""The decoder's compiled twin (``kbtool.wasm._cdecoder``, mypyc) gives exactly the pure
decoder's facts, on corpus modules, on every hand-made wat family and on malformed bodies;
``KBTOOL_DECODE`` chooses; the fork pool decodes with it. Tests comparing the two skip
cleanly when no compiled twin is built (``python -m kbtool.lift.accel build``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kbtool.wasm import WasmFormatError, active, decoder, facts
from testkit.wasmbuild import CORPUS, have_wabt, tiny_module, wasm_builder
from tests.support.paths import ROOT

FIXTURES = [
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
    "facts_b",
    "facts_c",
    "roles",
    "datamodel",
]
CORPUS_MODULES = [
    "release/sql.js-1.12.0.sql-wasm.wasm",
    "gt/zstd-1.5.7.O2.stripped.wasm",
    "gt/zstd-1.5.6.Os.named.wasm",
]

COMPILED = active.load_compiled()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled decoder {active.compiled_state()}"
)


def _ranges(mod, data: bytes) -> list[tuple]:
    """Every defined function's facts tuple, decoded by ``mod`` (pure or compiled)."""
    ctx = facts._Ctx(data, facts.parse_module(data))
    return mod.analyze_range(ctx, 0, len(ctx.m.code))


@pytest.fixture(scope="module")
def wat(tmp_path_factory):
    if not have_wabt():
        pytest.skip("wabt not installed")
    return wasm_builder(tmp_path_factory.mktemp("accel"))


@needs_twin
def test_twin_is_the_compiled_extension():
    assert active.is_compiled(COMPILED)
    assert not active.is_compiled(decoder)
    assert COMPILED.analyze_range is not decoder.analyze_range


@needs_twin
@pytest.mark.parametrize("fixture", FIXTURES)
def test_wat_families_identical(wat, fixture):
    for debug_names in (False, True):
        data = wat(fixture, debug_names)
        pure = _ranges(decoder, data)
        assert pure, fixture
        assert _ranges(COMPILED, data) == pure


@needs_twin
@pytest.mark.parametrize("rel", CORPUS_MODULES)
def test_corpus_modules_identical(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    pure = _ranges(decoder, data)
    compiled = _ranges(COMPILED, data)
    assert len(compiled) == len(pure) > 100
    assert compiled == pure


BAD_BODIES = [
    b"\x41",  # i32.const without its immediate, no end
    b"\x41\x80\x80\x80\x80\x80\x00\x0b",  # over-long LEB
    b"\x0b\x01\x0b",  # instructions after the final end
    b"\xfc\x7f\x0b",  # unknown prefixed opcode
    b"\x02\x7a\x0b\x0b",  # bad block type
    b"\x28\x80\x01\x00\x0b",  # memarg alignment out of range
]


@needs_twin
@pytest.mark.parametrize("body", BAD_BODIES)
def test_malformed_bodies_fail_alike(body):
    data = tiny_module(body)
    errs = []
    for mod in (decoder, COMPILED):
        with pytest.raises(WasmFormatError) as e:
            _ranges(mod, data)
        errs.append(str(e.value))
    assert errs[0] == errs[1]


def _child(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def test_env_forces_the_pure_decoder():
    p = _child(
        "from kbtool.wasm import active; print(active.PATH, active.IMPL.__name__)",
        {"KBTOOL_DECODE": "pure"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["pure", "kbtool.wasm.decoder"]


def test_env_compiled_without_a_ready_twin_is_an_error():
    """A stale stamp (the source changed since the build) is never used: asking for the
    compiled decoder then fails with a one-line hint instead of running stale code."""
    p = _child(
        "from kbtool.wasm import active; print(active.PATH, active.compiled_state())",
        {"KBTOOL_DECODE": "compiled"},
    )
    if COMPILED is not None:
        assert p.stdout.split() == ["compiled", "ready"]
        return
    assert p.returncode != 0
    assert "KBTOOL_DECODE=compiled but the compiled decoder is" in p.stderr


@needs_twin
def test_stale_stamp_means_pure(monkeypatch, tmp_path):
    stamp = tmp_path / "_cdecoder.sha256"
    stamp.write_text("0" * 64 + "\n")
    monkeypatch.setattr(active, "STAMP", stamp)
    assert active.compiled_state() == "stale"
    assert active.load_compiled() is None


@needs_twin
def test_fork_pool_decodes_with_the_twin_identically():
    """``analyze_module(workers=2)`` forks workers that run the compiled loop; their facts
    equal the pure decoder's in this process (child processes choose by the same rule)."""
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    code = (
        "import json, sys\n"
        "from kbtool.wasm import active, facts\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "a = facts.analyze_module(data, workers=int(sys.argv[2]))\n"
        "print(json.dumps([active.PATH, [[f.index, f.shape_hash, f.body_hash, f.instr_count,"
        " f.strings, f.calls] for f in a.functions]]))\n"
    )
    out = {}
    for mode, workers in (("compiled", "2"), ("pure", "1")):
        env = {**os.environ, "KBTOOL_DECODE": mode}
        p = subprocess.run(
            [sys.executable, "-c", code, str(path), workers],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        out[mode] = json.loads(p.stdout)
    assert out["compiled"][0] == "compiled" and out["pure"][0] == "pure"
    assert out["compiled"][1] == out["pure"][1]


def test_decode_pool_only_for_the_pure_decoder_on_mid_size_modules():
    """A 10 MB module decodes on two processes with the pure decoder and in-process with
    the compiled one (the pool's pickling costs more than it saves there); other
    whole-module passes (``decode_workers``) keep two processes."""
    code = (
        "from kbtool.wasm import active, facts\n"
        "print(active.PATH, facts.analyze_workers(10_000_000), facts.analyze_workers(100_000),"
        " facts.decode_workers(10_000_000))"
    )
    env = {k: v for k, v in os.environ.items() if k != "KBTOOL_PARALLEL_DECODE_BYTES"}
    pure = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "KBTOOL_DECODE": "pure"},
        timeout=60,
    )
    assert pure.returncode == 0, pure.stderr
    cores = os.cpu_count() or 1
    two = "2" if cores > 1 else "1"
    assert pure.stdout.split() == ["pure", two, "1", two]
    if COMPILED is None:
        return
    comp = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in env.items() if k != "KBTOOL_DECODE"},
        timeout=60,
    )
    assert comp.stdout.split() == ["compiled", "1", "1", two]


@needs_twin
def test_compiled_memory_accesses_share_one_tuple_per_value():
    """Equal ``(op, offset, width)`` memory accesses are one object in the compiled output
    as in the pure one (ffmpeg: a tuple per access would cost ~75 MB more)."""
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    for mod in (decoder, COMPILED):
        ops = [t for row in _ranges(mod, data) for t in row[17]]
        assert len(ops) > 10_000
        assert len({id(t) for t in ops}) == len(set(ops)), mod.__name__
