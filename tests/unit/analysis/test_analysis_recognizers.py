"""kbtool.analysis recognizers added for Rust shims, errno, anchored small bodies, loose hash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.analysis import analyze_module_static, default_db
from kbtool.analysis.families import canonical, demangle_rust, family_of, is_type_glue
from kbtool.analysis.fingerprints import (
    FingerprintDB,
    LooseContext,
    RefEntry,
    full_hash,
    loose_digests,
)
from kbtool.wasm import analyze_module
from tests.support.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "analysis"
WAT2WASM = shutil.which("wat2wasm")
RUSTC = Path("/usr/bin/rustc")


def _wat(tmp_path: Path, text: str, name: str = "m") -> bytes:
    if WAT2WASM is None:
        pytest.skip("wat2wasm not installed")
    src = tmp_path / f"{name}.wat"
    src.write_text(text)
    out = tmp_path / f"{name}.wasm"
    subprocess.run([WAT2WASM, str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def test_rust_legacy_demangling_and_families():
    assert demangle_rust("_ZN4core9panicking18panic_bounds_check17h85ba5634c84ff856E") == (
        "core::panicking::panic_bounds_check"
    )
    assert canonical("_ZN5alloc7raw_vec11finish_grow17hb4c79f696d1d6f62E.llvm.128583") == (
        "alloc::raw_vec::finish_grow"
    )
    assert canonical("_ZN42_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$3fmt17h59c24547b8b11ce5E") == (
        "<&T as core::fmt::Debug>::fmt"
    )
    assert demangle_rust("memcpy") is None and demangle_rust("_ZN3foo") is None
    assert family_of("_ZN4core3fmt5write17h7d6e1ee86dc7a26cE") == "rust_fmt"
    assert family_of("__rust_alloc") == "rust_alloc"
    assert family_of("rust_begin_unwind") == "rust_panic"
    assert family_of("_ZN8dlmalloc8dlmalloc17Dlmalloc$LT$A$GT$6malloc17h0d49dc60e377c70eE") == (
        "rust_alloc"
    )
    # type glue: the body does not prove the name
    assert is_type_glue("core::ptr::drop_in_place<alloc::string::String>")
    assert is_type_glue("<alloc::raw_vec::RawVec<T,A> as core::ops::drop::Drop>::drop")
    assert is_type_glue("<&T as core::fmt::Debug>::fmt")
    assert not is_type_glue("<str as core::fmt::Display>::fmt")
    assert not is_type_glue("dlmalloc::dlmalloc::Dlmalloc<A>::malloc")


def test_committed_fingerprints_hold_rust_shims_with_their_builds():
    db = default_db()
    names = {canonical(e.name) for e in db.entries}
    for want in (
        "__rust_alloc",
        "__rdl_alloc",
        "rust_begin_unwind",
        "core::fmt::write",
        "core::panicking::panic_bounds_check",
        "alloc::raw_vec::capacity_overflow",
        "saveSetjmp",
        "testSetjmp",
        "setThrew",
        "pthread_mutex_lock",
        "__wasm_setjmp",
        "__wasm_setjmp_test",
        "__wasm_longjmp",
    ):
        assert want in names, want
    assert any(b.startswith("rust-wasm32-") for b in db.builds)
    assert all(e.loose for e in db.entries)


ERRNO_WAT = """
(module
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (memory 1)
  (data (i32.const 1024) "errno-slot-and-more-data-here...")
  (func $errno (result i32) i32.const 1024)
  (func $other (result i32) i32.const 1040)
  (func $a (param i32) (result i32)
    local.get 0 i32.eqz if call $errno i32.const 28 i32.store end i32.const -1)
  (func $b (param i32) (result i32)
    local.get 0 i32.const 5 i32.gt_u if i32.const 1024 i32.const 48 i32.store end i32.const 0)
  (func $c (param i32) (result i32)
    call $other i32.const 7 i32.store i32.const 0)
  (func $ret (param i32) (result i32)
    local.get 0 i32.eqz if i32.const 0 return end
    i32.const 1024 local.get 0 i32.store i32.const -1)
  (func $close (param i32) (result i32) local.get 0 call $fd_close call $ret))
"""


def test_errno_location_named_by_errno_code_stores(tmp_path):
    data = _wat(tmp_path, ERRNO_WAT)
    sa = analyze_module_static(analyze_module(data), data)
    hit = [n for n in sa.names if n["name"] == "__errno_location"]
    assert [n["func_index"] for n in hit] == [1]  # $errno (import is index 0)
    ev = hit[0]["evidence"]
    assert ev["stored_codes"] == [28, 48] and ev["address"] == 1024
    assert ev["syscall_ret_relays"] == [6]  # $ret stores its parameter; $close feeds it
    assert hit[0]["confidence"] == 0.8
    assert 2 not in {n["func_index"] for n in sa.names}  # $other: one store only


def test_errno_location_two_fits_name_none(tmp_path):
    two = ERRNO_WAT.replace(
        "(func $c (param i32) (result i32)\n    call $other i32.const 7 i32.store i32.const 0)",
        "(func $c (param i32) (result i32)\n    call $other i32.const 7 i32.store i32.const 0)\n"
        "  (func $d (result i32) call $other i32.const 9 i32.store i32.const 0)",
    )
    data = _wat(tmp_path, two)
    sa = analyze_module_static(analyze_module(data), data)
    assert "__errno_location" not in {n["name"] for n in sa.names}


ANCHOR_WAT = """
(module
  (memory 1)
  (func $big (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.add local.get 0 i32.mul local.get 1 i32.const 7 i32.shl
    i32.xor local.get 0 i32.const 3 i32.rotl i32.add local.get 1 i32.sub)
  (func $fwd (param i32 i32) (result i32) local.get 0 local.get 1 call $big)
  (func $other (param i32 i32) (result i32) local.get 1 local.get 0 i32.sub)
  (func $fwd_other (param i32 i32) (result i32) local.get 0 local.get 1 call $other))
"""


def test_small_forwarder_named_only_when_its_callee_is_known(tmp_path):
    data = _wat(tmp_path, ANCHOR_WAT)
    a = analyze_module(data)
    big, fwd = a.functions[0], a.functions[1]
    assert fwd.instr_count < 12 and fwd.shape_hash == a.functions[3].shape_hash
    ctx = LooseContext(data, a.module)

    def entry(name, f, callees):
        loose, texts = loose_digests(data, f, ctx)
        return RefEntry(
            f"x:{name}",
            name,
            "libc",
            f.shape_hash,
            full_hash(f),
            f.instr_count,
            f.type_sig,
            callees,
            ("ref",),
            loose,
            texts,
        )

    db = FingerprintDB(
        [entry("big_impl", big, ()), entry("big_shim", fwd, ("big_impl",))], {"ref": "test"}
    )
    sa = analyze_module_static(a, data, db=db)
    got = {n["func_index"]: n for n in sa.names}
    assert got[0]["name"] == "big_impl"
    assert got[1]["name"] == "big_shim"
    assert got[1]["evidence"]["recognizer"] == "fingerprint.anchored"
    assert got[1]["evidence"]["anchor_callees"] == ["big_impl"]
    # same tiny shape, but its callee is not the reference's: not named
    assert 3 not in got
    # without the anchor (callee unknown to the DB) the shim is not named either
    sa2 = analyze_module_static(a, data, db=FingerprintDB([db.entries[1]], {"ref": "test"}))
    assert not sa2.names


LOOSE_WAT = """
(module
  (memory 1)
  (data (i32.const %(piece)d) "%(text)s")
  (data (i32.const %(pair)d) "%(ptr)s\\1d\\00\\00\\00")
  (func $fail (param i32 i32)
    (local i32)
    local.get 0 i32.const %(pair)d i32.store offset=0
    local.get 1 i32.const 1 i32.store offset=4
    local.get 0 i32.load offset=0 local.get 1 i32.load offset=4 i32.add
    local.get 0 i32.add local.set 2 local.get 2 local.get 2 i32.store offset=8))
"""


def _le32(v: int) -> str:
    return "".join(f"\\{b:02x}" for b in v.to_bytes(4, "little"))


def _loose_of(tmp_path, name, piece, pair, text):
    src = LOOSE_WAT % {"piece": piece, "pair": pair, "text": text, "ptr": _le32(piece)}
    data = _wat(tmp_path, src, name)
    a = analyze_module(data)
    f = a.functions[0]
    return f, loose_digests(data, f, LooseContext(data, a.module))


def test_loose_hash_abstracts_moved_pointers_but_keeps_their_text(tmp_path):
    text = "index out of bounds: the len i"
    f1, (l1, t1) = _loose_of(tmp_path, "a", 1024, 2048, text)
    f2, (l2, t2) = _loose_of(tmp_path, "b", 1100, 2200, text)  # same code, data moved
    f3, (l3, t3) = _loose_of(tmp_path, "c", 1024, 2048, "source slice length (xxxxxxxx")
    assert f1.instr_count >= 12
    assert f1.shape_hash != f2.shape_hash  # the raw bytes at the address hold a pointer
    assert (l1, t1) == (l2, t2)  # ... which the loose hash abstracts
    assert l1 != l3 and t1 != t3  # the string the pointer leads to still counts
    assert full_hash(f1) == full_hash(f3)


@pytest.mark.skipif(not RUSTC.exists(), reason="Debian rustc (/usr/bin/rustc) not installed")
def test_rust_eval_program_shims_named_right(tmp_path):
    from benchmarks.analysis import rust_eval_builds, strip_custom_sections

    built = rust_eval_builds(tmp_path, ("z",))
    if not built:
        pytest.skip("no wasm32 Rust std installed (libstd-rust-dev-wasm32)")
    for path in built:
        named = path.read_bytes()
        truth = analyze_module(named).module.func_names
        stripped = strip_custom_sections(named)
        assert len(stripped) < len(named)
        sa = analyze_module_static(analyze_module(stripped), stripped)
        written = {canonical(n["name"]): n for n in sa.names}
        for n in sa.names:  # precision: every name written is the truth
            assert canonical(n["name"]) == canonical(truth[n["func_index"]]), n
        for want in (
            "__rust_alloc",
            "__rust_dealloc",
            "__rust_realloc",
            "__rdl_alloc",
            "rust_begin_unwind",
            "core::fmt::write",
            "core::fmt::Formatter::pad",
        ):
            assert want in written, (path.name, want)
        assert written["__rust_alloc"]["evidence"]["recognizer"] == "fingerprint.anchored"


LOCK_WAT = """
(module
  (memory 1 1 shared)
  (func $futex_wait (param i32 i32)
    local.get 0 local.get 1 i64.const -1 memory.atomic.wait32 drop)
  (func $timedwait (param i32 i32) local.get 0 local.get 1 call $futex_wait)
  (func $mutex_lock (param i32)
    (loop $again
      local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg
      if local.get 0 i32.const 1 call $timedwait br $again end))
  (func $cas_update (param i32 i32)
    (loop $again
      local.get 0 local.get 0 i32.atomic.load local.get 1 i32.atomic.rmw.cmpxchg
      i32.eqz br_if $again))
  (func $once (param i32)
    local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg
    if local.get 0 i32.const 1 i64.const -1 memory.atomic.wait32 drop end))
"""


def test_lock_facts_follow_waits_through_callees_and_grade_strength(tmp_path):
    if WAT2WASM is None:
        pytest.skip("wat2wasm not installed")
    src = tmp_path / "l.wat"
    src.write_text(LOCK_WAT)
    out = tmp_path / "l.wasm"
    subprocess.run([WAT2WASM, "--enable-threads", str(src), "-o", str(out)], check=True)
    data = out.read_bytes()
    sa = analyze_module_static(analyze_module(data), data)
    locks = {f["func_index"]: f for f in sa.thread_facts if f["kind"] == "lock"}
    assert (locks[2]["pattern"], locks[2]["strength"]) == ("futex", "strong")
    assert locks[2]["evidence"]["wait_via"] == [1]  # $timedwait -> $futex_wait
    assert (locks[3]["pattern"], locks[3]["strength"]) == ("spin", "weak")
    assert (locks[4]["pattern"], locks[4]["strength"]) == ("futex", "weak")  # no retry loop
    assert 0 not in locks and 1 not in locks
    # lock patterns never become libc names (pthread_mutex_lock/__lock/__lockfile all fit)
    assert not {n["name"] for n in sa.names} & {"pthread_mutex_lock", "__lock", "__lockfile"}


CALLEE_WAT = """
(module
  (func $caller (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.add local.get 0 i32.mul local.get 1 i32.const 9 i32.shl
    i32.xor local.get 0 i32.const 5 i32.rotl i32.add call $helper)
  (func $helper (param i32) (result i32) local.get 0 i32.const 1 i32.sub)
  (func $decoy (param i32) (result i32) local.get 0 i32.const 1 i32.sub))
"""


def test_tiny_callee_named_through_its_named_caller(tmp_path):
    data = _wat(tmp_path, CALLEE_WAT)
    a = analyze_module(data)
    caller, helper, decoy = a.functions
    assert helper.shape_hash == decoy.shape_hash and helper.instr_count < 12
    ctx = LooseContext(data, a.module)

    def entry(name, f, callees):
        loose, texts = loose_digests(data, f, ctx)
        return RefEntry(
            f"x:{name}",
            name,
            "libc",
            f.shape_hash,
            full_hash(f),
            f.instr_count,
            f.type_sig,
            callees,
            ("ref",),
            loose,
            texts,
        )

    db = FingerprintDB(
        [entry("outer_fn", caller, ("inner_fn",)), entry("inner_fn", helper, ())],
        {"ref": "test"},
    )
    sa = analyze_module_static(a, data, db=db)
    got = {n["func_index"]: n for n in sa.names}
    assert got[0]["name"] == "outer_fn"
    assert got[1]["name"] == "inner_fn"
    assert got[1]["evidence"]["recognizer"] == "fingerprint.callee_of"
    assert got[1]["evidence"]["caller"] == 0
    assert 2 not in got  # same tiny shape, but nothing anchors it
