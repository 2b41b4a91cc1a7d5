"""The diff service: report shape and classification, stored reports, carry-over, runtime flag.

Real modules only: the demo KB (two real zstd releases) and zstd pairs of the corpus
(``../shared/corpus/gt``, skipped when absent).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kbtool.analysis.runtime import is_runtime_import, is_runtime_label, is_runtime_name
from kbtool.cli import main
from kbtool.identity.matcher import FuncRecord
from kbtool.identity.pairing import Pair, Pairing, review_weak_neighbourhoods, review_wrapper_splits
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.carry import carry_confidence, carry_names
from kbtool.services.diff.report import compute_diff, get_diff, pair_versions, save_diff
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module
from tests.support.paths import corpus_file

CHANGE_KEYS = {
    "classification",
    "from_index",
    "to_index",
    "from_stable_id",
    "to_stable_id",
    "score",
    "review",
    "runtime",
    "name",
    "provenance",
    "confidence",
}
EXPLAIN_KEYS = {
    "explain",
    "change_weight",
    "triage",
    "reasons",
    "triage_kind",
    "relocated",
}  # extra fields (issue 29: triage, relocation mark)
SUMMARY_KEYS = {"unchanged", "moved", "modified", "added", "removed", "runtime_churn", "review"}


def defined(conn, vid: int) -> dict[int, str]:
    return dict(
        conn.execute(
            "SELECT idx, stable_id FROM functions WHERE version_id = ? AND imported = 0", (vid,)
        ).fetchall()
    )


def truth(path: Path) -> dict[int, str | None]:
    return {
        f.index: f.raw_name for f in analyze_module(path.read_bytes()).functions if not f.imported
    }


@pytest.fixture(scope="module")
def corpus_pair(tmp_path_factory):
    """1.5.5 named -> 1.5.6 stripped, names carried at ingest (what a user gets)."""
    old = corpus_file("gt/zstd-1.5.5.O2.named.wasm")
    new = corpus_file("gt/zstd-1.5.6.O2.stripped.wasm")
    path = tmp_path_factory.mktemp("pair") / "kb.db"
    conn = open_rw(path)
    a = ingest_file(conn, old, label="1.5.5")
    b = ingest_file(conn, new, label="1.5.6")
    conn.close()
    return path, a, b, truth(corpus_file("gt/zstd-1.5.6.O2.named.wasm"))


# ---------------------------------------------------------------- report


def test_report_shape_and_partition(demo_kb_master):
    conn = open_ro(demo_kb_master)
    report = get_diff(conn, 1, 2)
    assert set(report) == {
        "from",
        "to",
        "from_version_id",
        "to_version_id",
        "stored",
        "summary",
        "changes",
        "from_program",
        "to_program",
    }  # + "warning" only across programs
    assert (report["from"], report["to"]) == ("zstd-1.5.5", "zstd-1.5.6")
    # ingest stored the report of its (parent, new) pair: served without re-running the matcher
    assert report["stored"] is True and set(report["summary"]) == SUMMARY_KEYS
    computed = compute_diff(conn, 1, 2)
    assert computed["stored"] is False
    assert computed["changes"] == report["changes"] and computed["summary"] == report["summary"]
    changes = report["changes"]
    assert changes and all(CHANGE_KEYS <= set(c) <= CHANGE_KEYS | EXPLAIN_KEYS for c in changes)
    # every modified function says what changed (named or not)
    assert all(c["explain"] for c in changes if c["classification"] == "modified")
    assert all("explain" not in c for c in changes if c["classification"] != "modified")
    # every defined function of each side appears exactly once
    old, new = defined(conn, 1), defined(conn, 2)
    froms = [c["from_index"] for c in changes if c["from_index"] is not None]
    tos = [c["to_index"] for c in changes if c["to_index"] is not None]
    assert sorted(froms) == sorted(old) and sorted(tos) == sorted(new)
    s = report["summary"]
    count = {
        k: sum(c["classification"] == k for c in changes)
        for k in ("unchanged", "moved", "modified", "new", "deleted")
    }
    assert (s["unchanged"], s["moved"], s["modified"], s["added"], s["removed"]) == (
        count["unchanged"],
        count["moved"],
        count["modified"],
        count["new"],
        count["deleted"],
    )
    assert s["review"] == sum(c["review"] for c in changes)
    for c in changes:
        cls = c["classification"]
        if cls == "new":
            assert c["from_index"] is None and c["score"] is None
        elif cls == "deleted":
            assert c["to_index"] is None and c["score"] is None
        else:
            assert 0.0 <= c["score"] <= 1.0
            assert (
                c["from_stable_id"] == old[c["from_index"]]
                and c["to_stable_id"] == new[c["to_index"]]
            )
        if cls == "unchanged":
            assert c["from_index"] == c["to_index"]
        if cls == "moved":
            assert c["from_index"] != c["to_index"]
    # most of a point release is the same code; some changed, a few functions are new
    assert s["unchanged"] + s["moved"] > s["modified"] > 0 and s["added"] > 0
    # JSON round trip and determinism (every surface must serve the same bytes)
    assert json.loads(json.dumps(report)) == report
    assert compute_diff(conn, 1, 2) == dict(report, stored=False)


def test_to_side_name_else_from_side(demo_kb_master):
    conn = open_ro(demo_kb_master)
    report = get_diff(conn, 1, 2)
    sym = {
        sid: (n, p) for sid, n, p in conn.execute("SELECT stable_id, name, provenance FROM symbols")
    }
    for c in report["changes"]:
        expect = sym.get(c["to_stable_id"]) or sym.get(c["from_stable_id"]) or (None, None)
        assert (c["name"], c["provenance"]) == expect


def test_same_version_is_all_unchanged(demo_kb_master):
    conn = open_ro(demo_kb_master)
    report = compute_diff(conn, 2, 2)
    assert {c["classification"] for c in report["changes"]} == {"unchanged"}
    assert all(c["score"] >= 0.9 and not c["review"] for c in report["changes"])


def test_unknown_version_ids(demo_kb_master):
    conn = open_ro(demo_kb_master)
    for a, b in ((1, 99), (99, 2), (0, -1)):
        with pytest.raises(UnknownVersionError, match="known version ids: 1, 2"):
            get_diff(conn, a, b)
        with pytest.raises(UnknownVersionError):
            compute_diff(conn, a, b)


def test_get_diff_is_a_pure_read(demo_kb):
    before = demo_kb.read_bytes()
    conn = open_ro(demo_kb)  # query_only: any write would raise
    get_diff(conn, 1, 2)
    get_diff(conn, 2, 1)
    conn.close()
    assert demo_kb.read_bytes() == before


def test_save_then_every_read_gets_the_stored_report(demo_kb):
    conn = open_rw(demo_kb)
    report = compute_diff(conn, 1, 2)
    save_diff(conn, report)
    conn.close()
    conn = open_ro(demo_kb)
    stored = get_diff(conn, 1, 2)
    assert stored["stored"] is True and stored["changes"] == report["changes"]
    assert compute_diff(conn, 1, 2)["stored"] is False
    assert get_diff(conn, 2, 1)["stored"] is False  # the other direction was not saved
    with pytest.raises(UnknownVersionError):
        save_diff(open_rw(demo_kb), dict(report, to_version_id=77))


# ---------------------------------------------------------------- runtime


@pytest.mark.parametrize(
    "name",
    [
        "memcpy",
        "malloc",
        "free",
        "dlmalloc",
        "printf_core",
        "vfprintf",
        "__multf3",
        "__lshrti3",
        "__wasi_fd_write",
        "__wasm_call_ctors",
        "_start",
        "emscripten_builtin_malloc",
        "stackSave",
        "dynCall_vii",
        "_ZN4core3fmt5write17h0123456789abcdefE",
        "_ZN5alloc7raw_vec11finish_grow17h1",
        "core::panicking::panic",
        "<usize as core::fmt::Debug>::fmt",
        "_RNvNtCs1234_4core3fmt5write",
        "std::__2::basic_string<char>::append",
        "_ZNSt3__212basic_stringIcE6appendEPKc",
        "__cxa_throw",
        "runtime.mallocgc",
        "runtime/internal/atomic.Load",
        "syscall/js.valueGet",
        "compiler_rt.memcmp",
        "c.malloc.malloc",
        "pthread_mutex_lock",
        "__rust_alloc",
    ],
)
def test_runtime_names(name):
    assert is_runtime_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "ZSTD_compress",
        "HUF_readDTableX1_wksp",
        "main",
        "main.main",
        "compress_block",
        "my_free_list",
        "<myapp::Parser as core::fmt::Display>::fmt",
        "_RNvCs1_9coreutils3foo",
        "lightningcss::parse",
        "_ZN12lightningcss6parser5parse17h0",
        "sqlite3_open",
        "",
        None,
    ],
)
def test_application_names(name):
    assert not is_runtime_name(name)


def test_runtime_imports_and_labels():
    assert is_runtime_import("wasi_snapshot_preview1.fd_write")
    assert is_runtime_import("env.__syscall_openat") and is_runtime_import(
        "env.emscripten_memcpy_js"
    )
    assert not is_runtime_import("env.a") and not is_runtime_import("env.js_callback")
    assert is_runtime_label("libc-ref.wasm") and is_runtime_label("musl-1.2.wasm")
    assert not is_runtime_label("zstd-1.5.5.named.wasm")


def test_runtime_flag_and_churn_on_named_builds(tmp_path):
    path = tmp_path / "kb.db"
    conn = open_rw(path)
    a = ingest_file(conn, corpus_file("gt/zstd-1.5.6.O2.named.wasm"), label="a").version_id
    b = ingest_file(conn, corpus_file("gt/zstd-1.5.7.O2.named.wasm"), label="b").version_id
    report = compute_diff(conn, a, b)
    by_name = {c["name"]: c for c in report["changes"] if c["name"]}
    for rt in ("__stdio_write", "__multf3", "vfprintf", "_start", "c.malloc.malloc"):
        assert by_name[rt]["runtime"], rt
    app = [c for c in report["changes"] if (c["name"] or "").startswith(("ZSTD_", "HUF_", "FSE_"))]
    assert app and not any(c["runtime"] for c in app)
    # same toolchain on both sides: no churn, whatever changed
    assert report["summary"]["runtime_churn"] == 0
    # another toolchain on the new side: the changed runtime functions are churn
    conn.execute("UPDATE versions SET toolchain_version = 'clang 23.0.0' WHERE id = ?", (b,))
    report = compute_diff(conn, a, b)
    churn = sum(
        1
        for c in report["changes"]
        if c["runtime"] and c["classification"] in ("modified", "new", "deleted")
    )
    assert report["summary"]["runtime_churn"] == churn


# ---------------------------------------------------------------- carry-over


def test_carry_confidence():
    assert carry_confidence(0.9, 1.0, False) == 0.9
    assert carry_confidence(0.9, 0.5, False) == 0.45
    assert carry_confidence(0.95, 1.0, True) == 0.49
    assert carry_confidence(1.2, None, False) == 1.0


def test_carry_at_ingest_on_a_real_pair(corpus_pair):
    path, a, b, names = corpus_pair
    assert b.diff_carry is not None and {"written", "refused"} <= set(b.diff_carry)
    assert b.diff_carry["written"] > 20
    conn = open_ro(path)
    old_sids = set(defined(conn, a.version_id).values())
    carried = conn.execute(
        "SELECT f.idx, f.stable_id, s.name, s.confidence, s.evidence FROM functions f"
        " JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND s.provenance = 'diff-carry'",
        (b.version_id,),
    ).fetchall()
    assert len(carried) == b.diff_carry["written"]
    right = 0
    report = get_diff(conn, a.version_id, b.version_id)
    score = {c["to_index"]: c["score"] for c in report["changes"] if c["to_index"] is not None}
    for idx, sid, name, conf, ev in carried:
        assert sid not in old_sids  # only functions that did not keep the identity
        evidence = json.loads(ev)[0]
        assert evidence["source"] == "diff" and evidence["from_version_id"] == a.version_id
        assert 0 < conf <= score[idx] + 1e-9
        right += name == names[idx]
    assert right / len(carried) >= 0.97
    # names reached the new version: shared identity plus carry-over cover nearly everything
    named = conn.execute(
        "SELECT COUNT(*) FROM functions f JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0",
        (b.version_id,),
    ).fetchone()[0]
    assert named / len(defined(conn, b.version_id)) > 0.95


def test_carry_is_idempotent_and_counts_refusals(corpus_pair, tmp_path):
    src, a, b, _names = corpus_pair
    path = tmp_path / "kb.db"
    shutil.copy(src, path)
    conn = open_rw(path)
    again = carry_names(conn, a.version_id, b.version_id)
    assert again["written"] == 0 and again["refused"] == 0 and again["already"] > 20
    # a human renames a function that received a carried name; carry-over must not override it
    pg = pair_versions(conn, a.version_id, b.version_id)
    pair = next(p for p in pg.defined_pairs() if not p.identity)
    sid = pg.new_rows[pair.new_index]["stable_id"]
    assert upsert_symbol(
        conn, sid, "my_own_name", provenance="human", confidence=1.0, actor="human:test"
    )["written"]
    events = conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]
    res = carry_names(conn, a.version_id, b.version_id)
    assert res["refused"] == 1 and res["written"] == 0
    assert (
        conn.execute("SELECT name FROM symbols WHERE stable_id = ?", (sid,)).fetchone()[0]
        == "my_own_name"
    )
    row = conn.execute(
        "SELECT written, reason, provenance FROM annotation_events ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert tuple(row) == (0, "locked", "diff-carry")
    assert conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0] == events + 1


# ---------------------------------------------------------------- CLI


def test_cli_diff_json_save_and_carry(demo_kb, capsys):
    db = ["--db", str(demo_kb)]
    assert main(["diff", "1", "2", "--json", *db]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == get_diff(open_ro(demo_kb), 1, 2)
    assert main(["diff", "1", "2", "--save", "--carry", *db]) == 0
    text = capsys.readouterr().out
    assert "names carried from version 1 to 2" in text and "saved the diff" in text
    assert "(stored)" in text and "changelog" in text
    assert get_diff(open_ro(demo_kb), 1, 2)["stored"] is True
    assert main(["diff", "1", "5", *db]) == 1
    assert "unknown version id 5" in capsys.readouterr().err


# --------------------------------------------------------------------------- review signals


def _pairing(old_recs, new_recs, pairs):
    pg = Pairing(
        1,
        2,
        {r.index: {} for r in old_recs},
        {r.index: {} for r in new_recs},
        {r.index: r for r in old_recs},
        {r.index: r for r in new_recs},
    )
    for o, n, score in pairs:
        p = Pair(o, n, score, "similarity", False, False)
        pg.by_new[n] = p
        pg.by_old[o] = p
    return pg


def test_review_wrapper_split_flags_the_pair_both_ways():
    # old: f (body, sig A) called by g. new: f' (body, now sig B) + a new thin wrapper w with
    # f's old signature A calling f': the name "f" may belong to w
    old = [
        FuncRecord(0, type_sig="A", instr_count=200),
        FuncRecord(1, type_sig="X", calls=(0,), instr_count=50),
    ]
    new = [
        FuncRecord(0, type_sig="B", instr_count=200),
        FuncRecord(1, type_sig="X", calls=(0,), instr_count=50),
        FuncRecord(2, type_sig="A", calls=(0,), instr_count=6),
    ]
    pg = _pairing(old, new, [(0, 0, 0.95), (1, 1, 0.99)])
    assert review_wrapper_splits(pg) == 1
    assert pg.by_new[0].review and not pg.by_new[1].review
    # read backwards (a wrapper folded away): the deleted wrapper sits on the old side
    pg = _pairing(new, old, [(0, 0, 0.95), (1, 1, 0.99)])
    assert review_wrapper_splits(pg) == 1
    assert pg.by_new[0].review and not pg.by_new[1].review
    # a new small caller with another signature (a new feature using f) is no sign
    new[2] = FuncRecord(2, type_sig="Z", calls=(0,), instr_count=6)
    pg = _pairing(old, new, [(0, 0, 0.95), (1, 1, 0.99)])
    assert review_wrapper_splits(pg) == 0 and not pg.by_new[0].review
    # nor is a large new caller (not a wrapper)
    new[2] = FuncRecord(2, type_sig="A", calls=(0,), instr_count=40)
    pg = _pairing(old, new, [(0, 0, 0.95), (1, 1, 0.99)])
    assert review_wrapper_splits(pg) == 0 and not pg.by_new[0].review


def test_review_weak_neighbourhood_flags_siblings():
    # old: create (0) called by init (2), expand (1) called by grow (3); new: the pair
    # expand -> create at 0.7 with sizes 180 vs 120, but old expand's caller grow maps to
    # new grow, which does not call new create
    old = [
        FuncRecord(0, instr_count=120),
        FuncRecord(1, instr_count=180),
        FuncRecord(2, calls=(0,), instr_count=30),
        FuncRecord(3, calls=(1,), instr_count=30),
    ]
    new = [
        FuncRecord(0, instr_count=120),
        FuncRecord(2, calls=(0,), instr_count=30),
        FuncRecord(3, instr_count=30),
    ]
    pg = _pairing(old, new, [(1, 0, 0.7), (2, 2, 0.99), (3, 3, 0.9)])
    assert review_weak_neighbourhoods(pg) == 1
    assert pg.by_new[0].review
    # the same pair with a neighbourhood that agrees is left alone
    new[2] = FuncRecord(3, calls=(0,), instr_count=30)
    pg = _pairing(old, new, [(1, 0, 0.7), (2, 2, 0.99), (3, 3, 0.9)])
    assert review_weak_neighbourhoods(pg) == 0 and not pg.by_new[0].review
    # a high score or a similar size is not weak enough
    new[2] = FuncRecord(3, instr_count=30)
    pg = _pairing(old, new, [(1, 0, 0.8), (2, 2, 0.99), (3, 3, 0.9)])
    assert review_weak_neighbourhoods(pg) == 0
    new[0] = FuncRecord(0, instr_count=170)
    pg = _pairing(old, new, [(1, 0, 0.7), (2, 2, 0.99), (3, 3, 0.9)])
    assert review_weak_neighbourhoods(pg) == 0
