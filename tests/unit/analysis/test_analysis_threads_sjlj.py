"""kbtool.analysis on Emscripten threaded builds, saveSetjmp by its call pattern, and the
stack pointer in builds where a TLS global is read almost as often."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.analysis import strip_custom_sections
from kbtool.analysis import analyze_module_static
from kbtool.analysis.families import canonical
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from tests.support.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "analysis"
WAT2WASM = shutil.which("wat2wasm")
EMCC = shutil.which("emcc")


def _wat(tmp_path: Path, text: str) -> bytes:
    if WAT2WASM is None:
        pytest.skip("wat2wasm not installed")
    src = tmp_path / "m.wat"
    src.write_text(text)
    out = tmp_path / "m.wasm"
    subprocess.run([WAT2WASM, "--enable-threads", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def _emcc(tmp_path: Path, src: Path, *flags: str) -> tuple[bytes, dict[int, str]]:
    """(stripped module, truth names) of an emcc build with --profiling-funcs."""
    if EMCC is None:
        pytest.skip("emcc not installed")
    js = tmp_path / (src.stem + ".js")
    subprocess.run(
        [EMCC, *flags, "--profiling-funcs", str(src), "-o", str(js)], capture_output=True
    )
    wasm = js.with_suffix(".wasm")
    if not wasm.exists() or not wasm.stat().st_size:
        pytest.skip("emcc could not build the module here")
    named = wasm.read_bytes()
    return strip_custom_sections(named), analyze_module(named).module.func_names


SJLJ_WAT = """
(module
  (import "env" "setTempRet0" (func $set (param i32)))
  (import "env" "getTempRet0" (func $get (result i32)))
  (memory 1)
  (func $save (param i32 i32 i32 i32) (result i32)
    local.get 3 call $set local.get 2)
  (func $uses (param i32) (result i32) (local i32)
    local.get 0 i32.const 1 i32.const 0 i32.const 4 call $save local.set 1
    call $get local.get 1 i32.add)
  (func $decoy (param i32 i32 i32 i32) (result i32)
    local.get 0 call $set local.get 1)
  (func $decoy_user (result i32)
    i32.const 1 i32.const 2 i32.const 3 i32.const 4 call $decoy))
"""


def test_save_setjmp_named_by_its_call_pattern(tmp_path):
    data = _wat(tmp_path, SJLJ_WAT)
    sa = analyze_module_static(analyze_module(data), data)
    hit = [n for n in sa.names if n["name"] == "saveSetjmp"]
    assert [n["func_index"] for n in hit] == [2]  # $save; $decoy's call is not followed
    ev = hit[0]["evidence"]
    assert ev["recognizer"] == "behaviour.sjlj" and ev["call_sites"] == 1
    assert ev["getter_imports"] == ["getTempRet0"] and hit[0]["confidence"] == 0.8


def test_save_setjmp_two_fits_name_none(tmp_path):
    two = SJLJ_WAT.replace("i32.const 4 call $decoy)", "i32.const 4 call $decoy call $get i32.add)")
    data = _wat(tmp_path, two)
    sa = analyze_module_static(analyze_module(data), data)
    assert "saveSetjmp" not in {n["name"] for n in sa.names}


SP_WAT = """
(module
  (memory 1)
  (global $tls (mut i32) (i32.const 0))
  (global $sp (mut i32) (i32.const 65536))
  (func $f1 (result i32) (local i32)
    global.get $sp i32.const 16 i32.sub local.tee 0 global.set $sp
    global.get $tls local.get 0 i32.add)
  (func $f2 (result i32) (local i32)
    global.get $sp i32.const 32 i32.sub local.tee 0 global.set $sp
    global.get $tls i32.load)
  (func $f3 (result i32) global.get $tls i32.const 4 i32.add i32.load)
  (func $save (result i32) global.get $sp))
"""


def test_stack_pointer_decided_by_prologues_when_use_counts_are_close(tmp_path):
    data = _wat(tmp_path, SP_WAT)
    a = analyze_module(data)
    assert stack_pointer_global(a) is None  # 3 users each way without the body bytes
    assert stack_pointer_global(a, data) == 1
    sa = analyze_module_static(a, data)
    assert {n["name"]: n["func_index"] for n in sa.names}.get("stackSave") == 3


@pytest.mark.skipif(EMCC is None, reason="emcc not installed")
def test_threaded_eval_program_names_are_right(tmp_path):
    # c_threads_eval.c is not a fingerprint source, -Oz is not a reference opt-level
    data, truth = _emcc(
        tmp_path, FIXTURES / "c_threads_eval.c", "-Oz", "-pthread", "-sPTHREAD_POOL_SIZE=2"
    )
    sa = analyze_module_static(analyze_module(data), data)
    wrong = [
        (n["name"], truth.get(n["func_index"]))
        for n in sa.names
        if canonical(n["name"]) != canonical(truth.get(n["func_index"], ""))
    ]
    assert wrong == []
    got = {canonical(n["name"]) for n in sa.names}
    assert {
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
        "emscripten_futex_wait",
        "__wait",
        "__lockfile",
        "pthread_join",
    } <= got


@pytest.mark.skipif(EMCC is None, reason="emcc not installed")
def test_save_setjmp_named_in_an_emcc_build_whose_shape_differs(tmp_path):
    data, truth = _emcc(tmp_path, FIXTURES / "c_eval.c", "-Oz")
    sa = analyze_module_static(analyze_module(data), data)
    hit = [n for n in sa.names if n["name"] == "saveSetjmp"]
    assert len(hit) == 1 and truth[hit[0]["func_index"]] == "saveSetjmp"


LOCK_WAT = """
(module
  (memory 1 1 shared)
  (func $try (param i32) (result i32)
    local.get 0 i32.const 0 i32.const 16 i32.atomic.rmw.cmpxchg)
  (func $lock (param i32) (result i32)
    local.get 0 call $try
    if (result i32)
      (loop $spin
        local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg
        br_if $spin)
      local.get 0 call $try
    else i32.const 0 end)
  (func $app (param i32) (result i32)
    local.get 0 call $try local.get 0 i32.const 1 i32.atomic.rmw.add i32.add))
"""


def test_mutex_lock_named_by_its_trylock_calls(tmp_path):
    from kbtool.analysis.pthread import mutex_lock_candidates

    a = analyze_module(_wat(tmp_path, LOCK_WAT))
    got = mutex_lock_candidates(a, {0: "__pthread_mutex_trylock"})
    assert [(i, ev["trylock_calls"]) for i, _c, ev in got] == [(1, 2)]  # $app calls it once
    assert mutex_lock_candidates(a, {}) == []  # no recognised trylock: no anchor
    two = LOCK_WAT.replace(
        "local.get 0 call $try local.get 0 i32.const 1",
        "local.get 0 call $try local.get 0 call $try i32.add local.get 0 i32.const 1",
    )
    a2 = analyze_module(_wat(tmp_path, two))
    assert mutex_lock_candidates(a2, {0: "__pthread_mutex_trylock"}) == []  # two fit: none


RT_WAT = """
(module
  (import "env" "__thread_cleanup_js" (func $cleanup (param i32)))
  (import "env" "check_blocking" (func $check))
  (func $join (param i32) call $check local.get 0 call $cleanup)
  (func $app (param i32) call $check)
  (func $other (param i32) local.get 0 call $cleanup))
"""


def test_runtime_imports_name_the_only_caller_of_the_reference_set(tmp_path):
    from kbtool.analysis.fingerprints import FingerprintDB, RefEntry
    from kbtool.analysis.pthread import private_import_candidates

    def ent(name, callees):
        return RefEntry(f"x:{name}", name, "thread", "s", "f", 50, "(i32) -> ()", callees, ("b",))

    db = FingerprintDB(
        [
            ent("__pthread_join", ("__thread_cleanup_js", "check_blocking", "__timedwait")),
            ent("clock", ("check_blocking",)),  # public import only: never used
        ],
        {"b": "test"},
    )
    a = analyze_module(_wat(tmp_path, RT_WAT))
    got = private_import_candidates(a, db, {})
    assert [(i, n) for i, n, _c, _e in got] == [(2, "__pthread_join")]  # not $app, not $other
    assert got[0][3]["env_imports"] == ["__thread_cleanup_js", "check_blocking"]
    two = RT_WAT.replace(
        "(func $app (param i32) call $check)",
        "(func $app (param i32) call $check i32.const 0 call $cleanup)",
    )
    assert private_import_candidates(analyze_module(_wat(tmp_path, two)), db, {}) == []
    # a second reference name with the same set makes it ambiguous
    db2 = FingerprintDB(
        [*db.entries, ent("exit_thread", ("__thread_cleanup_js", "check_blocking"))], {"b": "t"}
    )
    assert private_import_candidates(a, db2, {}) == []
