"""Issue 30 point 3: after a rename the changelog reads (a modified function, a caller or
callee of one, a new function's callee, a runtime-looking name given or taken away), only the
entries that read it are built again (:mod:`kbtool.services.diff.relabel`), and the answer is
the one a fresh computation with the cache off gives, whatever the sequence of renames. Real
KBs (wat2wasm + the real ingest), the real disk cache, the CLI's bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.kb.queries.diff_rows import function_bodies, import_indices, matching_rows_for
from kbtool.services.diff.cache import DiffCache, DiskAnswers
from kbtool.services.diff.relocation import body_tokens, module_view, tokens_of
from kbtool.services.ingest import ingest_bytes
from tests.support.cli import run_cli

#: six exported functions changed between the versions (a bound moved in three checks: a
#: renumbered constant), callers and callees of each other, a runtime function by its export
#: name (memcpy), a function deleted and one added (called by a modified one)
WAT = """
(module
  (import "env" "log" (func $log (param i32)))
  (import "env" "abort" (func $abort))
  (memory 1)
  (func $helper (export "helper") (param i32) (result i32)
    local.get 0 i32.const 1 i32.add)
  (func $check_a (export "check_a") (param i32) (result i32)
    local.get 0 i32.const {lim} i32.lt_u
    if (result i32) local.get 0 call $helper else i32.const 0 end)
  (func $check_b (export "check_b") (param i32) (result i32)
    local.get 0 i32.const {lim} i32.lt_u
    if (result i32) local.get 0 call $helper i32.const 2 i32.mul else i32.const 1 end)
  (func $check_c (export "check_c") (param i32) (result i32)
    local.get 0 i32.const {lim} i32.lt_u
    if (result i32) local.get 0 i32.const 3 i32.add call $helper else i32.const 2 end)
  (func $reader (export "reader") (param i32) (result i32)
    local.get 0 i32.load offset={off} call $check_a)
  (func $top (export "top") (param i32) (result i32)
    {guard}
    local.get 0 call $reader {more} call $anon2 call $log local.get 0)
  (func $memcpy (export "memcpy") (param i32) (result i32)
    local.get 0 i32.const {k} i32.add call $helper)
  {extra}
  (func $anon (param i32) (result i32)
    local.get 0 call $helper i32.const {k} i32.mul call $check_c)
  (func $anon2 (param i32) (result i32)
    local.get 0 i32.const {lim} i32.lt_u
    if (result i32) local.get 0 call $check_b else local.get 0 call $anon end)
)
"""
V1 = {
    "lim": 256,
    "off": 348,
    "k": 4,
    "guard": "",
    "more": "",
    "extra": '(func $gone (export "gone") (param i64 i64) (result i64)\n'
    "    local.get 0 local.get 1 i64.xor i64.const 5 i64.mul)",
}
V2 = {
    "lim": 512,
    "off": 356,
    "k": 8,
    "guard": "local.get 0 i32.const 100 i32.gt_u if call $abort end",
    "more": "call $fresh",
    "extra": '(func $fresh (export "fresh") (param i32) (result i32)\n'
    "    local.get 0 call $helper call $check_b)",
}
EXPORTS = (
    "helper",
    "check_a",
    "check_b",
    "check_c",
    "reader",
    "top",
    "memcpy",
    "gone",
    "fresh",
    "anon",
    "anon2",
    "env.log",
    "env.abort",
)
NAMES = ("parse_header", "memset", "read_frame", "abort_now", "__rust_alloc", "xmalloc")


def _kb(tmp_path: Path) -> Path:
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    for label, fields in (("1.0", V1), ("1.1", V2)):
        src = tmp_path / f"{label}.wat"
        src.write_text(WAT.format(**fields))
        subprocess.run(["wat2wasm", str(src), "-o", str(tmp_path / "m.wasm")], check=True)
        ingest_bytes(conn, (tmp_path / "m.wasm").read_bytes(), label=label)
    conn.close()
    return db


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _fresh(conn, a: int, b: int) -> tuple[Any, Any]:
    """The answer with the cache off (computed, or the stored report and its changelog)."""
    cache = DiffCache(disk=DiskAnswers(None))
    return _plain(cache.report(conn, a, b)), _plain(cache.changelog(conn, a, b))


def _sids(conn) -> dict[str, str]:
    """export name -> stable id, over both versions."""
    out: dict[str, str] = {}
    for v in (1, 2):
        for idx, sid in conn.execute(
            "SELECT idx, stable_id FROM functions WHERE version_id = ?", (v,)
        ):
            row = matching_rows_for(conn, v, [idx])[idx]
            for e in row["export_names"]:
                out[e] = sid
            if row["imported"]:
                out[row["import_name"]] = sid  # its label stays the import's name
            elif not row["export_names"]:  # no name: a hint instead (anon, anon2)
                out["anon2" if "anon" in out and out["anon"] != sid else "anon"] = sid
    return out


def _name(db: Path, sid: str, name: str) -> None:
    rw = open_rw(db)
    try:
        upsert_symbol(rw, sid, name, provenance="human", confidence=1.0, actor="t")
    finally:
        rw.close()


def _asked(conn, disk: DiskAnswers, a: int = 2, b: int = 1) -> tuple[DiffCache, Any, Any]:
    cache = DiffCache(disk=disk)  # a new process: only the disk knows the pair
    report, cl = cache.report(conn, a, b), cache.changelog(conn, a, b)
    return cache, _plain(report), _plain(cl)


def test_renaming_a_modified_function_rebuilds_only_its_readers(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    conn = open_ro(db)
    try:
        first, _r, cl0 = _asked(conn, disk)
        assert first.computed == 1
        assert {m["from_index"] for m in cl0["modified"]} and cl0["new"] and cl0["deleted"]
        stored = _asked(conn, disk, 1, 2)[0]  # ingest stored (1, 2): its changelog is kept
        assert stored.changelogs == 1
        sids = _sids(conn)
        _name(db, sids["check_a"], "bounded_lookup")  # modified, called by reader
        later, report, cl = _asked(conn, disk)
        assert (later.computed, later.partial, later.disk_hits) == (0, 1, 0)
        assert "bounded_lookup" in json.dumps(cl)
        assert (report, cl) == _fresh(conn, 2, 1)
        stored, s_report, s_cl = _asked(conn, disk, 1, 2)  # the stored pair's changelog too
        assert (stored.changelogs, stored.partial) == (1, 1)  # built again, in part
        assert "bounded_lookup" in json.dumps(s_cl) and (s_report, s_cl) == _fresh(conn, 1, 2)
        # the rebuilt answer was kept under today's annotations: a plain read now
        again, report2, cl2 = _asked(conn, disk)
        assert (again.computed, again.partial, again.disk_hits) == (0, 0, 1)
        assert (report2, cl2) == (report, cl)
    finally:
        conn.close()


def test_a_runtime_looking_name_given_then_taken_away(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    conn = open_ro(db)
    try:
        _asked(conn, disk)
        sids = _sids(conn)
        for export, name in (
            ("reader", "memmove"),  # runtime-looking: a runtime change now
            ("reader", "parse_record"),  # taken away: its code says it is not runtime
            ("memcpy", "__rust_alloc"),
            ("memcpy", "copy_block"),  # taken away: still runtime by its export name
        ):
            _name(db, sids[export], name)
            later, report, cl = _asked(conn, disk)
            assert later.computed == 0 and later.partial == 1, (export, name)
            assert (report, cl) == _fresh(conn, 2, 1), (export, name)
        runtime = {c["name"]: c["runtime"] for c in report["changes"]}
        assert runtime["parse_record"] is False and runtime["copy_block"] is True
    finally:
        conn.close()


def test_any_sequence_of_renames_gives_the_fresh_answer(tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("relabel")
    db, disk = _kb(tmp), DiskAnswers(tmp / "diffs")
    conn = open_ro(db)
    sids = _sids(conn)
    _asked(conn, disk)
    _asked(conn, disk, 1, 2)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        st.lists(
            st.tuples(st.sampled_from(EXPORTS), st.sampled_from(NAMES), st.booleans()),
            min_size=1,
            max_size=4,
        )
    )
    def run(renames: list[tuple[str, str, bool]]) -> None:
        for export, name, ask_between in renames:
            _name(db, sids[export], f"{name}_{export}" if name[0] != "_" else name)
            if not ask_between:
                continue  # several renames in a row before the next request
            for a, b in ((2, 1), (1, 2)):
                later, report, cl = _asked(conn, disk, a, b)
                assert later.computed == 0
                assert (report, cl) == _fresh(conn, a, b)
        later, report, cl = _asked(conn, disk)
        assert later.computed == 0 and (report, cl) == _fresh(conn, 2, 1)

    try:
        run()
    finally:
        conn.close()


def test_the_cli_after_renames_prints_what_a_fresh_computation_prints(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), tmp_path / "diffs"
    env = {"KBTOOL_DB": str(db), "KBTOOL_DIFF_CACHE_DIR": str(disk)}
    assert run_cli("diff", "2", "1", "--json", env=env).returncode == 0
    conn = open_ro(db)
    sids = _sids(conn)
    conn.close()
    for export in ("check_b", "helper", "env.abort"):  # modified, a callee, an import
        _name(db, sids[export], f"renamed_{export}")
        kept = run_cli("diff", "2", "1", "--json", env=env)
        fresh = run_cli("diff", "2", "1", "--json", env=dict(env, KBTOOL_DIFF_CACHE_DIR="off"))
        assert kept.returncode == 0, kept.stderr
        assert kept.stdout == fresh.stdout
    _name(db, sids["fresh"], "renamed_fresh")  # a new function: the table a person reads
    kept = run_cli("diff", "2", "1", env=env)
    assert kept.returncode == 0 and "renamed_fresh" in kept.stdout, kept.stderr
    assert (
        kept.stdout == run_cli("diff", "2", "1", env=dict(env, KBTOOL_DIFF_CACHE_DIR="off")).stdout
    )


def test_the_set_queries_give_what_the_whole_version_reads_give(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    conn = open_ro(db)
    try:
        for v in (1, 2):
            rows = {r["index"]: r for r in queries.matching_rows(conn, v)}
            some = sorted(rows)[1::2]
            assert matching_rows_for(conn, v, [*some, 999]) == {i: rows[i] for i in some}
            view = module_view(queries.module_bytes(conn, v))
            bodies = function_bodies(conn, v, rows)
            assert bodies is not None
            for i in rows:
                got = tokens_of(bodies[i]) if i in bodies else []
                assert got == body_tokens(view, i)
            assert import_indices(conn, v) == {
                r["import_name"]: i for i, r in rows.items() if r["imported"]
            }
    finally:
        conn.close()


def test_a_state_of_another_shape_rebuilds_the_changelog_not_the_pairing(tmp_path: Path) -> None:
    db, disk = _kb(tmp_path), DiskAnswers(tmp_path / "diffs")
    conn = open_ro(db)
    try:
        _asked(conn, disk)
        for path in (tmp_path / "diffs").glob("*.json"):
            kept = json.loads(path.read_text())
            if "views" in kept:  # the entries' state, as an older kbtool wrote it
                del kept["format"]
                path.write_text(json.dumps(kept))
        _name(db, _sids(conn)["check_a"], "bounded_lookup")
        later, report, cl = _asked(conn, disk)
        assert (later.computed, later.relabelled, later.partial) == (0, 1, 0)
        assert (report, cl) == _fresh(conn, 2, 1)
        _name(db, _sids(conn)["check_b"], "bounded_lookup_b")  # the state was written again
        again, report, cl = _asked(conn, disk)
        assert (again.computed, again.partial) == (0, 1) and (report, cl) == _fresh(conn, 2, 1)
    finally:
        conn.close()
