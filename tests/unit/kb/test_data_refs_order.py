"""Ingest writes a version's data references in (function, offset) order, ties in the scan's
order (the single-target reads page them by rowid): the offset-keyed sort gives exactly the
order of the (function, offset) key, including Go's references from data (function -1) and
rows that do not follow the code section's layout."""

from __future__ import annotations

from operator import itemgetter

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.kb.datarefs import by_function_and_offset as _by_function_and_offset

KINDS = st.sampled_from(["addr", "funcptr", "load", "store", "read", "via_header"])


@st.composite
def laid_out_rows(draw):
    """Rows as a module gives them: function i's offsets inside its body, bodies in index
    order; optionally Go header rows (function -1) at offsets past the code; shuffled."""
    rows = []
    at = 100
    for fi in range(draw(st.integers(0, 6))):
        size = draw(st.integers(1, 30))
        for _ in range(draw(st.integers(0, 8))):
            off = at + draw(st.integers(0, size - 1))
            rows.append((fi, off, draw(KINDS), "data", draw(st.integers(0, 9)), 0))
        at += size
    for _ in range(draw(st.integers(0, 5))):
        rows.append((-1, at + 1000 + draw(st.integers(0, 50)), "gostring", "data", 1, 3))
    return draw(st.permutations(rows))


@settings(max_examples=300, deadline=None)
@given(laid_out_rows())
def test_same_order_as_the_function_offset_key(rows):
    assert _by_function_and_offset(list(rows)) == sorted(rows, key=itemgetter(0, 1))


ANY = st.tuples(
    st.integers(-3, 4), st.integers(0, 40), KINDS, st.just("data"), st.integers(0, 3), st.just(0)
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ANY, max_size=14))
def test_any_rows_still_sorted_by_function_then_offset(rows):
    assert _by_function_and_offset(list(rows)) == sorted(rows, key=itemgetter(0, 1))


def test_empty():
    assert _by_function_and_offset([]) == []
