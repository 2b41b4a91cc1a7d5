"""Review flags for pairs an inlining difference may have moved (issue 23 point 10), and
look-alike twins only the function order tells apart (Go ``tagA.Label``/``tagB.Label``)."""

from __future__ import annotations

from types import SimpleNamespace

from kbtool.identity.matcher import match_functions, match_functions_staged
from kbtool.identity.matcher.review import review_inlining_boundaries
from tests.support.records import body, rec


def view(old: list, new: list, pairs: list[tuple[int, int, str]]) -> SimpleNamespace:
    """A pairing as the review checks read it: (old, new, method) pairs at score 0.8."""
    by_new = {
        n: SimpleNamespace(old_index=o, new_index=n, score=0.8, review=False, method=m)
        for o, n, m in pairs
    }
    return SimpleNamespace(
        old_recs={r.index: r for r in old},
        new_recs={r.index: r for r in new},
        by_new=by_new,
        by_old={p.old_index: p for p in by_new.values()},
    )


def flagged(pg: SimpleNamespace) -> set[tuple[int, int]]:
    return {(p.old_index, p.new_index) for p in pg.by_new.values() if p.review}


def test_rival_at_the_boundary_flags_the_pair():
    # old: F (10) calls G (11), a body close to new 20; new: G's code as 20 (F inlined into
    # its callers). The call graph paired F with 20; G is left without a counterpart and is
    # as close to 20 as F is: which of the two holds the name is not decided
    code_g = body(7, 60)
    old = [
        rec(1, code=body(1, 80), calls=(10,)),
        rec(10, code=code_g[:40] + body(3, 12), calls=(11,)),
        rec(11, code=code_g),
    ]
    new = [rec(1, code=body(1, 80), calls=(20,)), rec(20, code=code_g)]
    pg = view(old, new, [(1, 1, "shape"), (10, 20, "callgraph")])
    assert review_inlining_boundaries(pg) == 1
    assert flagged(pg) == {(10, 20)}


def test_rival_far_behind_or_of_another_signature_does_not_flag():
    code_f = body(5, 60)
    old = [
        rec(1, code=body(1, 80), calls=(10,)),
        rec(10, code=code_f, calls=(11,)),
        rec(11, code=body(9, 50)),
        rec(12, code=body(8, 60), type_sig="() -> nil"),
    ]
    new = [
        rec(1, code=body(1, 80), calls=(20,)),
        rec(20, code=code_f[:58], calls=(21,)),
        rec(21, code=body(9, 50)),
    ]
    # 11 is an unpaired callee of 10 with 20's signature, but its body is far from 20's
    pg = view(old, new, [(1, 1, "shape"), (10, 20, "callgraph")])
    assert review_inlining_boundaries(pg) == 0
    # equal normalised code is never second-guessed
    old[1] = rec(10, code=code_f, calls=(11,), shape_hash="S")
    new[1] = rec(20, code=code_f, calls=(21,), shape_hash="S")
    pg = view(old, new, [(1, 1, "shape"), (10, 20, "callgraph")])
    old[2] = rec(11, code=code_f)  # a twin rival: still the same code, still decided
    assert review_inlining_boundaries(pg) == 0


def test_unpaired_sole_caller_flags_the_body_pair():
    # old: the API entry E (10) with its body inlined; new: E' (30, unpaired, 300 instrs)
    # calls the body (31), its only caller. The pair (10, 31) follows the body; the name may
    # belong to the unpaired entry
    big = body(11, 900)
    old = [rec(10, code=big, calls=(12,)), rec(12, code=body(12, 50))]
    new = [
        rec(30, code=body(13, 300), calls=(31,)),
        rec(31, code=big[:700], calls=(32,)),
        rec(32, code=body(12, 50)),
    ]
    pg = view(old, new, [(10, 31, "callgraph"), (12, 32, "shape")])
    assert review_inlining_boundaries(pg) == 1
    assert flagged(pg) == {(10, 31)}


def test_callers_that_contradict_flag_the_pair():
    # both functions have paired callers; none of old's callers' images calls 21 and none
    # of new's callers' originals calls 11: the pair stands on position alone
    f = body(21, 50)
    old = [rec(1, code=body(1, 70), calls=(11,)), rec(2, code=body(2, 70)), rec(11, code=f)]
    new = [rec(1, code=body(1, 70)), rec(2, code=body(2, 70), calls=(21,)), rec(21, code=f[:48])]
    pg = view(old, new, [(1, 1, "callgraph"), (2, 2, "callgraph"), (11, 21, "callgraph")])
    review_inlining_boundaries(pg)
    assert (11, 21) in flagged(pg)


def test_body_pair_of_implausible_size_is_flagged_but_a_callgraph_pair_is_not():
    small, big = body(31, 30), body(31, 30) + body(32, 200)
    old, new = [rec(1, code=small)], [rec(1, code=big)]
    pg = view(old, new, [(1, 1, "similarity")])
    assert review_inlining_boundaries(pg) == 1
    pg = view(old, new, [(1, 1, "callgraph")])  # callees inlined into it: may grow that much
    assert review_inlining_boundaries(pg) == 0


def test_flagged_boundary_pair_is_no_identity():
    # the matcher's identities (what ingest keeps) never include a pair these checks flag
    code_g = body(41, 60)
    old = [
        rec(0, code=body(40, 90), calls=(1,), body_hash="R", shape_hash="RS"),
        rec(1, code=code_g[:40] + body(42, 12), calls=(2,)),
        rec(2, code=code_g),
    ]
    new = [
        rec(0, code=body(40, 90), calls=(1,), body_hash="R", shape_hash="RS"),
        rec(1, code=code_g),
    ]
    exact, full = match_functions_staged(old, new)
    assert {(m.old_index, m.new_index) for m in exact} == {(0, 0)}
    assert any(m.new_index == 1 for m in full)


# ------------------------------------------------------------------ twins by order only


def _twins(table: bool):
    dup = body(3)
    slots = (lambda k: (k,)) if table else (lambda k: ())
    old = [
        rec(0, body_hash="A", code=body(1), table_slots=slots(0)),
        rec(1, body_hash="x", shape_hash="D", code=dup, table_slots=slots(1)),
        rec(2, body_hash="y", shape_hash="D", code=dup, table_slots=slots(2)),
        rec(3, body_hash="B", code=body(2), table_slots=slots(3)),
    ]
    new = [
        rec(0, body_hash="A", code=body(1), table_slots=slots(0)),
        rec(1, body_hash="x2", shape_hash="D", code=dup, table_slots=slots(1)),
        rec(2, body_hash="y2", shape_hash="D", code=dup, table_slots=slots(2)),
        rec(3, body_hash="B", code=body(2), table_slots=slots(3)),
    ]
    return old, new


def test_twins_only_the_function_order_tells_apart_are_flagged():
    # identical twins with no callers (reached through an interface / a table laid out in
    # function order, as Go does): the order pairs them, nothing else could; a swap in the
    # source would go unseen, so a person reviews them
    for table in (False, True):
        old, new = _twins(table)
        got = {m.old_index: m for m in match_functions(old, new)}
        assert got[1].new_index == 1 and got[2].new_index == 2
        assert got[1].review and got[2].review, table
        assert not got[0].review and not got[3].review
