"""The data walk's typed reads give what the plain ones do (issue #30, session 19 D): a
label's address as ``hex`` is ``f"{a:x}"`` (negative and huge addresses too), the labels of
items at any addresses are the f-string definition's; the plan reads the facts' memory ops
and constants the same whatever sequences hold them; the reference marks keep each target
as the reference holds it. Each on the pure module and on the compiled twin when built."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.analysis import datawalk as pure_walk
from kbtool.analysis import datawalk_active
from kbtool.analysis.datatypes import DataItem
from kbtool.analysis.datawalk import items as pure_items

COMPILED = datawalk_active.load_compiled()
ITEMS = [pure_items] + ([datawalk_active.ITEMS] if COMPILED is not None else [])
WALKS = [pure_walk] + ([COMPILED] if COMPILED is not None else [])
_KINDS = ["cstring", "utf16", "gostring", "zero", "bss", "pointer_table", "funcptr_table"]
_PREFIX = {"zero": "zero", "bss": "bss", "funcptr_table": "fptrs", "pointer_table": "ptrs"}
_ADDR = st.one_of(
    st.integers(0, 1 << 20),
    st.integers(-(1 << 70), 1 << 70),
    st.sampled_from([0, 15, 16, (1 << 62) - 1, 1 << 62, 1 << 63, 1 << 64, -1, -(1 << 62)]),
)


def _defined_labels(items: list[DataItem]) -> list[str]:
    """The labels as the f-strings made them (the definition)."""
    seen: dict[str, int] = {}
    out = []
    for it in items:
        a = it.address
        if it.text and it.kind in ("cstring", "utf16", "gostring"):
            base = "s_" + (pure_items._slug(it.text) or f"{a:x}")
        else:
            base = f"{_PREFIX.get(it.kind, 'data')}_{a:x}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}_{a:x}")
    return out


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
@settings(max_examples=300, deadline=None)
@given(a=_ADDR)
def test_hex_is_the_format_spec(side, a):
    assert side._hex(a) == f"{a:x}"


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _ADDR,
            st.sampled_from(_KINDS + ["numeric"]),
            st.sampled_from([None, "", "Hello", "hello", "!!", "\u00e9t\u00e9", "1a"]),
        ),
        max_size=40,
    )
)
def test_labels_are_the_fstring_definition(side, rows):
    """Any addresses (repeated, negative, past 64 bits: a crafted module's segments), any
    kinds and texts: the labels the f-strings gave, a label taken twice suffixed."""
    items = [DataItem(a, 4, kind, 0, text) for a, kind, text in rows]
    want = _defined_labels(items)
    side.label_items(items)
    assert [it.label for it in items] == want


def _facts(mem_ops, consts, index=1, imported=False, body_size=10, globals_used=(), ci=0):
    return SimpleNamespace(
        index=index,
        imported=imported,
        body_offset=100 * index,
        body_size=body_size,
        mem_ops=mem_ops,
        consts=consts,
        globals_used=list(globals_used),
        call_indirect=ci,
    )


@pytest.mark.parametrize("walk", WALKS, ids=lambda m: m.__name__)
@settings(max_examples=150, deadline=None)
@given(
    bodies=st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 255), st.integers(0, 1 << 33), st.integers(0, 8))),
            st.lists(st.integers(-(1 << 40), 1 << 40), max_size=6),
            st.sampled_from(["list", "tuple", "lists"]),
            st.booleans(),
            st.integers(0, 3),
        ),
        max_size=8,
    ),
    lo=st.integers(0, 1 << 20),
    span=st.integers(-10, 1 << 21),
)
def test_plan_reads_any_sequences_of_the_facts(walk, bodies, lo, span):
    """The plan from memory ops and constants held as lists of tuples (the decoder's), as
    tuples, or as lists of lists is the plan from the decoder's form."""
    mem_hi = lo + span

    def held(ops, how):
        if how == "tuple":
            return tuple(ops)
        if how == "lists":
            return [list(m) for m in ops]
        return list(ops)

    funcs = [
        _facts(held(ops, how), tuple(cs) if how == "tuple" else cs, i, imp, 10, [], ci)
        for i, (ops, cs, how, imp, ci) in enumerate(bodies)
    ]
    plain = [
        _facts(
            list(f.mem_ops) and [tuple(m) for m in f.mem_ops],
            list(f.consts),
            f.index,
            f.imported,
            f.body_size,
            [],
            f.call_indirect,
        )
        for f in funcs
    ]
    assert walk.scan_plan(funcs, lo, mem_hi) == pure_walk.scan_plan(plain, lo, mem_hi)


@pytest.mark.parametrize("walk", WALKS, ids=lambda m: m.__name__)
def test_marks_keep_the_targets(walk):
    big = 1 << 40
    refs = [
        (1, 10, "load", "data", 5000, 4),
        (1, 11, "funcptr", "data", big, 0),
        (2, 12, "gostring", "data", 7000, 12),
        (2, 13, "gostring", "data", 7000, 9),  # (the last length seen)
        (3, 14, "read", "global", 2, 0),
        (3, 15, "addr", "data", 5000, 0),
    ]
    cuts, fptr, gostr = walk.ref_marks(refs)
    assert cuts == {5000, big, 7000} and fptr == {big} and gostr == {7000: 9}
    assert {type(t) for t in cuts} == {int}
