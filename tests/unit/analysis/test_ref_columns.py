"""The references' packed columns by the data walk's twin (``kbtool.analysis.datawalk.columns``,
compiled into ``kbtool.analysis._cdatawalk.columns``): :func:`kbtool.kb.datarefs.pack` given
them stores exactly the blobs its own passes store (arbitrary rows: ties, references from
data, negative, 32-bit-edge and 64-bit targets, wide widths, several chunks; ffmpeg-sized
corpus rows); values the pass cannot hold (past 60 bits) hand the rows back to the store's
passes, which keep their one-line errors. Tests of the compiled side skip when the twin is
not built (``python -m kbtool.lift.accel build datawalk``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datawalk_active
from kbtool.analysis.datawalk import columns as pure_columns
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.kb import datarefs
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS

COMPILED = datawalk_active.COLUMNS
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled data walk {datawalk_active.compiled_state()}"
)
SIDES = [pure_columns.ref_columns] + ([COMPILED.ref_columns] if COMPILED is not None else [])

ROW = st.tuples(
    st.integers(-1, 5),
    st.one_of(st.integers(0, 40), st.just(2**31), st.just(2**62)),
    st.sampled_from(datarefs.KINDS),
    st.sampled_from(datarefs.TARGET_KINDS),
    st.one_of(
        st.integers(-3, 70000),
        st.sampled_from([2**29 - 1, 2**29, 2**31 - 1, 2**31, 2**40, -(2**40), 2**61]),
    ),
    st.one_of(st.integers(0, 8), st.just(255), st.just(256), st.just(-1), st.just(70000)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, max_size=60), st.sampled_from([1, 3, 1024]))
def test_packing_with_the_columns_stores_the_same_blobs(rows, chunk):
    rows = datarefs.by_function_and_offset(list(rows))
    old = datarefs.CHUNK
    datarefs.CHUNK = chunk
    try:
        try:
            want = datarefs.pack(rows)
        except ValueError as exc:  # (a key past 64 bits: refused, by either path)
            want = str(exc)
        for side in SIDES:
            try:
                got = datarefs.pack(rows, side)
            except ValueError as exc:
                got = str(exc)
            assert got == want
    finally:
        datarefs.CHUNK = old


def _packed_sorted(rows):
    try:
        return datarefs.pack(datarefs.by_function_and_offset(list(rows)))
    except ValueError as exc:
        return str(exc)


def _packed_any_order(rows, side):
    try:
        return datarefs.pack_any_order(list(rows), side)
    except ValueError as exc:
        return str(exc)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, max_size=60), st.sampled_from([1, 3, 1024]))
def test_rows_in_any_order_pack_as_the_sorted_rows(rows, chunk):
    """The pass sorts the rows by (function, offset) itself, stable (ties keep the order
    given: they are stored in it)."""
    old = datarefs.CHUNK
    datarefs.CHUNK = chunk
    try:
        want = _packed_sorted(rows)
        for side in SIDES:
            assert _packed_any_order(rows, side) == want
    finally:
        datarefs.CHUNK = old


@pytest.mark.parametrize("side", SIDES)
def test_rows_far_out_of_order_and_wide_spans_pack_as_the_sorted_rows(side):
    """Few inversions (the insertion sort), many (the radix sort by position), ties of one
    (function, offset) in both, and spans whose product passes 60 bits (the pass declines,
    the store sorts): the blobs of the sorted rows each time."""
    kinds, tks = datarefs.KINDS, datarefs.TARGET_KINDS
    near = [(i // 50, 1000 + i, kinds[i % 9], tks[i % 3], i * 7 % 501, i % 5) for i in range(3000)]
    for i in range(0, 3000, 97):  # a constant's "addr" after the ops that follow it
        near[i], near[i + 3] = near[i + 3], near[i]
    ties = [(7, 5, kinds[k], "data", 100 - k, k) for k in range(9)]
    far = list(reversed(near)) + ties + list(reversed(ties))
    wide = [((300 - i) << 32, i << 32, "load", "data", i, 4) for i in range(300)]
    for rows in (near + ties, far, wide, [*wide, *ties]):
        assert datarefs.pack_any_order(list(rows), side) == _packed_sorted(rows)
    got = side(far, datarefs._KIND, datarefs._TARGET_KIND, 4)
    assert got == side(
        datarefs.by_function_and_offset(list(far)), datarefs._KIND, datarefs._TARGET_KIND, 4
    )
    with pytest.raises(OverflowError):
        side(wide, datarefs._KIND, datarefs._TARGET_KIND, 4)  # (reversed: past 60 bits)


@pytest.mark.parametrize("side", SIDES)
def test_the_columns_pass_declines_what_it_cannot_hold_and_errors_stay(side):
    assert datarefs._compiled_columns([(0, 1, "load", "data", 2**61, 0)], side) is None
    assert datarefs._compiled_columns([(0, 1, "load", "data", 2**59, 0)], side) is not None
    for bad, what in (
        ((0, 1, "poke", "data", 5, 0), "unknown data reference kind 'poke'"),
        ((0, 1, "load", "heap", 5, 0), "unknown data reference target kind 'heap'"),
        ((0, 1, "load", "data", 2**70, 0), "does not fit in 64 bits"),
    ):
        with pytest.raises(ValueError, match=what) as exc:
            datarefs.pack([(0, 0, "addr", "data", 1, 0), bad], side)
        assert "\n" not in str(exc.value)


def test_the_pass_is_offered_only_compiled(monkeypatch):
    monkeypatch.setattr(datawalk_active, "COLUMNS", None)
    assert dmod.ref_columns() is None  # (pure, the store's own passes cost less)
    if COMPILED is not None:
        monkeypatch.setattr(datawalk_active, "COLUMNS", COMPILED)
        assert dmod.ref_columns() is COMPILED.ref_columns


@needs_twin
@pytest.mark.parametrize(
    "rel", ["release/sql.js-1.12.0.sql-wasm.wasm", "gt/zstd-1.5.7.O2.named.wasm"]
)
def test_corpus_references_pack_the_same(rel):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    a = analyze_module(data)
    model = dmod.build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    rows = datarefs.by_function_and_offset(list(model.ref_rows))
    assert len(rows) > 1000
    assert datarefs.pack(rows, COMPILED.ref_columns) == datarefs.pack(rows)


@pytest.mark.parametrize("side", SIDES)
def test_kinds_by_identity_or_by_an_equal_copy_pack_the_same(side):
    """The pass looks a kind up by the string object first: rows whose kinds are equal
    copies (new objects, more than the pass keeps) pack as the shared literals do; an
    unknown kind after them is still refused."""
    rows = []
    for n in range(300):
        kind = datarefs.KINDS[n % len(datarefs.KINDS)]
        tk = datarefs.TARGET_KINDS[n % len(datarefs.TARGET_KINDS)]
        if n % 3:  # a copy: equal, not the same object
            kind, tk = "".join(list(kind)), "".join(list(tk))
        rows.append((n // 7, n, kind, tk, 1000 + n * 13 % 97, n % 9))
    rows = datarefs.by_function_and_offset(rows)
    assert datarefs.pack(rows, side) == datarefs.pack(rows)
    with pytest.raises(ValueError, match="unknown data reference kind 'poke'"):
        datarefs.pack([*rows, (99, 0, "poke", "data", 5, 0)], side)
