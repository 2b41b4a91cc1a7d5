"""Oracle: reference modules that carry names name the functions of a stripped version.

Real modules: zstd builds of the corpus (``../shared/corpus/gt``, skipped when absent) and
the bundled demo releases.
"""

from __future__ import annotations

import json

import pytest

from kbtool.cli import main
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.report import compute_diff
from kbtool.services.ingest import ingest_file
from kbtool.services.oracle import OracleError, add_oracle, list_oracles, match_oracle
from kbtool.wasm import analyze_module
from tests.support.paths import DEMO_DIR, corpus_file


def truth(path) -> dict[int, str | None]:
    return {
        f.index: f.raw_name for f in analyze_module(path.read_bytes()).functions if not f.imported
    }


def oracle_names(conn, vid: int) -> dict[int, tuple[str, float, dict]]:
    return {
        i: (n, c, json.loads(ev)[0])
        for i, n, c, ev in conn.execute(
            "SELECT f.idx, s.name, s.confidence, s.evidence FROM functions f"
            " JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? AND s.provenance = 'oracle'",
            (vid,),
        )
    }


@pytest.fixture
def stripped_kb(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    vid = ingest_file(conn, corpus_file("gt/zstd-1.5.6.O2.stripped.wasm"), label="1.5.6").version_id
    return tmp_path / "kb.db", conn, vid


def test_exact_shape_from_a_named_build_of_the_same_release(stripped_kb):
    path, conn, vid = stripped_kb
    ref = corpus_file("gt/zstd-1.5.6.O2.named.wasm")
    info = add_oracle(conn, ref, label="zstd-1.5.6-named")
    assert info["named"] == info["defined"] > 500 and info["runtime"] is False
    res = match_oracle(conn, vid)
    assert res["written"] > 500 and res["refused"] == 0
    names = oracle_names(conn, vid)
    want = truth(ref)
    exact = [i for i, (_n, _c, ev) in names.items() if ev["method"] in ("shape", "body")]
    assert len(exact) > 400 and all(names[i][1] == 1.0 for i in exact)
    right = sum(1 for i, (n, _c, _e) in names.items() if n == want[i])
    assert right / len(names) >= 0.99
    for _i, (_n, _c, ev) in names.items():
        assert ev["source"] == "oracle" and ev["oracle"] == "zstd-1.5.6-named" and "score" in ev
    # idempotent: a second run changes nothing and records nothing
    events = conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]
    again = match_oracle(conn, vid)
    assert again["written"] == 0 and again["refused"] == 0 and again["unchanged"] == res["written"]
    assert conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0] == events


def test_structural_from_an_older_release(stripped_kb):
    path, conn, vid = stripped_kb
    add_oracle(conn, corpus_file("gt/zstd-1.5.5.O2.named.wasm"))
    res = match_oracle(conn, vid)
    assert res["structural"] > 50 and res["written"] > 450
    names = oracle_names(conn, vid)
    want = truth(corpus_file("gt/zstd-1.5.6.O2.named.wasm"))
    right = sum(1 for i, (n, _c, _e) in names.items() if n == want[i])
    assert right / len(names) >= 0.98
    structural = [
        (c, ev)
        for _n, c, ev in names.values()
        if ev["method"] not in ("shape", "body", "shape-trivial")
    ]
    trivial = [c for _n, c, ev in names.values() if ev["method"] == "shape-trivial"]
    assert trivial and all(c < 1.0 for c in trivial)
    assert structural and all(c == pytest.approx(ev["score"]) for c, ev in structural)
    assert sum(c < 1.0 for c, _ev in structural) > 50


def test_gate_decides_and_refusals_are_counted(stripped_kb):
    path, conn, vid = stripped_kb
    add_oracle(conn, corpus_file("gt/zstd-1.5.6.O2.named.wasm"))
    match_oracle(conn, vid, structural=False)
    sid = conn.execute(
        "SELECT stable_id FROM symbols WHERE provenance = 'oracle' ORDER BY stable_id LIMIT 1"
    ).fetchone()[0]
    assert upsert_symbol(conn, sid, "my_name", provenance="human", confidence=1.0, actor="human:t")[
        "written"
    ]
    res = match_oracle(conn, vid, structural=False)
    assert res["refused"] == 1 and res["written"] == 0
    assert (
        conn.execute("SELECT name FROM symbols WHERE stable_id = ?", (sid,)).fetchone()[0]
        == "my_name"
    )
    last = conn.execute(
        "SELECT written, reason, provenance FROM annotation_events ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert tuple(last) == (0, "locked", "oracle")


def test_runtime_reference_marks_runtime_in_the_diff(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, corpus_file("gt/zstd-1.5.5.O2.stripped.wasm"), label="a").version_id
    b = ingest_file(conn, corpus_file("gt/zstd-1.5.6.O2.stripped.wasm"), label="b").version_id
    # a reference labelled as a libc build: everything it names is runtime
    add_oracle(conn, corpus_file("gt/zstd-1.5.6.O2.named.wasm"), label="libc-ref.wasm")
    match_oracle(conn, b)
    report = compute_diff(conn, a, b)
    named = [
        c for c in report["changes"] if c["provenance"] == "oracle" and c["to_index"] is not None
    ]
    assert named and all(c["runtime"] for c in named)


def test_errors(tmp_path):
    conn = open_rw(tmp_path / "kb.db")
    with pytest.raises(OracleError, match="no such file"):
        add_oracle(conn, tmp_path / "missing.wasm")
    bad = tmp_path / "bad.wasm"
    bad.write_bytes(b"\x00asm\x01\x00\x00\x00\x01\xff")
    with pytest.raises(OracleError, match="not a valid WebAssembly module"):
        add_oracle(conn, bad)
    nameless = tmp_path / "nameless.wasm"  # one function, no exports, no name section
    nameless.write_bytes(
        b"\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x04\x01\x02\x00\x0b"
    )
    with pytest.raises(OracleError, match="carries no function names"):
        add_oracle(conn, nameless)
    with pytest.raises(OracleError, match="no oracle modules stored"):
        vid = ingest_file(conn, DEMO_DIR / "zstd-1.5.6.wasm", label="x").version_id
        match_oracle(conn, vid)
    add_oracle(conn, corpus_file("gt/zstd-1.5.6.O2.named.wasm"), label="ref")
    with pytest.raises(OracleError, match="already exists"):
        add_oracle(conn, corpus_file("gt/zstd-1.5.6.O2.named.wasm"), label="ref")
    with pytest.raises(UnknownVersionError):
        match_oracle(conn, 99)
    with pytest.raises(OracleError, match="unknown oracle id 7"):
        match_oracle(conn, vid, oracle_ids=[7])
    assert [o["label"] for o in list_oracles(conn)] == ["ref"]


def test_cli(tmp_path, capsys):
    db = ["--db", str(tmp_path / "kb.db")]
    assert (
        main(["ingest", str(corpus_file("gt/zstd-1.5.6.O2.stripped.wasm")), "--label", "s", *db])
        == 0
    )
    assert (
        main(
            [
                "oracle",
                "add",
                str(corpus_file("gt/zstd-1.5.6.O2.named.wasm")),
                "--label",
                "ref",
                *db,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["oracle", "match", "1", *db]) == 0
    out = capsys.readouterr().out
    assert "written" in out and "refused" in out and "version 1:" in out
    assert main(["oracle", "list", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out)[0]["label"] == "ref"
    assert main(["oracle", "match", "3", *db]) == 1
    assert "unknown version id 3" in capsys.readouterr().err
    cov = json.loads((main(["coverage", "1", "--json", *db]), capsys.readouterr().out)[1])
    assert cov["oracle_named"] > 500
    assert (
        open_ro(tmp_path / "kb.db").execute("SELECT COUNT(*) FROM oracle_modules").fetchone()[0]
        == 1
    )
