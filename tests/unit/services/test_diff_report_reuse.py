"""A later release's report reuses what ingest has: the relocation check's view of the new
module takes the decoder's parse of the same bytes (the same view, one parse fewer, the same
KB), and the runtime flag of a change reads no imports for a function too big to be a
runtime wrapper (the answer ``runtime_by_signature`` gives)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from kbtool.analysis.runtime import RUNTIME_WRAPPER_MAX_INSTR, is_runtime_name, runtime_by_signature
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.diff import relocation, report
from kbtool.services.diff.report import _is_runtime, code_runtime
from kbtool.services.ingest import ingest_file
from kbtool.wasm.reader import parse_module
from testkit.kbcompare import compare
from tests.support.paths import DEMO_DIR

RELEASES = (DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm")


def _fields(v: relocation.ModuleView) -> tuple:
    return (
        v.go,
        v.sized,
        v.slo,
        v.shi,
        v.shapes_agree,
        v.nimp,
        v.ndef,
        v.type_text,
        v.m.code,
        v.dmap.starts,
        v.dmap.ends,
        [bytes(d) for d in v.dmap.datas],
        (v.dmap.lo, v.dmap.hi, v.dmap.wasm32, v.dmap.sized_first),
    )


def test_a_view_of_a_given_parse_is_the_view_of_the_bytes() -> None:
    for path in RELEASES:
        data = path.read_bytes()
        m = parse_module(data)
        given, own = relocation.ModuleView(data, m), relocation.ModuleView(data)
        assert given.m is m
        assert _fields(given) == _fields(own)


def _ingest_both(path, monkeypatch, *, reuse: bool) -> int:
    """Both demo releases into a fresh KB; how many modules the relocation views parsed
    while the later one was ingested."""
    monkeypatch.setattr(relocation, "_VIEWS", OrderedDict())  # (no view of an earlier test)
    parsed = []
    real_parse, real_view = relocation.parse_module, relocation.module_view

    def counted(data):
        parsed.append(len(data))
        return real_parse(data)

    conn = open_rw(path)
    try:
        ingest_file(conn, RELEASES[0], label="1.5.5")
        monkeypatch.setattr(relocation, "parse_module", counted)
        if not reuse:  # ingest's call parses the bytes itself, as the report's did
            monkeypatch.setattr(
                relocation, "module_view", lambda data, m=None, **_kw: real_view(data)
            )
        ingest_file(conn, RELEASES[1], label="1.5.6")
    finally:
        conn.close()
    monkeypatch.undo()
    return len(parsed)


def test_the_later_release_is_parsed_once_and_the_kb_is_the_same(tmp_path, monkeypatch) -> None:
    assert _ingest_both(tmp_path / "reuse.db", monkeypatch, reuse=True) == 1  # the earlier one
    assert _ingest_both(tmp_path / "parse.db", monkeypatch, reuse=False) == 2
    n, diff = compare(tmp_path / "reuse.db", tmp_path / "parse.db")
    assert diff is None and n > 1000
    conn = open_ro(tmp_path / "reuse.db")
    try:
        assert queries.stored_diff_stamp(conn, 1, 2) is not None
    finally:
        conn.close()


def _reference(row, rows) -> bool:
    """The flag as computed before: names, else the imports it calls and its size."""
    if is_runtime_name(row["raw_name"]) or any(is_runtime_name(e) for e in row["export_names"]):
        return True
    imports = [
        rows[c]["import_name"]
        for c in dict.fromkeys(row["calls"])
        if c in rows and rows[c]["imported"]
    ]
    return runtime_by_signature(imports, row["instr_count"])


def test_the_runtime_flag_answers_as_before(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        for vid in (1, 2):
            rows = {r["index"]: r for r in queries.matching_rows(conn, vid)}
            flags = [code_runtime(r, rows) for r in rows.values()]
            assert flags == [_reference(r, rows) for r in rows.values()]
            assert any(flags) and not all(flags)
            # a wrapper of a runtime import up to the bound, not one past it
            imp = next(i for i, r in rows.items() if r["imported"] and r["import_name"])
            assert runtime_by_signature([rows[imp]["import_name"]], 0)
            base = {"raw_name": "app_code", "export_names": [], "calls": [imp, imp]}
            at = dict(base, instr_count=RUNTIME_WRAPPER_MAX_INSTR)
            past = dict(base, instr_count=RUNTIME_WRAPPER_MAX_INSTR + 1)
            assert _is_runtime(at, None, rows) and not _is_runtime(past, None, rows)
            assert _reference(at, rows) and not _reference(past, rows)
    finally:
        conn.close()


def test_a_known_hash_keys_the_view_as_its_bytes_do(monkeypatch) -> None:
    """``module_view(..., sha=)`` (ingest's hash, a version's stored one) keeps the view under
    the key the bytes' own hash gives: the same view comes back either way."""
    monkeypatch.setattr(relocation, "_VIEWS", OrderedDict())
    data = RELEASES[0].read_bytes()
    hexed = hashlib.sha256(data).hexdigest()
    v = relocation.module_view(data, sha=hexed)
    assert v is not None and relocation.module_view(data) is v
    assert relocation.cached_view(hashlib.sha256(data).digest()) is v
    assert relocation.cached_view(hashlib.sha256(b"other").digest()) is None


def test_the_report_with_the_stored_texts_given_is_the_same(demo_kb_master, monkeypatch) -> None:
    """A report given the new version's ``mem_ops`` texts (ingest: those it just stored)
    reads only the old version's and is the report that reads both; the parent's view, kept,
    is taken by its stored hash without reading its bytes."""
    conn = open_ro(demo_kb_master)
    try:
        pg = report.pair_versions(conn, 1, 2)
        va, vb = queries.version_info(conn, 1), queries.version_info(conn, 2)
        built = report.build_report(conn, pg, va, vb, triage=False)
        texts = queries.mem_ops_json_for(conn, 2, sorted(pg.new_rows))
        asked: list[int] = []
        real_mem, real_bytes = queries.mem_ops_json_for, queries.module_bytes
        monkeypatch.setattr(
            queries, "mem_ops_json_for", lambda c, v, i: asked.append(v) or real_mem(c, v, i)
        )
        monkeypatch.setattr(
            queries, "module_bytes", lambda c, v: asked.append(-v) or real_bytes(c, v)
        )
        given = report.build_report(conn, pg, va, vb, triage=False, new_mem=texts)
        assert given == built
        assert any(c.get("relocated") for c in given["changes"])
        assert 1 in asked  # the layout check compared texts: only the parent's were read
        assert 2 not in asked and -1 not in asked  # (the parent's view was kept by `built`)
    finally:
        conn.close()
