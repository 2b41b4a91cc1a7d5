"""The change table printed row by row as segments (``DiffRows``, what ``kbtool diff`` and
``kbtool ui diff`` print) is exactly :func:`diff_lines` printed through Rich: the same
characters, and in a colour terminal the same escape codes, at any width."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kbtool.render.terminal import DiffRows, diff_lines

CLASSES = ["unchanged", "moved", "modified", "new", "deleted", "renamed-ish"]
PROVS = [None, "human", "oracle", "agent", "diff-carry", "export", "odd\x1bprov"]
NAMES = st.one_of(
    st.none(),
    st.just(""),
    st.text(min_size=1, max_size=40),
    st.sampled_from(["memcpy", "名前_関数_テスト" * 6, "_ZN4core3fmt" + "x" * 120, "a\tb\u202e"]),
)
INDEX = st.one_of(st.none(), st.integers(0, 10**7))
CONF = st.one_of(st.none(), st.floats(0, 1))


@st.composite
def change(draw) -> dict:
    return {
        "classification": draw(st.sampled_from(CLASSES)),
        "from_index": draw(INDEX),
        "to_index": draw(INDEX),
        "name": draw(NAMES),
        "provenance": draw(st.sampled_from(PROVS)),
        "confidence": draw(CONF),
        "score": draw(CONF),
        "review": draw(st.booleans()),
        "runtime": draw(st.booleans()),
    }


def printed(renderable, width: int, colour: bool, crop: bool) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=colour,
        color_system="truecolor" if colour else None,
        highlight=False,
    )
    console.print(renderable, no_wrap=True, crop=crop)
    return buf.getvalue()


@settings(max_examples=150, deadline=None)
@given(
    changes=st.lists(change(), max_size=12),
    width=st.integers(20, 200),
    colour=st.booleans(),
    toolchain=st.booleans(),
    only=st.sampled_from([None, "modified", "review", "runtime,new", "deleted,moved"]),
)
def test_rows_print_exactly_as_the_text_table(changes, width, colour, toolchain, only):
    report = {"changes": changes}
    kw = dict(width=width, only=only, toolchain_changed=toolchain, show_score=width >= 100)
    slow = printed(diff_lines(report, **kw), width, colour, crop=True)
    fast = printed(DiffRows(report, **kw), width, colour, crop=False)
    assert fast == slow


def test_rows_never_wider_than_the_console():
    report = {
        "changes": [
            {
                "classification": "modified",
                "from_index": 1,
                "to_index": 2,
                "name": "x" * 500,
                "provenance": "agent",
                "confidence": 0.5,
                "score": 0.5,
                "review": True,
                "runtime": True,
            }
        ]
    }
    for width in (30, 80, 140):
        out = printed(DiffRows(report, width=width, show_score=width >= 100), width, False, False)
        lines = out.splitlines()
        assert len(lines) == 3 and all(len(line) <= width for line in lines)
        assert lines[2].startswith("modified")
        # the name gives way with an ellipsis; a console too narrow for the fixed columns crops
        assert ("…" in lines[2]) == (width >= 80)
