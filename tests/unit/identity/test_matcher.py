"""kbtool.identity.matcher: stages, uniqueness, one-to-one, determinism, review flags."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbtool.identity.features import is_minified_name, module_is_minified
from kbtool.identity.matcher import (
    REVIEW_MARGIN,
    REVIEW_SCORE,
    FuncRecord,
    match_functions,
)
from kbtool.identity.records import record_rows, records_from_analysis
from kbtool.wasm import analyze_module
from tests.support.paths import CORPUS
from tests.support.records import body, by_new, imp, ops, pairs, rec

METHODS = {"import", "body", "shape", "name", "callgraph", "similarity"}


def check_one_to_one(matches, old, new) -> None:
    olds = [m.old_index for m in matches]
    news = [m.new_index for m in matches]
    assert len(olds) == len(set(olds))
    assert len(news) == len(set(news))
    assert set(olds) <= {r.index for r in old}
    assert set(news) <= {r.index for r in new}
    for m in matches:
        assert 0.0 <= m.score <= 1.0
        assert m.method in METHODS


# ------------------------------------------------------------------ stages


def test_import_stage():
    old = [imp(0, "env.a_read"), imp(1, "env.write")]
    new = [imp(0, "env.write"), imp(1, "env.extra"), imp(2, "env.a_read")]
    m = by_new(match_functions(old, new, fuzzy=False))
    assert m[0].old_index == 1 and m[0].method == "import" and m[0].score == 1.0
    assert m[2].old_index == 0
    assert 1 not in m


def test_body_stage_unique():
    old = [rec(0, body_hash="X", code=body(1)), rec(1, body_hash="Y", code=body(2))]
    new = [rec(5, body_hash="Y", code=body(2)), rec(7, body_hash="X", code=body(1))]
    m = by_new(match_functions(old, new, fuzzy=False))
    assert (m[7].old_index, m[7].method, m[7].score, m[7].review) == (0, "body", 1.0, False)
    assert m[5].old_index == 1


def test_shape_stage_unique():
    old = [rec(0, body_hash="b-old", shape_hash="S", code=body(1))]
    new = [rec(3, body_hash="b-new", shape_hash="S", code=body(1))]
    (m,) = match_functions(old, new, fuzzy=False)
    assert (m.old_index, m.new_index, m.method) == (0, 3, "shape")
    assert 0.98 <= m.score < 1.0


def test_name_stage():
    old = [rec(0, names=("ZSTD_compress",), code=body(1)), rec(1, names=("other",), code=body(2))]
    new = [rec(4, names=("ZSTD_compress",), code=body(9)), rec(5, code=body(8))]
    m = by_new(match_functions(old, new, fuzzy=False))
    assert m[4].old_index == 0 and m[4].method == "name"
    assert 0.9 <= m[4].score < 0.99
    assert 5 not in m


def test_name_shared_by_two_functions_identifies_neither():
    old = [rec(0, names=("dup",), code=body(1)), rec(1, names=("dup",), code=body(2))]
    new = [rec(0, names=("dup",), code=body(3))]
    assert match_functions(old, new, fuzzy=False) == []


def test_short_names_need_equal_signature():
    old = [rec(0, names=("pow",), type_sig="(f64, f64) -> f64", code=body(1))]
    new = [rec(0, names=("pow",), type_sig="(i32) -> i32", code=body(2))]
    assert match_functions(old, new, fuzzy=False) == []


def test_callgraph_single_callee():
    # parent matched by body; its only callee changed completely in bytes but keeps the
    # signature and most of its code: matched through the call graph
    child_old = body(7, 60)
    child_new = child_old[:50] + body(8, 12)
    old = [rec(0, body_hash="P", calls=(1,), code=body(1)), rec(1, code=child_old)]
    new = [rec(10, body_hash="P", calls=(11,), code=body(1)), rec(11, code=child_new)]
    m = by_new(match_functions(old, new, fuzzy=False))
    assert m[10].method == "body"
    assert m[11].old_index == 1 and m[11].method == "callgraph"


def test_duplicate_shapes_resolved_by_neighbourhood():
    # two functions of the same shape on both sides: not unique globally, but each is the
    # only one of its shape among the callees of a uniquely matched caller
    dup = body(5)
    old = [
        rec(0, body_hash="A", calls=(2,), code=body(1)),
        rec(1, body_hash="B", calls=(3,), code=body(2)),
        rec(2, body_hash="d1", shape_hash="D", code=dup),
        rec(3, body_hash="d2", shape_hash="D", code=dup),
    ]
    new = [
        rec(0, body_hash="B", calls=(2,), code=body(2)),
        rec(1, body_hash="A", calls=(3,), code=body(1)),
        rec(2, body_hash="d3", shape_hash="D", code=dup),
        rec(3, body_hash="d4", shape_hash="D", code=dup),
    ]
    m = pairs(match_functions(old, new, fuzzy=False))
    assert m == {0: 1, 1: 0, 2: 3, 3: 2}


def test_ambiguous_shape_duplicates_not_matched_without_fuzzy():
    dup = body(5)
    old = [rec(0, shape_hash="D", code=dup), rec(1, shape_hash="D", code=dup)]
    new = [rec(0, shape_hash="D", code=dup), rec(1, shape_hash="D", code=dup)]
    assert match_functions(old, new, fuzzy=False) == []
    # equal bodies: still a guess at fuzzy=False
    old = [rec(0, body_hash="E", code=dup), rec(1, body_hash="E", code=dup)]
    new = [rec(0, body_hash="E", code=dup), rec(1, body_hash="E", code=dup)]
    assert match_functions(old, new, fuzzy=False) == []
    # with fuzzy, equal bodies are paired by position and flagged for review
    m = match_functions(old, new, fuzzy=True)
    assert pairs(m) == {0: 0, 1: 1}
    assert all(x.review for x in m)


def test_equal_bytes_at_coinciding_indices_are_not_trusted():
    # Two one-line wrappers of the same shape calling different targets. In the new build
    # the targets moved, so the bytes of wrapper "a" (call 5) now equal those of the other
    # wrapper in the old build. Body equality must not pair them against the callees.
    old = [
        rec(0, body_hash="call4", shape_hash="W", calls=(4,), code=[1, 2, 16, 11]),
        rec(1, body_hash="call5", shape_hash="W", calls=(5,), code=[1, 2, 16, 11]),
        rec(4, body_hash="T4", code=body(40, 80)),
        rec(5, body_hash="T5", code=body(50, 80)),
    ]
    new = [
        rec(0, body_hash="call5", shape_hash="W", calls=(5,), code=[1, 2, 16, 11]),
        rec(1, body_hash="call6", shape_hash="W", calls=(6,), code=[1, 2, 16, 11]),
        rec(5, body_hash="T4", code=body(40, 80)),
        rec(6, body_hash="T5", code=body(50, 80)),
    ]
    m = pairs(match_functions(old, new, fuzzy=False))
    assert m[4] == 5 and m[5] == 6
    assert m.get(0) == 0 and m.get(1) == 1  # resolved from the matched callees instead


def test_function_table_order():
    # same code at different table slots is resolved by the table order
    dup = body(3)
    old = [
        rec(0, body_hash="A", code=body(1), table_slots=(0,)),
        rec(1, body_hash="x", shape_hash="D", code=dup, table_slots=(1,)),
        rec(2, body_hash="y", shape_hash="D", code=dup, table_slots=(3,)),
        rec(3, body_hash="B", code=body(2), table_slots=(2,)),
    ]
    new = [
        rec(0, body_hash="A", code=body(1), table_slots=(0,)),
        rec(1, body_hash="B", code=body(2), table_slots=(2,)),
        rec(2, body_hash="x2", shape_hash="D", code=dup, table_slots=(3,)),
        rec(3, body_hash="y2", shape_hash="D", code=dup, table_slots=(1,)),
    ]
    m = pairs(match_functions(old, new, fuzzy=False))
    assert m == {0: 0, 3: 1, 1: 3, 2: 2}


# ------------------------------------------------------------------ similarity


def _modified(code: list[int], seed: int, edits: int) -> list[int]:
    rng = random.Random(seed)
    out = list(code)
    for _ in range(edits):
        out.insert(rng.randrange(len(out)), rng.randrange(200))
    return out


def test_similarity_stage_and_fuzzy_false():
    base = body(11, 120)
    other = body(12, 120)
    old = [
        rec(0, code=base, consts=(1000, 2000, 77777), strings=("checksum error",)),
        rec(1, code=other, consts=(5, 9999), type_sig="(i32, i32) -> ()"),
    ]
    new = [
        rec(0, code=_modified(other, 1, 4), consts=(5, 9999), type_sig="(i32, i32) -> ()"),
        rec(1, code=_modified(base, 2, 6), consts=(1000, 2000, 77777), strings=("checksum error",)),
    ]
    assert all(m.method != "similarity" for m in match_functions(old, new, fuzzy=False))
    m = by_new(match_functions(old, new, fuzzy=True))
    assert m[1].old_index == 0 and m[1].method == "similarity"
    assert m[0].old_index == 1
    assert m[1].score > 0.8 and not m[1].review


def test_review_when_best_is_not_clearly_ahead():
    # one changed function, two near-identical candidates on the other side
    base = body(21, 100)
    old = [rec(0, code=base, loops=2)]
    new = [rec(0, code=_modified(base, 3, 5), loops=2), rec(1, code=_modified(base, 4, 5), loops=2)]
    ms = match_functions(old, new, fuzzy=True)
    assert len(ms) <= 1
    for m in ms:
        assert m.review


def test_review_flag_semantics():
    rng = random.Random(5)
    old, new = [], []
    for i in range(30):
        code = body(100 + i, rng.randrange(20, 200))
        old.append(rec(i, code=code, consts=(i * 1000 + 7,)))
        new.append(rec(i, code=_modified(code, i, rng.randrange(1, 30)), consts=(i * 1000 + 7,)))
    for m in match_functions(old, new, fuzzy=True):
        if m.score < REVIEW_SCORE:
            assert m.review
        if m.method in ("import", "body", "shape", "name") and m.score >= 0.95:
            assert not m.review
    assert 0 < REVIEW_MARGIN < 0.5


def test_family_aligned_by_order():
    # template instances: near-identical code, same relative order in both versions
    fam_old = [body(300 + k, 90) for k in range(5)]
    old = [rec(0, body_hash="A", code=body(1))]
    new = [rec(0, body_hash="A", code=body(1))]
    for k, code in enumerate(fam_old):
        old.append(rec(1 + k, code=code))
    for k, code in enumerate(fam_old):
        new.append(rec(1 + k, code=_modified(code, k, 6)))
    old.append(rec(9, body_hash="Z", code=body(2)))
    new.append(rec(9, body_hash="Z", code=body(2)))
    m = pairs(match_functions(old, new, fuzzy=True))
    assert all(m.get(i) == i for i in range(1, 6))


# ------------------------------------------------------------------ invariants


def _random_module(rng: random.Random, n: int, base: int = 0) -> list[FuncRecord]:
    recs = []
    nimp = rng.randrange(0, 4)
    for i in range(nimp):
        recs.append(
            imp(base + i, f"env.f{rng.randrange(5)}", rng.choice(["(i32) -> i32", "() -> ()"]))
        )
    for i in range(nimp, n):
        code = body(rng.randrange(6), rng.randrange(2, 40))
        recs.append(
            rec(
                base + i,
                body_hash=f"b{rng.randrange(6)}",
                shape_hash=f"s{rng.randrange(4)}",
                type_sig=rng.choice(["(i32) -> i32", "() -> ()", "(i32, i32) -> i32"]),
                names=tuple(rng.sample(["alpha", "beta", "gamma", "delta"], rng.randrange(0, 2))),
                calls=tuple(base + rng.randrange(n) for _ in range(rng.randrange(0, 4))),
                consts=tuple(rng.randrange(10) for _ in range(rng.randrange(3))),
                strings=tuple(rng.sample(["a", "bb", "ccc"], rng.randrange(0, 2))),
                code=code,
                loops=rng.randrange(3),
                table_slots=(rng.randrange(50),) if rng.random() < 0.3 else (),
            )
        )
    return recs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_old=st.integers(0, 25),
    n_new=st.integers(0, 25),
    fuzzy=st.booleans(),
)
def test_property_one_to_one_and_deterministic(seed, n_old, n_new, fuzzy):
    rng = random.Random(seed)
    old = _random_module(rng, n_old, base=rng.randrange(3))
    new = _random_module(rng, n_new, base=rng.randrange(3))
    first = match_functions(old, new, fuzzy=fuzzy)
    check_one_to_one(first, old, new)
    assert first == match_functions(old, new, fuzzy=fuzzy)
    old2, new2 = list(old), list(new)
    rng.shuffle(old2)
    rng.shuffle(new2)
    assert first == match_functions(old2, new2, fuzzy=fuzzy)
    if not fuzzy:
        assert all(m.method != "similarity" for m in first)
    exact = {(m.old_index, m.new_index) for m in match_functions(old, new, fuzzy=False)}
    assert len(exact) <= len(match_functions(old, new, fuzzy=True)) + len(exact)


def test_determinism_larger_and_sorted_output():
    rng = random.Random(42)
    old = _random_module(rng, 300)
    new = _random_module(rng, 300)
    a = match_functions(old, new)
    rng.shuffle(old)
    rng.shuffle(new)
    b = match_functions(old, new)
    assert a == b
    assert [m.new_index for m in a] == sorted(m.new_index for m in a)


def test_duplicate_index_rejected():
    with pytest.raises(ValueError):
        match_functions([rec(0), rec(0)], [rec(0)])


def test_empty_inputs():
    assert match_functions([], []) == []
    assert match_functions([rec(0)], []) == []
    assert match_functions([], [rec(0)], fuzzy=False) == []


# ------------------------------------------------------------------ records


def test_minified_names():
    for name in ("a", "Ab", "$a", "a$", "_a", "$ab", ""):
        assert is_minified_name(name), name
    for name in ("malloc", "ZSTD_compress", "pow", "_start"):
        assert not is_minified_name(name), name
    assert is_minified_name("abc", module_minified=True)
    assert module_is_minified(["a", "b", "c", "Ab", "$a", "dd", "ee", "memory_grow"])
    assert not module_is_minified(["ZSTD_compress", "malloc", "free", "a"])


def test_records_from_analysis():
    f = SimpleNamespace
    funcs = [
        f(
            index=0,
            imported=True,
            import_module="wasi",
            import_field="fd_write",
            type_sig="(i32) -> i32",
            export_names=[],
            raw_name="__imported_fd_write",
            body_hash="",
            shape_hash="",
            calls=[],
            strings=[],
            consts=[],
            ops=b"",
            instr_count=0,
            body_size=0,
            loops=0,
            call_indirect=0,
        ),
        f(
            index=1,
            imported=False,
            import_module=None,
            import_field=None,
            type_sig="() -> ()",
            export_names=["_start", "a"],
            raw_name="_start",
            body_hash="h1",
            shape_hash="s1",
            calls=[2, 0, 2],
            strings=["x"],
            consts=[1, 2],
            ops=ops(1, 2, 11),
            instr_count=3,
            body_size=9,
            loops=1,
            call_indirect=2,
        ),
        f(
            index=2,
            imported=False,
            import_module=None,
            import_field=None,
            type_sig="() -> ()",
            export_names=[],
            raw_name=None,
            body_hash="h2",
            shape_hash="s2",
            calls=[],
            strings=[],
            consts=[],
            ops=ops(11),
            instr_count=1,
            body_size=2,
            loops=0,
            call_indirect=0,
        ),
    ]
    elements = [f(func_indices=[2, None, 1])]
    analysis = f(functions=funcs, module=f(elements=elements))
    r = records_from_analysis(analysis, stable_ids={1: "sid-1"})
    assert [x.index for x in r] == [0, 1, 2]
    assert r[0].imported and r[0].import_name == "wasi.fd_write" and r[0].body_hash is None
    assert r[1].names == ("_start",)
    assert r[1].calls == (2, 0)
    assert r[1].stable_id == "sid-1" and r[0].stable_id is None
    assert r[1].table_slots == (2,) and r[2].table_slots == (0,)
    assert r[1].call_indirect == 2 and r[1].loops == 1
    # the rows: the records' field values in field order, stable ids left to the records
    rows = record_rows(analysis)
    assert [FuncRecord(*row) for row in rows] == records_from_analysis(analysis)
    assert all(row[1] is None for row in rows)
    assert records_from_analysis(analysis, {}) == records_from_analysis(analysis)


# ------------------------------------------------------------------ corpus


@pytest.mark.skipif(not (CORPUS / "gt").is_dir(), reason="corpus not present")
def test_corpus_nearby_pair_precision():
    gt = CORPUS / "gt"

    def load(name):
        return analyze_module((gt / name).read_bytes())

    a_old = load("zstd-1.5.5.O2.named.wasm")
    a_new = load("zstd-1.5.6.O2.stripped.wasm")
    a_truth = load("zstd-1.5.6.O2.named.wasm")
    old_names = {f.index: f.raw_name for f in a_old.functions if not f.imported}
    new_names = {f.index: f.raw_name for f in a_truth.functions if not f.imported}
    for fuzzy in (True, False):
        ms = match_functions(
            records_from_analysis(a_old), records_from_analysis(a_new), fuzzy=fuzzy
        )
        scored = [m for m in ms if m.new_index in new_names]
        correct = sum(old_names.get(m.old_index) == new_names[m.new_index] for m in scored)
        assert correct / len(scored) >= 0.99, (fuzzy, correct, len(scored))
        relevant = sum(1 for v in new_names.values() if v in set(old_names.values()))
        assert correct / relevant >= (0.95 if fuzzy else 0.85)
