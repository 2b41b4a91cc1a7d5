"""The data model after the first ingest (issue 26): ``kbtool xrefs``/``strings`` without
``kbtool analyze``; analyze rebuilds it without duplicates; the fast scan gives the careful
walk's references; .bss arrays passed only by address are items."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datascan
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.kb.datamodel import drop_data_model
from kbtool.kb.datarefs import all_refs
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
SYSROOT = Path("/usr/include/wasm32-wasi")


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tables(db: Path) -> dict[str, list[tuple]]:
    conn = open_ro(str(db))
    try:
        out = {
            t: conn.execute(f"SELECT * FROM {t} WHERE version_id = 1 ORDER BY 2, 3, 4").fetchall()  # noqa: S608
            for t in ("data_items", "data_globals")
        }
        out["data_refs"] = all_refs(conn, 1)
        return out
    finally:
        conn.close()


def test_xrefs_and_strings_right_after_ingest_then_analyze_rebuilds_once(tmp_path):
    db = tmp_path / "kb.db"
    conn = open_rw(str(db), create=True)
    res = ingest_file(conn, str(DEMO), label="1")
    conn.close()
    assert res.data is not None and res.data["items"] > 100 and res.data["refs"] > 1000
    strings = _cli(db, "strings", "1", "--json")
    assert strings.returncode == 0, strings.stderr
    first = re.search(r'"address":\s*(\d+)', strings.stdout)
    assert first is not None
    x = _cli(db, "xrefs", "1", "g:0", "--json")
    assert x.returncode == 0 and "analyze" not in x.stderr, x.stderr
    assert '"total"' in x.stdout
    after_ingest = _tables(db)
    conn = open_rw(str(db))
    analyze_version(conn, 1)
    conn.close()
    once = _tables(db)
    assert len(once["data_refs"]) == len(after_ingest["data_refs"])  # rebuilt, not added
    assert len(once["data_items"]) <= len(after_ingest["data_items"])  # merged state only
    # analyze on an ingested version == analyze on a version without a model
    conn = open_rw(str(db))
    with conn:
        drop_data_model(conn, 1)
    analyze_version(conn, 1)
    conn.close()
    again = _tables(db)
    strip = {t: [r[:-1] if t == "data_models" else r for r in rows] for t, rows in again.items()}
    assert strip == {t: list(rows) for t, rows in once.items()}


def test_fast_scan_gives_the_careful_references():
    data = DEMO.read_bytes()
    a = analyze_module(data)
    segs = dmod.segments(a)
    hi = max(b + len(x) for b, x, _ in segs)
    mem_hi = dmod.bss_end(a, hi, stack_pointer_global(a, data))
    lo = 1024
    plan = dmod.scan_plan(a, lo, mem_hi)
    assert {p[3] for p in plan} == {0, 1, 2}  # every mode is exercised
    n = 0
    for fi, off, size, mode, floor in plan:
        careful = list(dmod.function_refs_careful(data, fi, off, size, lo, hi, False, mem_hi))
        if mode == 2:
            fast = datascan.data_refs(data, fi, off, size, lo, hi, False, mem_hi, floor)
        elif mode == 1:
            fast = datascan.globals_refs(data, fi, off, size)
        else:
            fast = []
        assert fast == careful, fi
        n += len(fast)
    assert n > 1000


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
char name_buf[256];
int counts[64];
double samples[128];
unsigned char scratch[4096];
unsigned char other[1000];
double weights[32];
__attribute__((noinline)) void fill(char *p, int n) { for (int i = 0; i < n; i++) p[i] = 'a' + i % 26; }
__attribute__((noinline)) void zero_ints(int *p, int n) { memset(p, 0, n * sizeof *p); }
__attribute__((noinline)) double avg(const double *p, int n) { double s = 0; for (int i = 0; i < n; i++) s += p[i]; return n ? s / n : 0; }
__attribute__((noinline)) void touch(unsigned char *p, int n) { for (int i = 0; i < n; i += 64) p[i] ^= 1; }
int main(int argc, char **argv) {
  fill(name_buf, argc + 10);
  zero_ints(counts, 64);
  touch(scratch, sizeof scratch);
  touch(other, argc);
  printf("%s %d\n", name_buf, (int)avg(samples, 128) + (int)avg(weights, argc));
  return 0;
}
"""
ARRAYS = {
    "name_buf": 256,
    "counts": 256,
    "samples": 1024,
    "scratch": 4096,
    "other": 1000,
    "weights": 256,
}


@pytest.mark.skipif(
    shutil.which("clang") is None or not SYSROOT.is_dir(), reason="no clang/wasi-libc"
)
def test_bss_arrays_passed_by_address_are_items(tmp_path):
    src = tmp_path / "bss.c"
    src.write_text(C_PROGRAM)
    cc = ["clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-Wl,--no-gc-sections"]
    stripped, named = tmp_path / "bss.wasm", tmp_path / "bss_exp.wasm"
    subprocess.run([*cc, "-o", str(stripped), str(src)], check=True, capture_output=True)
    subprocess.run(
        [*cc, "-Wl,--export-all", "-o", str(named), str(src)], check=True, capture_output=True
    )
    # the addresses wasm-ld gave the arrays (exported as globals by --export-all)
    na = analyze_module(named.read_bytes())
    addr = {
        e.name: na.module.globals[e.index].init
        for e in na.module.exports
        if e.kind == "global" and e.name in ARRAYS
    }
    assert set(addr) == set(ARRAYS)
    data = stripped.read_bytes()
    a = analyze_module(data)
    model = dmod.build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    bss = {it.address: it for it in model.items if it.kind == "bss"}
    for name, size in ARRAYS.items():
        it = bss.get(addr[name])
        assert it is not None, name
        if name != "name_buf":  # name_buf[3] is also read at its own address (a cut there)
            assert size <= it.size < size + 16, (name, it.size)  # sized by the next item
    # round sizes passed to calls (4096, 64) are not taken for addresses
    assert 4096 not in bss


def test_parallel_scan_gives_the_same_model(monkeypatch):
    """Big modules are scanned on forked workers; the model is the one of a single process."""
    data = DEMO.read_bytes()
    a = analyze_module(data)
    sp = stack_pointer_global(a, data)
    one = dmod.build_data_model(a, data, stack_pointer=sp)
    monkeypatch.setattr(datascan, "PARALLEL_MIN_BYTES", 0)
    two = dmod.build_data_model(a, data, stack_pointer=sp, workers=2)
    assert two.to_dict() == one.to_dict()
    # (it did run on workers: None means "scan in this process")
    from kbtool.wasm.workers import pool_context

    if pool_context() is None:  # another test left a thread running: no fork here
        pytest.skip("threads are running in this process: the scan stays in it")
    assert (
        datascan.parallel_refs(
            data, dmod.scan_plan(a, 1024, two.data_end), 1024, two.data_end, False, two.data_end, 2
        )
        is not None
    )


def test_ingest_lands_whole_or_not_at_all(tmp_path, monkeypatch):
    """The model is built in ingest's transaction: a failure there leaves no version."""
    from kbtool.services import data as data_svc

    def broken(*_a, **_k):
        raise RuntimeError("data model failed")

    monkeypatch.setattr(data_svc, "build", broken)
    db = tmp_path / "kb.db"
    conn = open_rw(str(db), create=True)
    with pytest.raises(RuntimeError, match="data model failed"):
        ingest_file(conn, str(DEMO), label="1")
    assert conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM functions").fetchone()[0] == 0
    conn.close()


STRUCT_OFFSET_WAT = """(module
  (memory 1)
  (global $sp (mut i32) (i32.const 66560))
  (data (i32.const 1024) "Invalid data found when processing input\\00")
  (func $first (export "first") (result i32)
    i32.const 0
    i32.load8_u offset=1024)
  (func $field (export "field") (param i32) (result i32)
    local.get 0
    i32.load offset=1036))
"""


def test_loads_inside_a_string_are_struct_fields_not_uses(tmp_path):
    """A memarg offset landing strictly inside a literal is a big struct's field offset (no
    xref of the text); a load from the literal's start is a use."""
    from testkit.wasmbuild import build_wat, have_wabt

    if not have_wabt():
        pytest.skip("wat2wasm not installed")
    data = build_wat(STRUCT_OFFSET_WAT, tmp_path, name="structoff").read_bytes()
    a = analyze_module(data)
    model = dmod.build_data_model(a, data, stack_pointer=0)
    s = next(it for it in model.items if it.kind == "cstring")
    assert s.text == "Invalid data found when processing input"
    loads = [(r.func_index, r.target) for r in model.refs if r.kind == "load"]
    assert loads == [(0, 1024)] and s.refs == 1
