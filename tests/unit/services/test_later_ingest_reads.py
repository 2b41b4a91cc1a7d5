"""What a later release's ingest reads and asks outside the matcher gives the answers it gave
before (issue #30, session 24): the report's runtime flag with the runtime imports found once,
a view's C strings kept by address, the lineage choice with the new module's side found once
for every stored version, the stable ids a new function may not take asked id by id, and a
version's module bytes read by blob I/O."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import UnknownVersionError
from kbtool.services import lineage
from kbtool.services.diff import relocation
from kbtool.services.diff.report import _is_runtime, _runtime_check
from kbtool.services.ingest import ingest_file
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


def test_the_reports_runtime_check_answers_as_is_runtime(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        for vid in (1, 2):
            rows = {r["index"]: r for r in queries.matching_rows(conn, vid)}
            check = _runtime_check(rows)
            named = {"name": "memcpy", "runtime_oracle": 0}
            oracle = {"name": "app", "runtime_oracle": 1}
            plain = {"name": "app", "runtime_oracle": 0}
            for ann in (None, named, oracle, plain):
                flags = [check(r, ann) for r in rows.values()]
                assert flags == [_is_runtime(r, ann, rows) for r in rows.values()]
            flags = [check(r, None) for r in rows.values()]
            assert any(flags) and not all(flags)
            assert all(check(r, oracle) for r in rows.values())
            assert check(None, None) is False
            # a small caller of a runtime import, and the same caller of none
            imp = next(
                i
                for i, r in rows.items()
                if r["imported"]
                and check(
                    {"raw_name": None, "export_names": [], "instr_count": 3, "calls": [i]}, None
                )
            )
            wrapper = {"raw_name": "app_code", "export_names": [], "instr_count": 3}
            assert check(dict(wrapper, calls=[imp, 10**9]), None)
            assert not check(dict(wrapper, calls=[10**9]), None)
    finally:
        conn.close()


def test_a_views_c_strings_are_kept_by_address() -> None:
    data = Z55.read_bytes()
    v = relocation.ModuleView(data)
    fresh = relocation.ModuleView(data)
    seg_lo = v.dmap.starts[0]
    addrs = list(range(seg_lo, seg_lo + 4096, 3)) + [0, 1 << 40]
    first = [v.cstring(u) for u in addrs]
    assert first == [fresh._cstring(u) for u in addrs]
    assert any(s is not None for s in first) and None in first
    assert [v.cstring(u) for u in addrs] == first  # asked again: the kept answers
    assert len(v._cstrings) == len(set(addrs)) and not fresh._cstrings


def test_the_lineage_choice_scores_every_version_as_pair_overlap(tmp_path) -> None:
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    try:
        ingest_file(conn, Z55, label="a")
        ingest_file(conn, Z56, label="b")
        new = lineage.stored_rows(conn, 2, queries.lineage_records(conn)[2])
        got = lineage.choose_lineage(conn, new, default_name="zstd")
        records = queries.lineage_records(conn)
        want = {
            vid: lineage.pair_overlap(new, lineage.stored_rows(conn, vid, records[vid]))
            for vid in (1, 2)
        }
        assert [c["overlap"] for c in got.candidates] == [
            round(want[c["version_id"]][0], 4) for c in got.candidates
        ]
        assert len(got.candidates) == 2 and got.parent_version_id == 2
        prof = want[2][1]
        assert (got.basis, got.own_functions) == (prof.basis, prof.size)
        alone = lineage._own_profile(lineage._OwnBase(new.rows), frozenset())
        assert alone == lineage.own_profile(new.rows)
    finally:
        conn.close()


def test_stable_ids_taken_are_asked_id_by_id_in_a_big_kb(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        every = queries.taken_stable_ids(conn)
        asked = sorted(every)[:5] + ["fn:nobody", sorted(every)[-1] + "x"]
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        lookups = queries.stable_id_taken(conn, 2)  # many more rows than questions
        assert [lookups(s) for s in asked] == [s in every for s in asked]
        assert not any("DISTINCT" in q for q in seen)
        seen.clear()
        whole = queries.stable_id_taken(conn, len(every))  # as many questions as rows
        assert [whole(s) for s in asked] == [s in every for s in asked]
        assert any("DISTINCT" in q for q in seen)
    finally:
        conn.set_trace_callback(None)
        conn.close()


def test_module_bytes_read_by_blob_are_the_stored_value(tmp_path) -> None:
    conn = open_rw(tmp_path / "kb.db", page_size=1024)  # (a small page: long overflow chains)
    try:
        conn.execute("INSERT INTO programs (name, created_at) VALUES ('p', 'x')")
        for label in ("a", "b", "c", "d"):
            conn.execute(
                "INSERT INTO versions (label, sha256, size, imported_functions,"
                " defined_functions, exported_functions, ingested_at, program_id)"
                " VALUES (?, ?, 1, 0, 0, 0, 'x', 1)",
                (label, label),
            )
        stored = {1: b"", 2: b"\x00asm", 3: bytes(range(256)) * 999}
        for vid, data in stored.items():
            conn.execute("INSERT INTO modules (version_id, data) VALUES (?, ?)", (vid, data))
        for vid, data in stored.items():
            got = queries.module_bytes(conn, vid)
            assert type(got) is bytes and got == data
            (plain,) = conn.execute(
                "SELECT data FROM modules WHERE version_id = ?", (vid,)
            ).fetchone()
            assert got == plain
        assert queries.module_bytes(conn, 4) is None  # a version without module bytes
        with pytest.raises(UnknownVersionError):
            queries.module_bytes(conn, 99)
    finally:
        conn.close()
