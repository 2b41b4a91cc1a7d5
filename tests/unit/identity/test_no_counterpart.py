"""Pairs of two functions that cannot be one carry no name (issue 23 point 10): a result of
another type (f64 against i32) makes a pair weak, flagged with its score capped below the
carry threshold; a dropped result or changed parameters (what dead-argument elimination
does) do not. Changed signatures below REVIEW_SIG_SCORE are flagged."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.programs import DEFAULT_OUT
from kbtool.identity.matcher import match_functions_staged
from kbtool.identity.matcher.review import (
    REVIEW_SIG_SCORE,
    WEAK_SCORE,
    review_no_counterpart,
)
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.carry import CARRY_MIN_SCORE
from kbtool.services.diff.report import get_diff
from kbtool.services.ingest import ingest_file
from tests.support.records import body, rec


def view(old: list, new: list, pairs: list[tuple]) -> SimpleNamespace:
    """A pairing as the review checks read it: (old, new, method[, score[, review]])."""
    by_new = {}
    for o, n, m, *rest in pairs:
        score = rest[0] if rest else 0.8
        review = rest[1] if len(rest) > 1 else False
        by_new[n] = SimpleNamespace(old_index=o, new_index=n, score=score, review=review, method=m)
    return SimpleNamespace(
        old_recs={r.index: r for r in old},
        new_recs={r.index: r for r in new},
        by_new=by_new,
        by_old={p.old_index: p for p in by_new.values()},
    )


def weak(pg: SimpleNamespace) -> set[tuple[int, int]]:
    return {
        (p.old_index, p.new_index) for p in pg.by_new.values() if p.review and p.score <= WEAK_SCORE
    }


def test_weak_score_is_below_the_carry_threshold():
    assert WEAK_SCORE < CARRY_MIN_SCORE


def test_a_result_of_another_type_makes_the_pair_weak():
    # `strtod` (returns f64) paired with `l_str2dloc` (returns i32): a compiler never turns
    # one result type into another
    code = body(1, 40)
    old = [rec(1, code=code, type_sig="(i32, i32) -> f64")]
    new = [rec(1, code=code[:38], type_sig="(i32, i32) -> i32")]
    pg = view(old, new, [(1, 1, "similarity", 0.68)])
    assert review_no_counterpart(pg) == 1
    assert weak(pg) == {(1, 1)}


def test_a_dropped_result_does_not_weaken():
    # dead-argument elimination drops a result nobody reads (emcc's memmove: -> i32 at -O2,
    # -> () at -Os): the same function, its name still carried
    code = body(1, 40)
    old = [rec(1, code=code, type_sig="(i32, i32, i32) -> i32")]
    new = [rec(1, code=code[:38], type_sig="(i32, i32, i32) -> ()")]
    pg = view(old, new, [(1, 1, "similarity", 0.59, True)])
    assert review_no_counterpart(pg) == 0 and pg.by_new[1].score == 0.59


def test_same_code_or_a_shared_name_is_never_weakened():
    code = body(2, 40)
    old = [rec(1, code=code, type_sig="(i32) -> f64", shape_hash="S"), rec(2, code=body(3))]
    new = [
        rec(1, code=code, type_sig="(i32) -> i32", shape_hash="S"),
        rec(2, code=body(4), type_sig="(i32) -> f64"),
    ]
    pg = view(old, new, [(1, 1, "shape", 0.99), (2, 2, "name", 0.95)])
    assert review_no_counterpart(pg) == 0
    assert not weak(pg)


def test_changed_parameters_alone_do_not_weaken():
    # dead-argument elimination drops a parameter, a new release adds one: the pair keeps
    # its name, flagged or not (release pairs change parameters for real)
    code = body(5, 60)
    old = [rec(1, code=code, type_sig="(i32, i32, i32) -> i32")]
    new = [rec(1, code=code[:57], type_sig="(i32, i32) -> i32")]
    pg = view(old, new, [(1, 1, "callgraph", REVIEW_SIG_SCORE + 0.05)])
    assert review_no_counterpart(pg) == 0 and not weak(pg)
    pg = view(old, new, [(1, 1, "callgraph", 0.59, True)])
    assert review_no_counterpart(pg) == 0 and pg.by_new[1].score == 0.59


def test_changed_signature_below_the_review_score_is_flagged():
    # pairs of two functions whose callers agree reached 0.81-0.83 across opt levels
    from kbtool.identity.matcher.review import review_signatures

    code = body(6, 60)
    old = [rec(1, code=code, type_sig="(i32, i32, i32) -> i32")]
    new = [rec(1, code=code[:57], type_sig="(i32, i32) -> i32")]
    pg = view(old, new, [(1, 1, "callgraph", 0.83)])
    assert review_signatures(pg) == 1 and pg.by_new[1].review
    pg = view(old, new, [(1, 1, "callgraph", 0.86)])
    assert review_signatures(pg) == 0


def test_a_weak_pair_is_no_identity():
    # the matcher keeps as identities only pairs the review checks leave alone
    code = body(41, 60)
    old = [
        rec(0, code=body(40, 90), calls=(1,), body_hash="R", shape_hash="RS"),
        rec(1, code=code, type_sig="(i32) -> f64"),
    ]
    new = [
        rec(0, code=body(40, 90), calls=(1,), body_hash="R", shape_hash="RS"),
        rec(1, code=code[:58], type_sig="(i32) -> i32"),
    ]
    exact, full = match_functions_staged(old, new)
    assert (1, 1) in {(m.old_index, m.new_index) for m in full}
    assert {(m.old_index, m.new_index) for m in exact} == {(0, 0)}


def test_lua_o2_to_os_carries_no_name_over_a_result_of_another_type(tmp_path):
    """lua (emcc) -O2 named -> -Os stripped: `strtod` (-> f64) was paired with `l_str2dloc`
    (-> i32) and carried its name; a pair whose result type changed now writes no diff-carry
    name, and the old name waits as an open suggestion."""
    src = DEFAULT_OUT / "lua-5.4.6.emcc.O2.named.wasm"
    dst = DEFAULT_OUT / "lua-5.4.6.emcc.Os.stripped.wasm"
    if not (src.exists() and dst.exists()):
        pytest.skip("programs corpus not built: python benchmarks/programs.py")
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, src, label="o2", program="lua")
    b = ingest_file(conn, dst, label="os", program="lua")
    sig_a = {r["index"]: r["type_sig"] for r in queries.matching_rows(conn, a.version_id)}
    sig_b = {r["index"]: r["type_sig"] for r in queries.matching_rows(conn, b.version_id)}
    named = queries.annotations_by_index(conn, b.version_id, defined_only=True)
    report = get_diff(conn, a.version_id, b.version_id)

    def result(sig: str) -> str:
        return sig.partition("->")[2].strip()

    changed = [
        c
        for c in report["changes"]
        if c["from_index"] is not None
        and c["to_index"] is not None
        and c["classification"] == "modified"
        and "()" not in (result(sig_a[c["from_index"]]), result(sig_b[c["to_index"]]))
        and result(sig_a[c["from_index"]]) != result(sig_b[c["to_index"]])
    ]
    assert changed
    for c in changed:
        assert c["review"] and c["score"] <= WEAK_SCORE
        assert named.get(c["to_index"], {}).get("provenance") != "diff-carry"
    open_sugg = conn.execute(
        "SELECT func_index, name FROM suggestions WHERE version_id = ?"
        " AND backend = 'diff-carry' AND status = 'open'",
        (b.version_id,),
    ).fetchall()
    assert "strtod" in {n for i, n in open_sugg if i in {c["to_index"] for c in changed}}
    conn.close()
