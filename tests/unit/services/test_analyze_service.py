"""``analyze_version`` (service, ``kbtool analyze``, MCP tool, TUI detail section) on the
demo KB, a threaded .wat module and a wasi-libc program of ours."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.analysis import analyze_module_static
from kbtool.analysis.families import canonical
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.gate import upsert_symbol
from kbtool.services.analyze import ACTOR, AnalyzeError, analyze_version, kb_name
from kbtool.services.ingest import ingest_bytes
from kbtool.wasm import analyze_module
from tests.support.paths import ROOT

REFS = ROOT / "kbtool" / "analysis" / "refs"
CLI = [sys.executable, "-m", "kbtool.cli"]

THREADS_WAT = """
(module
  (memory 1 1 shared)
  (func $spin_lock (param i32)
    (loop $again
      local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg offset=4
      br_if $again))
  (func $job (param i32) (result i32)
    local.get 0 call $spin_lock
    local.get 0 i32.load offset=8
    local.get 0 i32.load offset=12 i32.add
    local.get 0 i32.const 1 i32.atomic.rmw.add offset=16 i32.add)
  (func $start (param i32 i32) local.get 1 call $job drop)
  (export "wasi_thread_start" (func $start)))
"""


# ---------------------------------------------------------------- helpers


def events(conn) -> int:
    return conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]


def symbols(conn) -> list[tuple]:
    return [tuple(r) for r in conn.execute("SELECT * FROM symbols ORDER BY stable_id")]


def recognised(conn, version_id: int) -> dict[int, str]:
    """index -> KB name the pure analysis recognises in a stored version."""
    data = queries.module_bytes(conn, version_id)
    sa = analyze_module_static(analyze_module(data), data)
    return {n["func_index"]: kb_name(n["name"]) for n in sa.names if kb_name(n["name"])}


def wat(tmp_path: Path, text: str) -> bytes:
    exe = shutil.which("wat2wasm")
    if exe is None:
        pytest.skip("wat2wasm not installed")
    src, out = tmp_path / "m.wat", tmp_path / "m.wasm"
    src.write_text(text)
    subprocess.run([exe, "--enable-threads", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


@pytest.fixture
def threads_kb(tmp_path) -> tuple[Path, int]:
    db = tmp_path / "t.db"
    conn = open_rw(db)
    vid = ingest_bytes(conn, wat(tmp_path, THREADS_WAT), label="mt-1.0").version_id
    conn.close()
    return db, vid


# ---------------------------------------------------------------- the service on the demo KB


def test_names_written_as_agent_by_analyzer(demo_kb):
    conn = open_rw(demo_kb)
    before = events(conn)
    res = analyze_version(conn, 1)
    written = [n for n in res["names"] if n["outcome"] == "written"]
    assert written and res["summary"]["names"]["written"] == len(written)
    assert events(conn) - before == len(written)  # one event per write, none for no-ops
    for n in written:
        fn = queries.get_function(conn, 1, n["func_index"])
        sym = fn["symbol"]
        assert (sym["name"], sym["provenance"], sym["confidence"]) == (
            n["name"],
            "agent",
            n["confidence"],
        )
        assert sym["evidence"][0]["actor"] == ACTOR
        assert sym["evidence"][0]["recognizer"]
        last = queries.annotation_events(conn, fn["stable_id"])[-1]
        assert (last["actor"], last["kind"], last["provenance"]) == (ACTOR, "agent-guess", "agent")
    # names follow identities: version 2 shows them without a second analysis
    later = queries.annotations_by_index(conn, 2)
    carried = {queries.get_function(conn, 1, n["func_index"])["stable_id"] for n in written}
    assert any(r["provenance"] == "agent" for r in later.values())
    assert carried
    # one function per name: nothing written that another function of the version holds
    names = [r["name"] for r in queries.annotations_by_index(conn, 1).values()]
    assert all(names.count(n["name"]) == 1 for n in written)


def test_rerun_is_a_no_op(demo_kb):
    conn = open_rw(demo_kb)
    first = analyze_version(conn, 1)
    n_events, syms = events(conn), symbols(conn)
    stored = queries.analysis_result(conn, 1)
    second = analyze_version(conn, 1)
    assert events(conn) == n_events
    assert symbols(conn) == syms
    assert queries.analysis_result(conn, 1)["thread_facts"] == stored["thread_facts"]
    assert queries.analysis_result(conn, 1)["structs"] == stored["structs"]
    assert second["structs"] == first["structs"] and second["thread_facts"] == first["thread_facts"]
    assert second["summary"]["names"]["written"] == 0
    assert second["summary"]["recognised"] == first["summary"]["recognised"]
    # the stored result is the returned one (contract shape)
    assert json.loads(json.dumps(first["structs"])) == stored["structs"]
    assert stored["analyzed"] and stored["summary"] == first["summary"]
    assert queries.analysis_result(conn, 1)["summary"] == second["summary"]


def test_locked_human_and_higher_confidence_oracle_names_survive(demo_kb):
    conn = open_rw(demo_kb)
    found = recognised(conn, 1)
    unnamed = [i for i in sorted(found) if queries.get_function(conn, 1, i)["name"] is None]
    assert len(unnamed) >= 4
    locked, unlocked, oracle_hi, oracle_lo = unnamed[:4]
    sid = {i: queries.get_function(conn, 1, i)["stable_id"] for i in unnamed[:4]}
    upsert_symbol(conn, sid[locked], "kept_locked", provenance="human", confidence=1.0, actor="t")
    upsert_symbol(
        conn, sid[unlocked], "kept_human", provenance="human", confidence=0.3, actor="t", lock=False
    )
    upsert_symbol(
        conn, sid[oracle_hi], "kept_oracle", provenance="oracle", confidence=0.99, actor="t"
    )
    upsert_symbol(
        conn, sid[oracle_lo], "weak_oracle", provenance="oracle", confidence=0.1, actor="t"
    )
    before = events(conn)
    res = analyze_version(conn, 1)
    outcome = {n["func_index"]: n for n in res["names"]}
    for i, name in ((locked, "kept_locked"), (unlocked, "kept_human"), (oracle_hi, "kept_oracle")):
        assert queries.get_function(conn, 1, i)["name"] == name
        assert outcome[i]["outcome"] == "refused"
        rejections = [
            e
            for e in queries.annotation_events(conn, sid[i])
            if e["actor"] == ACTOR and not e["written"]
        ]
        assert len(rejections) == 1
    assert "locked" in outcome[locked]["reason"]
    # the contract's gate: a higher-confidence agent write replaces a weaker oracle name
    assert queries.get_function(conn, 1, oracle_lo)["name"] == found[oracle_lo]
    after_first = events(conn)
    assert after_first > before
    again = analyze_version(conn, 1)
    assert events(conn) == after_first  # refusals are not repeated as new events
    assert {n["func_index"]: n["outcome"] for n in again["names"]}[locked] == "refused"


def test_unknown_version_and_missing_bytes(demo_kb):
    conn = open_rw(demo_kb)
    with pytest.raises(UnknownVersionError) as exc:
        analyze_version(conn, 99)
    assert "unknown version id 99" in str(exc.value) and "\n" not in str(exc.value)
    conn.execute("DELETE FROM modules WHERE version_id = 2")
    with pytest.raises(AnalyzeError, match="no stored module bytes"):
        analyze_version(conn, 2)


def test_kb_name_spelling():
    assert kb_name("dlmalloc") == "malloc"
    assert kb_name("c.string.strlen") == "strlen"
    assert kb_name("heap.BrkAllocator.alloc") == "heap::BrkAllocator::alloc"
    assert kb_name("a b") is None


# ---------------------------------------------------------------- thread facts, structs, views


def test_thread_facts_and_structs_stored_and_read(threads_kb):
    db, vid = threads_kb
    conn = open_rw(db)
    res = analyze_version(conn, vid)
    kinds = res["summary"]["thread_facts_by_kind"]
    assert kinds["atomic_site"] == 2 and kinds["shared_memory"] == 1
    assert kinds["worker_entry"] == 1 and kinds["worker_only"] == 2
    lock = queries.thread_facts(conn, vid, 0)
    assert [f["kind"] for f in lock] == ["atomic_site", "lock", "worker_only"]
    assert lock[0]["class"] == "cmpxchg" and lock[0]["offset"] == 4 and lock[1]["pattern"] == "spin"
    assert queries.thread_facts(conn, vid) == res["thread_facts"]
    st = queries.structs_for_function(conn, vid, 1)
    assert st and {f["offset"] for f in st[0]["fields"]} >= {8, 12}
    assert all(set(f) == {"offset", "size", "type", "name"} for f in st[0]["fields"])
    assert st[0]["bases"] == ["p0"]
    assert queries.structs_for_function(conn, vid, 2) == []


def test_tui_detail_shows_threads_and_structs(threads_kb):
    from tests.support.tui import make_app, screen_text, settle

    db, vid = threads_kb

    async def detail_text(index: int) -> str:
        app = make_app(db)
        async with app.run_test(size=(100, 60)) as pilot:
            await settle(pilot)
            app.open_detail(vid, index)
            await settle(pilot)
            return screen_text(app)

    before = asyncio.run(detail_text(1))
    assert "threads" not in before and "structs" not in before  # not analysed: no section
    conn = open_rw(db)
    analyze_version(conn, vid)
    conn.close()
    text = asyncio.run(detail_text(1))
    assert "atomics" in text and "i32.atomic.rmw.add x1" in text
    assert "runs only on worker threads" in text
    assert "struct_f" in text and "+8 i32" in text
    lock = asyncio.run(detail_text(0))
    assert "spin" in lock


# ---------------------------------------------------------------- CLI


def test_cli_json_shape_and_summary(demo_kb):
    r = subprocess.run(
        CLI + ["--db", str(demo_kb), "analyze", "1", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    res = json.loads(r.stdout)
    assert {"thread_facts", "structs", "names", "review", "summary"} <= set(res)
    assert res["structs"] and all(
        {"name", "source_function", "fields"} <= set(s) for s in res["structs"]
    )
    assert res["summary"]["names"]["written"] > 0
    assert res["summary"]["structs"] == len(res["structs"])
    r2 = subprocess.run(
        CLI + ["--db", str(demo_kb), "analyze", "1"], capture_output=True, text=True, check=True
    )
    assert "0 written" in r2.stdout and f"structs: {len(res['structs'])} recovered" in r2.stdout
    assert "thread facts: none" in r2.stdout
    bad = subprocess.run(
        CLI + ["--db", str(demo_kb), "analyze", "42"], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "unknown version id 42" in bad.stderr
    assert "Traceback" not in bad.stderr


# ---------------------------------------------------------------- MCP


def test_mcp_analyze_version(demo_kb):
    pytest.importorskip("mcp.client.stdio")
    from tests.support.mcp import call, call_error, dump, mcp_session

    async def main():
        async with mcp_session(demo_kb) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            schema = dump(tools["analyze_version"])["inputSchema"]
            assert schema["required"] == ["version_id"]
            assert schema["properties"]["version_id"]["type"] == "integer"
            first = await call(s, "analyze_version", version_id=1)
            n_events = events(open_ro(demo_kb))
            second = await call(s, "analyze_version", version_id=1)
            assert events(open_ro(demo_kb)) == n_events
            err = await call_error(s, "analyze_version", version_id=77)
            return first, second, err

    first, second, err = asyncio.run(main())
    assert first["summary"]["names"]["written"] > 0 and second["summary"]["names"]["written"] == 0
    for s in first["structs"]:
        assert {"name", "source_function", "fields"} <= set(s)
        assert all(set(f) == {"offset", "size", "type", "name"} for f in s["fields"])
    assert isinstance(first["thread_facts"], list)
    assert "unknown version id 77" in err and "list_versions" in err
    conn = open_ro(demo_kb)
    assert queries.analysis_result(conn, 1)["structs"] == first["structs"]
    sym = queries.get_function(
        conn, 1, next(n["func_index"] for n in first["names"] if n["outcome"] == "written")
    )["symbol"]
    assert sym["provenance"] == "agent" and sym["evidence"][0]["actor"] == ACTOR


# ---------------------------------------------------------------- a wasi-libc program of ours

WASI_PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t n = strlen(argv[0]) + (size_t)argc * 7;
    char *p = malloc(n + 1), *q = calloc(n + 1, 1);
    memset(p, 'a', n); p[n] = 0;
    memcpy(q, p, n / 2);
    printf("%zu %d %s\n", strlen(p), strcmp(p, q), strchr(p, 'a') ? "y" : "n");
    free(q); free(p);
    return 0;
}
"""


def test_wasi_libc_program_named_right(tmp_path):
    clang = shutil.which("clang")
    if clang is None or not Path("/usr/lib/wasm32-wasi/libc.a").exists():
        pytest.skip("clang or Debian wasi-libc not installed")
    bindir = tmp_path / "bin"  # only LLVM tools: clang would run wasm-opt, which drops names
    bindir.mkdir()
    for tool in ("clang", "wasm-ld", "wasm-ld-14"):
        if shutil.which(tool):
            (bindir / tool).symlink_to(shutil.which(tool))
    src, out, mapf = tmp_path / "p.c", tmp_path / "p.wasm", tmp_path / "p.map"
    src.write_text(WASI_PROG)
    r = subprocess.run(
        [
            str(bindir / "clang"),
            "--target=wasm32-wasi",
            "--sysroot=/usr",
            "-O2",
            str(src),
            "-o",
            str(out),
            f"-Wl,--Map={mapf}",
            "-Wl,--strip-all",
        ],
        capture_output=True,
        text=True,
        env={"PATH": str(bindir)},
    )
    if r.returncode:
        pytest.skip(f"wasi-libc link failed: {r.stderr[:200]}")
    sys.path.insert(0, str(REFS))
    from make_fingerprints import map_names

    data = out.read_bytes()
    a = analyze_module(data)
    assert not a.module.func_names  # stripped: the names come from the analysis alone
    listed = map_names(mapf.read_text())
    assert len(listed) == len(a.module.code)
    truth = {a.module.num_func_imports + k: n for k, n in enumerate(listed)}
    conn = open_rw(tmp_path / "k.db")
    vid = ingest_bytes(conn, data, label="prog").version_id
    res = analyze_version(conn, vid)
    written = [n for n in res["names"] if n["outcome"] == "written"]
    assert len(written) >= 3
    for n in written:
        assert canonical(n["name"]) == canonical(truth[n["func_index"]]), n
        assert queries.get_function(conn, vid, n["func_index"])["provenance"] == "agent"
    n_events = events(conn)
    analyze_version(conn, vid)
    assert events(conn) == n_events


def test_benchmark_smoke():
    from benchmarks import analyze_service as bench

    assert bench.main(["--smoke"]) == 0
