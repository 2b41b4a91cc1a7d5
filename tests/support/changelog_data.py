"""Hypothesis strategies for changelog data (hostile names, odd sizes): shared by the
printed changelog's tests and the TUI changelog pane's."""

from __future__ import annotations

from hypothesis import strategies as st

WORDS = st.sampled_from(
    [
        "memcpy",
        "[bold red]pwn[/]",
        "\x1b[2Jclear",
        "名前_関数_テスト" * 3,
        "e\u0301\u0301",
        "a\tb\u202e",
        "Server returned 400 Bad Request",
        "x" * 130,
        " ",
        "",
    ]
)
TEXT = st.one_of(st.text(max_size=30), WORDS, st.lists(WORDS, max_size=6).map(" ".join))
NAME = st.one_of(st.none(), st.just(""), TEXT)
SMALL = st.integers(0, 10**6)


@st.composite
def modified(draw) -> dict:
    m = {
        "name": draw(NAME),
        "from_index": draw(SMALL),
        "to_index": draw(SMALL),
        "instr_from": draw(SMALL),
        "instr_to": draw(SMALL),
        "size_from": draw(SMALL),
        "size_to": draw(SMALL),
        "runtime": draw(st.booleans()),
        "review": draw(st.booleans()),
        "calls_added": draw(st.lists(TEXT, max_size=4)),
        "calls_removed": draw(st.lists(TEXT, max_size=3)),
        "strings_added": draw(st.lists(TEXT, max_size=4)),
        "strings_removed": draw(st.lists(TEXT, max_size=3)),
    }
    if draw(st.booleans()):
        m["triage"] = draw(st.floats(0, 10))
    if draw(st.booleans()):
        m["reasons"] = draw(st.lists(TEXT, max_size=4))
    if draw(st.booleans()):
        m["hint"] = draw(TEXT)
    if draw(st.booleans()):
        items = st.one_of(
            TEXT,
            st.sampled_from(["calls added: x", "12 instructions", "strings removed: 'y'"]),
        )
        m["items"] = draw(st.lists(items, max_size=4))
    return m


@st.composite
def function(draw, new: bool) -> dict:
    strings = draw(st.lists(TEXT, max_size=4))
    f = {
        "name": draw(NAME),
        "from_index": draw(SMALL),
        "to_index": draw(SMALL),
        "instr": draw(SMALL),
        "size": draw(SMALL),
        "runtime": draw(st.booleans()),
        "strings": strings,
    }
    if new:
        f["string_count"] = len(strings) + draw(st.integers(0, 5))
        f["calls"] = draw(st.lists(TEXT, max_size=4))
    return f


@st.composite
def changelog(draw) -> dict:
    return {
        "from": draw(TEXT),
        "to": draw(TEXT),
        "order": draw(st.sampled_from(["triage", "index", "weight", "odd"])),
        "modified": draw(st.lists(modified(), max_size=5)),
        "new": draw(st.lists(function(True), max_size=3)),
        "deleted": draw(st.lists(function(False), max_size=3)),
        "imports_added": draw(st.lists(TEXT, max_size=3)),
        "imports_removed": draw(st.lists(TEXT, max_size=3)),
    }
