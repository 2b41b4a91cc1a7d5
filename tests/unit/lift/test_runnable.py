"""Runnable C: ``kbtool code 1 --all --runnable -o DIR`` + ``make -C DIR`` gives a native
program that behaves like the wasm under wasmtime (same stdout and exit status).

The WASI command is tests/fixtures/runnable/prog.c, built with clang for wasm32-wasi and
ingested into a real KB; some of its functions get human names that are also C library
names (malloc, memcpy, main, floor, exit) so the build must keep them apart. Cases cover
stdin, args, environ, files under a pre-opened directory (read and written), exit
codes, abort, an out-of-bounds access and a division by zero (traps: 134, as `wasmtime
run` gives)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.runnable import INPUTS, TRAP_EXIT, Case, WasmtimeRunner, run_native, smoke_wasm

pytest.importorskip("wasmtime")
pytestmark = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("gcc") and shutil.which("make")),
    reason="needs clang (wasm32-wasi), gcc and make",
)

LIBC_NAMES = ["malloc", "memcpy", "main", "floor", "exit", "write", "__stack_pointer"]


def kb(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("runnable")
    wasm = smoke_wasm(work)
    if wasm is None:
        pytest.skip("clang cannot build wasm32-wasi programs here (wasi-libc, compiler-rt)")
    db = work / "kb.db"
    r = kb("ingest", str(wasm), db=db)
    assert r.returncode == 0, r.stderr
    funcs = json.loads(kb("functions", "1", "--json", db=db).stdout)
    for f, name in zip(funcs[3:], LIBC_NAMES, strict=False):  # human names = libc names
        r = kb("set-name", f["stable_id"], name, db=db)
        assert r.returncode == 0, r.stderr
    out = work / "c"
    r = kb("code", "1", "--all", "--runnable", "-o", str(out), db=db)
    assert r.returncode == 0, r.stderr
    assert "runnable C" in r.stderr and "make -C" in r.stderr
    # -O0: the test is about behaviour, and gcc builds the C several times faster
    b = subprocess.run(["make", "-s", "-C", str(out), "OPT=-O0"], capture_output=True, text=True)
    assert b.returncode == 0, b.stderr[-2000:]
    return {
        "db": db,
        "out": out,
        "program": out / "program",
        "wasm": wasm,
        "ref": WasmtimeRunner(wasm.read_bytes()),
    }


@pytest.mark.parametrize("case", INPUTS["prog"], ids=lambda c: c.label)
def test_native_run_matches_wasmtime(built, case: Case):
    a = run_native(built["program"], case)
    b = built["ref"].run(case)
    assert (a.code, a.stdout) == (b.code, b.stdout), (a.stderr, b.stderr)


def test_traps_exit_like_wasmtime_run(built):
    for mode in ("abort", "oob", "div"):
        case = Case([mode, "x"] if mode == "div" else [mode])
        a = run_native(built["program"], case)
        assert a.code == TRAP_EXIT == built["ref"].run(case).code
        assert a.stderr.decode().strip().splitlines()[-1].startswith("Error: wasm trap:")


def test_written_file_lands_in_the_preopened_directory(built, tmp_path):
    (tmp_path / "in.txt").write_bytes(b"abc\n")
    (tmp_path / "sub").mkdir()
    a = run_native(built["program"], Case(["file", "in.txt", "sub/../out.txt"]), tmp_path)
    assert a.code == 0, a.stderr
    assert (tmp_path / "out.txt").read_bytes() == b"\ncba"
    # leaving the directory is refused, as by wasmtime
    esc = run_native(built["program"], Case(["file", "../in.txt"]), tmp_path / "sub")
    ref = built["ref"].run(Case(["file", "../in.txt"]), tmp_path / "sub")
    assert esc.code == ref.code == 2


def test_compiled_c_is_the_readable_c(built):
    """module.c is byte for byte what `kbtool code 1 --all` prints, with the KB's names."""
    r = kb("code", "1", "--all", db=built["db"])
    assert r.returncode == 0
    text = (built["out"] / "module.c").read_text()
    assert text == r.stdout
    for name in ("malloc", "memcpy", "floor", "exit"):
        assert f" {name}(" in text
    names_h = (built["out"] / "kb_names.h").read_text()
    assert "#define malloc kbf_malloc" in names_h


def test_runnable_cli_errors(built, tmp_path):
    db = built["db"]
    r = kb("code", "1", "--runnable", db=db)
    assert r.returncode == 1 and "--all --runnable -o DIR" in r.stderr
    r = kb("code", "1", "--all", "--runnable", db=db)
    assert r.returncode == 1 and "-o DIR" in r.stderr
    f = tmp_path / "afile"
    f.write_text("x")
    r = kb("code", "1", "--all", "--runnable", "-o", str(f), db=db)
    assert r.returncode == 1 and "not a directory" in r.stderr and "Traceback" not in r.stderr
    r = kb("code", "7", "--all", "--runnable", "-o", str(tmp_path / "d"), db=db)
    assert r.returncode == 1 and "unknown version" in r.stderr
    assert not (tmp_path / "d").exists()


def test_reactor_module_is_refused_with_one_line(tmp_path):
    wasmtime = pytest.importorskip("wasmtime")
    wasm = tmp_path / "lib.wasm"
    wasm.write_bytes(wasmtime.wat2wasm('(module (func (export "add") (result i32) i32.const 1))'))
    db = tmp_path / "kb.db"
    assert kb("ingest", str(wasm), db=db).returncode == 0
    r = kb("code", "1", "--all", "--runnable", "-o", str(tmp_path / "c"), db=db)
    assert r.returncode == 1
    assert "not a WASI command" in r.stderr and "Traceback" not in r.stderr
