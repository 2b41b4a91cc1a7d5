"""The fast naming of a prepared module (issue 30: ffmpeg's 87.8k functions, globals and data
labels): names that are already unique, valid, unreserved C identifiers are kept as they
are in one pass; every other name takes the slow path. The C names must be exactly what the
one-by-one rule (``_unique``) gives, for any names, hostile ones included."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kbtool.lift import context as ctx
from kbtool.lift.names import MAX_IDENT, Names
from kbtool.lift.prelude import PRELUDE_NAMES
from tests.support.paths import corpus_file

# names that each hit one rule of _unique: reserved (C, prelude), generated (f1, p0, M...),
# not an identifier (spaces, leading digit, newline, non-ASCII, too long), duplicates
TRICKY = [
    "int",
    "main",
    "NULL",
    sorted(PRELUDE_NAMES)[0],
    "f1",
    "g0",
    "p0",
    "l2",
    "t3",
    "r4",
    "L5",
    "M",
    "M1",
    "f1_1",
    "d_10",
    "a b",
    "9lives",
    "x\ny",
    "x\n",
    "é",
    "a::b",
    "a__b",
    "_",
    "x" * MAX_IDENT,
    "x" * (MAX_IDENT + 1),
    "dup",
    "dup_1",
    "",
]
NAME = st.one_of(
    st.sampled_from(TRICKY),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.text(max_size=8),
)
ADDRESS = st.one_of(st.integers(-3, 40), st.sampled_from([-(1 << 31), (1 << 31) - 1, 1 << 31]))


def _slow(raws: list, prefix: str, used: set[str]) -> list[str]:
    return [ctx._unique(raw, f"{prefix}{i}", i, used) for i, raw in enumerate(raws)]


def _slow_data(items: list, used: set[str]) -> list[tuple]:
    return [
        (a, sz, ctx._unique(label, f"d_{a:x}", a, used), text)
        for a, sz, label, text in items
        if 0 <= a < 1 << 31
    ]


@settings(max_examples=400, deadline=None)
@given(
    taken=st.lists(NAME, max_size=4),
    raws=st.lists(st.one_of(st.none(), NAME), max_size=12),
    prefix=st.sampled_from(["f", "g"]),
)
@example(taken=["f1"], raws=[None, None], prefix="f")  # a fallback already taken
@example(taken=[], raws=["dup", "dup", "dup_1"], prefix="f")
def test_function_and_global_names_are_the_slow_rules(taken, raws, prefix):
    used_fast, used_slow = set(taken), set(taken)
    assert ctx._idents(raws, prefix, used_fast) == _slow(raws, prefix, used_slow)
    assert used_fast == used_slow


@settings(max_examples=400, deadline=None)
@given(
    taken=st.lists(NAME, max_size=4),
    items=st.lists(  # one item per address, as in a data model
        st.tuples(ADDRESS, st.integers(0, 9), NAME, st.none() | st.text(max_size=3)),
        unique_by=lambda t: t[0],
    ),
)
@example(taken=["s_x"], items=[(4, 1, "s_x", None)])  # a label taken by a function
@example(taken=[], items=[(4, 1, "s_x", None), (8, 1, "s_x", "t")])  # two alike
@example(taken=[], items=[(4, 1, "a\nb", None)])  # a newline inside one label
@example(taken=[], items=[(4, 1, "ok", None), (8, 1, "L12", None)])  # a generated name
@example(taken=[], items=[(-1, 1, "neg", None), (1 << 31, 1, "big", None)])  # out of range
@example(taken=[], items=[(4, 1, "ok", None), (8, 1, "", None)])  # an empty label
def test_data_labels_are_the_slow_rules(taken, items):
    items = sorted(items)
    used_fast, used_slow = set(taken), set(taken)
    fast = ctx._data_idents(list(items), used_fast)
    assert fast == _slow_data(items, used_slow)
    assert all(type(t) is tuple for t in fast)
    assert used_fast == used_slow


def test_all_plain_labels_take_the_one_pass():
    """Plain labels pass the whole-list check, and a single bad label of each kind sends
    the whole list to the per-label path."""
    plain = [f"s_{i}" for i in range(50)]
    assert ctx._all_plain(plain)
    for bad in ("9x", "a b", "x\ny", "int", "f7", "M", "", "é", "y" * (MAX_IDENT + 1)):
        assert not ctx._all_plain([*plain, bad]), bad
    assert not ctx._all_plain([*plain, None])


def test_prepare_names_a_module_as_the_slow_rules_do():
    """A whole module: its functions, global and data labels named by hostile, colliding
    names come out as the one-by-one rule names them, and every C name is unique."""
    wasm = corpus_file("gt/zstd-1.5.2.O2.stripped.wasm").read_bytes()
    funcs = {0: "int", 1: "dup", 2: "dup", 3: "f1", 4: "a b", 5: "s_7", 9: "f9_9"}
    gl = {0: "dup"}
    data = [(16, 4, "s_7", "abc"), (8, 2, "dup", None), (32, 1, "d_20", None), (-4, 1, "e", None)]
    lm = ctx.prepare(wasm, Names(functions=funcs, globals=gl, data=data))
    n = lm.module.num_functions
    used: set[str] = set()
    assert lm.func_c == _slow([funcs.get(i) for i in range(n)], "f", used)
    assert lm.global_c == _slow([gl.get(i) for i in range(len(lm.module.globals))], "g", used)
    assert lm.data_items == _slow_data(sorted(data), used)
    assert lm.module_idents == used
    every = [*lm.func_c, *lm.global_c, *(d[2] for d in lm.data_items)]
    assert len(set(every)) == len(every)
    assert lm.func_c[:6] == ["int_0", "dup", "dup_2", "f1_3", "a_b", "s_7"]
    assert lm.data_label(17) == ("s_7_16", 16, 1, "abc")


def test_plain_labels_of_a_module_are_kept_as_they_are():
    """The common case: every label a valid, unique identifier, kept unchanged."""
    wasm = corpus_file("gt/zstd-1.5.2.O2.stripped.wasm").read_bytes()
    data = [(8 * i, 8, f"s_{i:x}", f"text {i}") for i in range(1, 200)]
    lm = ctx.prepare(wasm, Names(data=list(reversed(data))))
    assert lm.data_items == data
    assert {d[2] for d in data} <= lm.module_idents
