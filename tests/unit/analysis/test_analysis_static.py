"""kbtool.analysis: recognizers, thread facts, struct recovery on small fixtures."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.analysis import analyze_module_static, default_db
from kbtool.analysis.families import canonical, family_of
from kbtool.analysis.fingerprints import FingerprintDB, RefEntry, full_hash
from kbtool.analysis.threads import atomic_class
from kbtool.wasm import analyze_module
from tests.support.paths import ROOT

REFS = ROOT / "kbtool" / "analysis" / "refs"
WAT2WASM = shutil.which("wat2wasm")


def _wat(tmp_path: Path, text: str, *flags: str) -> bytes:
    if WAT2WASM is None:
        pytest.skip("wat2wasm not installed")
    src = tmp_path / "m.wat"
    src.write_text(text)
    out = tmp_path / "m.wasm"
    subprocess.run([WAT2WASM, *flags, str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def _clang_wasm(tmp_path: Path, src: Path, *extra: str) -> bytes:
    clang = shutil.which("clang")
    if clang is None or not shutil.which("wasm-ld"):
        pytest.skip("clang/wasm-ld not installed")
    out = tmp_path / "s.wasm"
    r = subprocess.run(
        [
            clang,
            "--target=wasm32",
            "-O2",
            "-nostdlib",
            "-Wl,--no-entry",
            *extra,
            str(src),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        pytest.skip(f"clang cannot build wasm32 here: {r.stderr[:200]}")
    return out.read_bytes()


def test_canonical_names_fold_toolchain_spellings():
    assert canonical("dlmalloc") == "malloc"
    assert canonical("c.string.strnlen") == "strnlen"
    assert canonical("compiler_rt.memcmp") == "memcmp"
    assert canonical("a_cas_p.1") == "a_cas_p"
    assert family_of("compiler_rt.strlen") == "string"
    assert family_of("printf_core") == "printf"


def test_atomic_class():
    assert atomic_class("i32.atomic.rmw.cmpxchg") == ("cmpxchg", "cmpxchg")
    assert atomic_class("i64.atomic.rmw8.add_u") == ("rmw", "add")
    assert atomic_class("memory.atomic.wait32") == ("wait", None)
    assert atomic_class("atomic.fence") == ("fence", None)
    assert atomic_class("i32.atomic.store16") == ("store", None)


def test_committed_fingerprints_load_and_come_from_reference_builds():
    db = default_db()
    assert len(db.entries) > 50
    assert all(e.refs and all(r in db.builds for r in e.refs) for e in db.entries)
    names = {canonical(e.name) for e in db.entries}
    assert {"memcpy", "strlen", "malloc", "free", "printf_core"} <= names


MEM_WAT = """
(module
  (memory 1)
  (global $sp (mut i32) (i32.const 65536))
  (func $memset (param i32 i32 i32) (result i32)
    local.get 0 local.get 1 local.get 2 memory.fill local.get 0)
  (func $copy (param i32 i32 i32) (result i32)
    local.get 0 local.get 1 local.get 2 memory.copy local.get 0)
  (func $save (result i32) global.get $sp)
  (func $restore (param i32) local.get 0 global.set $sp)
  (func $user (param i32) (result i32)
    global.get $sp i32.const 16 i32.sub global.set $sp
    local.get 0 i32.load offset=4 i32.const 3 i32.mul i32.const 7 i32.xor
    global.get $sp i32.const 16 i32.add global.set $sp)
  (func $user2 (param i32) (result i32)
    global.get $sp i32.const 32 i32.sub global.set $sp
    local.get 0 i32.load offset=8 i32.const 5 i32.mul i32.const 9 i32.xor
    global.get $sp i32.const 32 i32.add global.set $sp)
  (export "run" (func $user)))
"""


def test_behaviour_recognizers_name_pinned_bodies_and_review_ambiguous(tmp_path):
    data = _wat(tmp_path, MEM_WAT)
    sa = analyze_module_static(analyze_module(data), data)
    got = {n["func_index"]: n["name"] for n in sa.names}
    assert got == {0: "memset", 2: "stackSave", 3: "stackRestore"}
    ev = next(n["evidence"] for n in sa.names if n["name"] == "memset")
    assert ev["recognizer"] == "behaviour" and "memory.fill" in ev["method"]
    # memory.copy fits memcpy and memmove: not written, listed for review
    assert [r["func_index"] for r in sa.review] == [1]


def test_two_functions_fitting_one_name_are_not_named(tmp_path):
    two = MEM_WAT.replace(
        "(func $save (result i32) global.get $sp)",
        "(func $save (result i32) global.get $sp)\n(func $save2 (result i32) global.get $sp)",
    )
    data = _wat(tmp_path, two)
    sa = analyze_module_static(analyze_module(data), data)
    assert "stackSave" not in {n["name"] for n in sa.names}
    assert {2, 3} <= {r["func_index"] for r in sa.review}


def test_fingerprint_match_respects_floor_and_ambiguity(tmp_path):
    data = _wat(tmp_path, MEM_WAT)
    a = analyze_module(data)
    user = a.functions[4]
    user2 = a.functions[5]

    def entry(name, f, ref="test-build"):
        return RefEntry(
            f"x:{name}",
            name,
            "libc",
            f.shape_hash,
            full_hash(f),
            f.instr_count,
            f.type_sig,
            (),
            (ref,),
        )

    # user bodies are 15 instructions: above the shape floor -> named
    db = FingerprintDB([entry("known_fn", user)], {"test-build": "t"})
    sa = analyze_module_static(a, data, db=db)
    hit = [n for n in sa.names if n["name"] == "known_fn"]
    assert [n["func_index"] for n in hit] == [4]
    assert hit[0]["evidence"]["reference"] == ["test-build"]
    assert hit[0]["evidence"]["recognizer"] == "fingerprint.shape"
    # the same hash known under two names: name none, review
    db2 = FingerprintDB([entry("known_fn", user), entry("other_fn", user)], {"test-build": "t"})
    sa2 = analyze_module_static(a, data, db=db2)
    assert not [n for n in sa2.names if n["func_index"] == 4]
    assert any(r["func_index"] == 4 for r in sa2.review)
    assert user.shape_hash != user2.shape_hash  # differing constants: no accidental match


THREAD_WAT = """
(module
  (memory 1 1 shared)
  (global $tls (mut i32) (i32.const 0))
  (func $lock (param i32)
    (loop $again
      local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg offset=8
      if
        local.get 0 i32.const 8 i32.add i32.const 1 i64.const -1 memory.atomic.wait32
        drop br $again
      end))
  (func $unlock (param i32)
    local.get 0 i32.const 0 i32.atomic.store offset=8
    local.get 0 i32.const 8 i32.add i32.const 1 memory.atomic.notify drop)
  (func $add (param i32) (result i64)
    atomic.fence
    local.get 0 i64.const 1 i64.atomic.rmw.add offset=16)
  (func $init_tls (param i32)
    local.get 0 global.set $tls
    local.get 0 i32.const 0 i32.const 4 memory.init 0)
  (func $start (param i32) local.get 0 call $add drop)
  (data "abcd")
  (export "wasi_thread_start" (func $start)))
"""


def test_thread_facts_sites_locks_tls_workers(tmp_path):
    data = _wat(tmp_path, THREAD_WAT, "--enable-threads")
    sa = analyze_module_static(analyze_module(data), data)
    kinds = {}
    for f in sa.thread_facts:
        kinds.setdefault(f["kind"], []).append(f)
    assert len(kinds["shared_memory"]) == 1
    sites = [(s["func_index"], s["class"], s["width"], s["offset"]) for s in kinds["atomic_site"]]
    assert sites == [
        (0, "cmpxchg", 4, 8),
        (0, "wait", 4, 0),
        (1, "store", 4, 8),
        (1, "notify", 4, 0),
        (2, "fence", 0, None),
        (2, "rmw", 8, 16),
    ]
    assert {(f["func_index"], f["pattern"]) for f in kinds["lock"]} == {
        (0, "futex"),
        (1, "futex_release"),
    }
    assert kinds["tls_base"][0]["global_index"] == 0
    assert kinds["tls_base"][0]["init_function"] == 3
    assert [f["func_index"] for f in kinds["worker_entry"]] == [4]
    assert [f["func_index"] for f in kinds["worker_only"]] == [2]


def test_struct_recovery_merges_across_calls(tmp_path):
    data = _clang_wasm(tmp_path, REFS / "structs.c")
    a = analyze_module(data)
    sa = analyze_module_static(a, data)
    point = [s for s in sa.structs if {f["offset"] for f in s["fields"]} >= {0, 4, 8, 16, 18}]
    assert len(point) == 1
    fields = {f["offset"]: (f["size"], f["type"], f["name"]) for f in point[0]["fields"]}
    assert fields[8] == (8, "f64", "field_8")
    assert fields[16] == (2, "i16", "field_16")
    assert fields[18] == (1, "u8", "field_18")
    # point_norm's p0 and entry's p1 are the same struct (entry passes p into point_norm)
    members = {(m["func_index"], m["base"]) for m in point[0]["members"]}
    assert len({fi for fi, _ in members}) >= 2
    fi, base = sorted(members)[0]
    assert sa.struct_for_param(fi, int(base[1:]))["name"] == point[0]["name"]
    assert point[0]["source_function"] == min(fi for fi, _ in members)


def test_output_is_deterministic(tmp_path):
    data = _wat(tmp_path, THREAD_WAT, "--enable-threads")
    a = analyze_module(data)
    assert analyze_module_static(a, data).to_dict() == analyze_module_static(a, data).to_dict()


def test_wasi_libc_fixture_named_by_committed_fingerprints(tmp_path):
    """A program of ours linked against Debian's wasi-libc: the committed fingerprints name
    its libc functions, and every name written is right (the link map is the truth)."""
    clang = shutil.which("clang")
    if clang is None or not Path("/usr/lib/wasm32-wasi/libc.a").exists():
        pytest.skip("clang or Debian wasi-libc not installed")
    src = tmp_path / "p.c"
    src.write_text(
        "#include <string.h>\n#include <stdlib.h>\n#include <stdio.h>\n"
        "int main(int c, char **v) { char *p = malloc(c * 9 + 1);\n"
        '  memset(p, c, c * 9); p[c] = 0; printf("%zu\\n", strlen(p) + strlen(v[0]));\n'
        "  free(p); return 0; }\n"
    )
    out = tmp_path / "p.wasm"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("clang", "wasm-ld", "wasm-ld-14"):
        if shutil.which(tool):
            (bindir / tool).symlink_to(shutil.which(tool))
    r = subprocess.run(
        [
            str(bindir / "clang"),
            "--target=wasm32-wasi",
            "--sysroot=/usr",
            "-Os",
            str(src),
            "-o",
            str(out),
            f"-Wl,--Map={tmp_path / 'p.map'}",
        ],
        capture_output=True,
        text=True,
        env={"PATH": str(bindir)},
    )
    if r.returncode:
        pytest.skip(f"wasi-libc link failed: {r.stderr[:200]}")
    import sys

    sys.path.insert(0, str(REFS))
    from make_fingerprints import map_names

    data = out.read_bytes()
    a = analyze_module(data)
    listed = map_names((tmp_path / "p.map").read_text())
    assert len(listed) == len(a.module.code)
    truth = {a.module.num_func_imports + k: n for k, n in enumerate(listed)}
    sa = analyze_module_static(a, data)
    assert sa.names, "expected some libc functions to be recognised"
    for n in sa.names:
        assert canonical(n["name"]) == canonical(truth[n["func_index"]]), n
    assert {"malloc", "free", "strlen"} & {canonical(n["name"]) for n in sa.names}


def test_benchmark_smoke_runs():
    from benchmarks import analysis as bench

    if not (bench.CORPUS / "gt").is_dir():
        pytest.skip("corpus not present")
    assert bench.main(["--smoke"]) == 0
