"""A pair an unpaired function's body is closer to is flagged for review (issue 23 point 10):
look-alike siblings (`check_next1`/`check_next2`, `singlevar`/`fieldsel`) placed by the
call graph on the wrong sibling carried a wrong name unflagged."""

from __future__ import annotations

import pytest

from benchmarks.name_scoring import true_names
from benchmarks.programs import DEFAULT_OUT
from kbtool.identity.matcher.review import RIVAL_SIZE_RATIO, review_closer_rivals
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.report import get_diff
from kbtool.services.ingest import ingest_file
from tests.support.records import body, edited, rec, view


def test_an_unpaired_sibling_closer_to_the_new_side_flags_the_pair():
    a, b = body(11, 50), body(12, 50)
    old = [rec(1, code=a), rec(2, code=b)]
    new = [rec(1, code=edited(a)), rec(2, code=edited(b))]
    # the call graph put old 1 on new 2; old 2 (new 2's real counterpart) is left unpaired
    pg = view(old, new, [(1, 2, "callgraph", 0.82)])
    assert review_closer_rivals(pg) == 1 and pg.by_new[2].review


def test_changed_parameters_do_not_hide_the_rival_but_another_result_type_does():
    a, b = body(13, 50), body(14, 50)
    new = [rec(1, code=edited(a)), rec(2, code=edited(b), type_sig="(i32, i32, i32) -> ()")]
    old = [rec(1, code=a, type_sig="(i32, i32, i32, i32) -> ()"), rec(2, code=b)]
    old[1] = rec(2, code=b, type_sig="(i32, i32) -> ()")  # a parameter dropped: a rival
    pg = view(old, new, [(1, 2, "callgraph", 0.8)])
    assert review_closer_rivals(pg) == 1
    old[1] = rec(2, code=b, type_sig="(i32, i32) -> f64")  # another result: no rival
    pg = view(old, new, [(1, 2, "callgraph", 0.8)])
    assert review_closer_rivals(pg) == 0 and not pg.by_new[2].review


def test_a_rival_that_prefers_another_function_does_not_flag():
    b = body(16, 50)
    # old 2 (a look-alike of b) is closer to new 2 than old 1 is, but closer still to new 3
    # (b itself, paired with its equal old 3): it has somewhere better to go, no rival
    old = [rec(1, code=body(15, 50)), rec(2, code=edited(b, 5)), rec(3, code=b, shape_hash="T")]
    new = [rec(2, code=edited(b, 3)), rec(3, code=b, shape_hash="T")]
    pg = view(old, new, [(1, 2, "callgraph", 0.8), (3, 3, "shape", 0.99)])
    assert review_closer_rivals(pg) == 0
    # without new 3 old 2 prefers new 2: the pair is flagged
    pg = view(old, new[:1], [(1, 2, "callgraph", 0.8)])
    assert review_closer_rivals(pg) == 1


def test_pairs_of_equal_code_shared_names_or_sizes_changed_by_inlining_are_left_alone():
    a, b = body(18, 50), body(19, 50)
    old = [rec(1, code=a, shape_hash="S"), rec(2, code=b)]
    new = [rec(1, code=edited(a)), rec(2, code=edited(b), shape_hash="S")]
    assert review_closer_rivals(view(old, new, [(1, 2, "callgraph")])) == 0
    old = [rec(1, code=a), rec(2, code=b)]
    new = [rec(1, code=edited(a)), rec(2, code=edited(b))]
    assert review_closer_rivals(view(old, new, [(1, 2, "name", 0.95)])) == 0
    # new 2 grew by inlining (old 1 is less than half its size): bodies are not compared
    big = edited(b) + body(20, int(len(b) / RIVAL_SIZE_RATIO))
    new = [rec(1, code=edited(a)), rec(2, code=big)]
    assert review_closer_rivals(view(old, new, [(1, 2, "callgraph")])) == 0


def test_lua_os_to_o3_flags_fieldsel_carried_onto_singlevar(tmp_path):
    """lua (clang) -Os named -> -O3 stripped: `singlevar` was paired with `fieldsel` (the
    call graph agreed, 0.82) and kept `fieldsel` as an unflagged identity; the unpaired old
    `singlevar` is closer to it, so the pair is now flagged."""
    src = DEFAULT_OUT / "lua-5.4.6.clang.Os.named.wasm"
    dst = DEFAULT_OUT / "lua-5.4.6.clang.O3.stripped.wasm"
    twin = DEFAULT_OUT / "lua-5.4.6.clang.O3.named.wasm"
    if not (src.exists() and dst.exists() and twin.exists()):
        pytest.skip("programs corpus not built: python benchmarks/programs.py")
    idx = next(i for i, n in true_names(twin).items() if n == "singlevar")
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, src, label="os", program="lua")
    b = ingest_file(conn, dst, label="o3", program="lua")
    named = queries.annotations_by_index(conn, b.version_id, defined_only=True)
    row = next(
        c for c in get_diff(conn, a.version_id, b.version_id)["changes"] if c["to_index"] == idx
    )
    conn.close()
    if named.get(idx, {}).get("name") == "fieldsel":
        assert row["review"]
        assert named[idx]["provenance"] == "diff-carry" and named[idx]["confidence"] <= 0.49


def test_a_pair_grown_by_inlining_takes_a_rival_of_the_very_signature_sized_between():
    # sqlite clang -Os -> -O3: sqlite3WhereExprListUsage (56 instructions) was paired with
    # sqlite3WhereExprUsageFull (838, its callees inlined); the -Os sqlite3WhereExprUsageFull
    # (352) was left unpaired
    small, grown = body(21, 20), body(22, 200)
    mid = grown[:90]
    sig = "(i32, i32) -> i64"
    old = [rec(1, code=small, type_sig=sig), rec(2, code=mid, type_sig=sig)]
    new = [rec(1, code=grown, type_sig=sig)]
    pg = view(old, new, [(1, 1, "callgraph", 0.68)])
    assert review_closer_rivals(pg) == 1
    old[1] = rec(2, code=mid, type_sig="(i32) -> i64")  # another signature: no rival
    assert review_closer_rivals(view(old, new, [(1, 1, "callgraph", 0.68)])) == 0
    old[1] = rec(2, code=grown[:15], type_sig=sig)  # smaller than both: no rival
    assert review_closer_rivals(view(old, new, [(1, 1, "callgraph", 0.68)])) == 0
