"""Program lineages at ingest (kbtool.services.lineage): parent by hash overlap, new programs
for unrelated modules, --base/--program, identical bytes, legacy KBs; honest binary names,
Go pclntab names, and the newcomer's small things (revert clears, --version, demo twice)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_rw
from kbtool.services.ingest import AlreadyIngested, ingest_file
from kbtool.services.lineage import (
    MIN_INSTRS,
    RELATED_THRESHOLD,
    SMALL_MODULE,
    LineageError,
    overlap,
    own_profile,
    profile,
    program_name_for,
)
from testkit.wasmbuild import CORPUS, build_wat, have_wabt
from tests.support.cli import run_cli as _cli
from tests.support.paths import DEMO_DIR, ROOT

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"
HELLO = ROOT / "tests" / "fixtures" / "go" / "hello"


def corpus_file(rel: str) -> Path:
    p = CORPUS / rel
    if not p.exists():
        pytest.skip(f"corpus file {rel} not present")
    return p


# ----------------------------------------------------------------------------- pure parts


def test_program_names_come_from_file_names():
    assert program_name_for("zstd-1.5.7.O2.stripped.wasm") == "zstd"
    assert program_name_for("sql.js-1.10.3.sql-wasm.wasm") == "sql.js"
    assert program_name_for("sql-wasm.wasm") == "sql-wasm"
    assert program_name_for("onnxruntime-web-1.20.1.ort.wasm") == "onnxruntime-web"
    assert program_name_for("1.0.wasm") == "1.0"


def test_overlap_ignores_trivial_functions_and_normalises_by_the_larger_side():
    big = [(f"b{i}", f"s{i}", 50) for i in range(100)]
    small = big[:10] + [("t", "tiny", MIN_INSTRS - 1)] * 50
    assert overlap(profile(big), profile(big)) == 1.0
    # a small module whose functions all occur in a big one is not its release
    assert overlap(profile(small), profile(big)) == pytest.approx(0.10)
    assert overlap(profile(big), profile(small)) == pytest.approx(0.10)
    # shape alone counts (relocated bodies), and nothing shared is 0
    moved = [(f"x{i}", f"s{i}", 50) for i in range(100)]
    assert overlap(profile(moved), profile(big)) == 1.0
    assert overlap(profile([("q", "r", 50)]), profile(big)) == 0.0
    assert overlap(profile([]), profile(big)) == 0.0


# ----------------------------------------------------------------------------- lineage at ingest


def test_readme_tour_sqljs_into_the_zstd_demo_starts_a_new_program(demo_kb):
    wasm = corpus_file("release/sql.js-1.10.3.sql-wasm.wasm")
    js = corpus_file("release/sql.js-1.10.3.sql-wasm.js")
    conn = open_rw(demo_kb)
    zstd_named = {
        s for (s,) in conn.execute("SELECT stable_id FROM symbols WHERE name IS NOT NULL")
    }
    res = ingest_file(conn, wasm, glue_path=js)
    assert res.new_program and res.program == "sql.js"
    assert res.parent_version_id is None and res.carried == 0 and res.diff_carry is None
    assert res.lineage["method"] == "new-program"
    assert res.lineage["overlap"] < RELATED_THRESHOLD
    sql_ids = {r["stable_id"] for r in queries.list_functions(conn, res.version_id, True)}
    assert not sql_ids & zstd_named  # no zstd identity, hence no zstd name, on sqlite code
    names = [r["name"] for r in queries.list_functions(conn, res.version_id) if r["name"]]
    assert names and not [n for n in names if n.startswith(("ZSTD", "HUF", "FSE"))]
    # the next zstd release still carries from zstd, not from sql.js
    res2 = ingest_file(conn, corpus_file("gt/zstd-1.5.7.O2.stripped.wasm"))
    assert res2.program == "zstd" and not res2.new_program and res2.parent_version_id == 2
    assert queries.coverage(conn, res2.version_id)["coverage_pct"] > 35
    progs = {v["id"]: v["program"] for v in queries.list_versions(conn)}
    assert progs == {1: "zstd", 2: "zstd", 3: "sql.js", 4: "zstd"}


def test_parent_is_the_most_related_version_not_the_latest(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, Z55, label="z55")
    assert a.lineage["method"] == "first" and a.program == "zstd"
    other = ingest_file(conn, corpus_file("release/sql.js-1.12.0.sql-wasm.wasm"), label="sql")
    assert other.new_program and other.program == "sql.js"
    b = ingest_file(conn, Z56, label="z56")
    assert b.parent_version_id == a.version_id and b.program == "zstd"
    assert b.lineage["overlap"] >= RELATED_THRESHOLD
    info = queries.version_info(conn, b.version_id)
    assert info["program"] == "zstd" and info["lineage"]["method"] == "related"


def test_base_and_program_options(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, Z55, label="a", program="app")
    assert a.program == "app" and a.new_program
    b = ingest_file(conn, Z56, label="b", program="other")  # asked: a new program, nothing carried
    assert b.program == "other" and b.parent_version_id is None and b.carried == 0
    with pytest.raises(LineageError):
        ingest_file(conn, corpus_file("gt/zstd-1.5.7.O2.stripped.wasm"), base=99)
    with pytest.raises(LineageError):
        ingest_file(
            conn, corpus_file("gt/zstd-1.5.7.O2.stripped.wasm"), base=a.version_id, program="other"
        )
    c = ingest_file(
        conn, corpus_file("gt/zstd-1.5.7.O2.stripped.wasm"), label="c", base=a.version_id
    )
    assert c.parent_version_id == a.version_id and c.program == "app"
    assert c.lineage["method"] == "base" and c.carried > 400


def test_identical_bytes_are_reported_and_not_ingested(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, Z55, label="one")
    with pytest.raises(AlreadyIngested) as exc:
        ingest_file(conn, Z55, label="two")
    assert exc.value.version_id == a.version_id and "one" in str(exc.value)
    with pytest.raises(AlreadyIngested):
        ingest_file(conn, Z55, label="one", force=True)  # --force needs a different label
    assert len(queries.list_versions(conn)) == 1
    b = ingest_file(conn, Z55, label="two", force=True)
    assert b.parent_version_id == a.version_id and b.lineage["overlap"] == 1.0
    out = _cli("ingest", str(Z55), "--db", str(tmp_path / "kb.db"))
    assert out.returncode == 0 and "already version 1" in out.stdout.replace("\n", " ")


def test_versions_from_before_programs_join_one_legacy_program(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, Z55, label="old")
    conn.execute("UPDATE versions SET program_id = NULL")  # as a KB migrated from schema v1
    assert queries.list_versions(conn)[0]["program"] == "legacy"
    res = ingest_file(conn, Z56, label="new")
    assert res.program == "legacy" and res.parent_version_id == 1
    assert not queries.has_versions_without_program(conn)


def test_versions_command_shows_program_and_parent(demo_kb):
    out = _cli("versions", "--db", str(demo_kb))
    assert out.returncode == 0, out.stderr
    assert "program" in out.stdout and "parent" in out.stdout and "zstd" in out.stdout
    js = _cli("versions", "--json", "--db", str(demo_kb))
    import json

    rows = json.loads(js.stdout)
    assert [(r["program"], r["parent_version_id"]) for r in rows] == [("zstd", None), ("zstd", 1)]


# ----------------------------------------------------------------------------- names from the binary


SHORT_NAMES = """(module
  (import "env" "ext" (func $ext (param i32) (result i32)))
  (func $cb (export "cb") (param i32) (result i32) local.get 0 call $ext)
  (func $xy (param i32) (result i32) local.get 0 i32.const 1 i32.add)
  (func $main (export "main") (result i32) i32.const 7 call $cb))
"""


@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not on PATH")
def test_short_name_section_names_are_kept_with_their_source(tmp_path):
    wasm = build_wat(SHORT_NAMES, tmp_path, debug_names=True, name="short")
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, wasm, label="v1")
    by_index = {r["index"]: r for r in queries.list_functions(conn, res.version_id)}
    assert by_index[2]["name"] == "xy"  # only in the name section, two characters: kept
    assert by_index[1]["name"] == "cb"
    sym = queries.get_symbol(conn, by_index[2]["stable_id"])
    assert sym["evidence"][0]["source"] == "name-section"
    assert res.names_refused == 0 and res.names_by_source["name-section"] >= 3


@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not on PATH")
def test_refusals_tell_same_name_from_real_refusal(tmp_path):
    wasm = build_wat(SHORT_NAMES, tmp_path, debug_names=True, name="short")
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, wasm, label="v1")
    sids = {r["index"]: r["stable_id"] for r in queries.list_functions(conn, res.version_id)}
    gate.upsert_symbol(conn, sids[1], "cb", provenance="human", confidence=1.0, actor="t")
    gate.upsert_symbol(conn, sids[2], "my_inc", provenance="human", confidence=1.0, actor="t")
    again = ingest_file(conn, wasm, label="v2", force=True)
    assert again.names_same == 1 and again.names_refused == 1


@pytest.fixture(scope="session")
def go_hello(tmp_path_factory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("go toolchain not on PATH (apt-get install golang-go)")
    out = tmp_path_factory.mktemp("go-hello-lineage")
    subprocess.run(["sh", str(HELLO / "build.sh"), str(out)], check=True, capture_output=True)
    return out / "hello.js.stripped.wasm"


def test_go_names_recorded_at_ingest(go_hello, tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, go_hello, label="hello")
    assert res.go and "error" not in res.go and res.go["named"] == res.defined
    cov = queries.coverage(conn, res.version_id)
    assert cov["coverage_pct"] >= 99.0
    names = {r["name"]: r for r in queries.list_functions(conn, res.version_id)}
    assert "main.main" in names and "runtime.mallocgc" in names
    sym = queries.get_symbol(conn, names["main.main"]["stable_id"])
    assert sym["provenance"] == "export" and sym["confidence"] == 1.0
    assert sym["evidence"][0]["source"] == "go-pclntab" and sym["evidence"][0]["entry_pc"]


# ----------------------------------------------------------------------------- small things


def test_revert_past_the_first_name_clears_it(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    res = ingest_file(conn, Z55, label="v1")
    sid = next(
        r["stable_id"] for r in queries.list_functions(conn, res.version_id) if r["name"] is None
    )
    named_before = queries.coverage(conn, res.version_id)["named"]
    assert gate.upsert_symbol(
        conn, sid, "parse_header", provenance="human", confidence=1.0, actor="h"
    )["written"]
    d = gate.revert(conn, sid, actor="human:cli")
    assert d["written"] and "cleared" in d["reason"]
    assert queries.get_symbol(conn, sid) is None  # unnamed again: no record at all
    assert queries.renames(conn, sid)[0]["kind"] == "revert"  # a recorded human edit
    assert queries.coverage(conn, res.version_id)["named"] == named_before


def test_version_option_and_demo_twice(tmp_path):
    out = _cli("--version")
    assert out.returncode == 0 and out.stdout.startswith("kbtool ")
    first = _cli("demo", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = _cli("demo", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "already holds the demo KB" in second.stdout.replace("\n", " ")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "kbtool.db").write_bytes(b"not a kb")
    third = _cli("demo", cwd=tmp_path / "other")
    assert third.returncode == 1 and "not the demo KB" in third.stderr.replace("\n", " ")


def test_benchmark_smoke_runs_and_finds_no_wrong_merge():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "lineage.py"), "--smoke"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stderr
    assert "wrong merges 0" in out.stdout and "wrong 0" in out.stdout


def test_own_profile_leaves_out_repeats_and_library_code() -> None:
    """A hash repeated among one kind (bodies, or shapes) leaves its functions out; a missing
    or empty hash is no repeat, nor is a body hash that equals another function's shape hash;
    library code (its own flag, or a hash the other module's library has) is counted apart;
    fewer than ``SMALL_MODULE`` own functions: the tiny ones count too."""
    rows = [
        ("b1", "s1", 10, False),
        ("b2", "s2", 10, False),
        ("b3", "sX", 10, False),  # shape repeated
        ("b4", "sX", 10, False),
        (None, "s5", 10, False),  # no body hash, twice: no repeat
        (None, "s6", 10, False),
        ("", "s7", 10, False),
        ("", "s8", 10, False),
        ("s1", "b9", 10, False),  # a body hash equal to b1's shape: no repeat
        ("b10", "s10", 10, True),  # library
        ("b11", "s11", 10, False),  # library of the other module
        ("b12", "s12", MIN_INSTRS - 1, False),  # tiny
        (None, None, 10, False),  # no hash at all: not counted
    ]
    mine = [(b, s) for b, s, _, _ in rows[:2] + rows[4:9]]
    p = own_profile(rows, frozenset({"s11"}))
    assert (p.pairs, p.basis, p.library) == ((*mine, ("b12", "s12")), "own-small", 2)
    assert p.bodies == {"b1", "b2", "s1", "b12"} and "s5" in p.shapes
    more = [(f"u{i}", f"v{i}", 10, False) for i in range(SMALL_MODULE)]
    p = own_profile(rows + more, frozenset({"s11"}))
    assert (p.pairs, p.basis, p.library) == ((*mine, *((b, s) for b, s, _, _ in more)), "own", 2)
    lib_only = [("a", "b", 10, True), ("c", "d", 10, False)]
    p = own_profile(lib_only, frozenset({"d"}))  # nothing of its own: every function counts
    assert (p.pairs, p.basis, p.library) == ((("a", "b"), ("c", "d")), "all", 2)
