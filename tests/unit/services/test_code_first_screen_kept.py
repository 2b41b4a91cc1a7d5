"""A huge function's first screen is decoded and rendered once per code module (issue 30,
session 31): opened again, the same text and records come back and the answer around them
is made again; the TUI keeps a huge C's lines and width for the next open
(:func:`kbtool.tui.widgets.code_view.split_code`), the same as splitting it again."""

from __future__ import annotations

import pytest

from kbtool.services import code, code_function
from kbtool.tui.widgets import code_view
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    code_conn_fixture,
    code_kb_fixture,
)

MAIN = 4


@pytest.fixture
def conn(code_conn):
    return code_conn


def test_first_screen_decoded_once_same_answer(conn, monkeypatch):
    """A second first screen of the same function: no decode, the same answer (equal dict,
    the same text object); a new code module (cache cleared) decodes again."""
    n = code.body_instructions(conn, 1, MAIN)
    assert n and n > 3
    first, rec = code.function_code(conn, 1, MAIN, max_lines=3, lift=False)
    assert first["partial"]
    seen = dict(first)
    decoded: list[int] = []
    real = code_function._records
    monkeypatch.setattr(
        code_function, "_records", lambda *a, **k: decoded.append(1) or real(*a, **k)
    )
    again, rec2 = code.function_code(conn, 1, MAIN, max_lines=3, lift=False)
    assert decoded == [] and again is not first and again == seen
    assert again["mnemonics"] is first["mnemonics"] and rec2 is rec
    whole, _ = code.function_code(conn, 1, MAIN)  # the whole answer is not the first screen
    assert not whole["partial"] and decoded == [1]
    code.clear_cache()
    fresh, _ = code.function_code(conn, 1, MAIN, max_lines=3, lift=False)
    assert fresh == seen and len(decoded) == 2


def test_split_code_kept_and_equal():
    """``split_code`` gives what ``splitlines`` and ``code_width`` give; a long text's split
    is kept for the same text object only."""
    text = "\n".join(f"int f{i}(void) {{ return {i}; }}" + " " * (i % 7) for i in range(4000))
    assert len(text) >= code_view.SPLIT_KEPT_FROM
    lines, width = code_view.split_code(text)
    assert lines == text.splitlines() and width == code_view.code_width(text.splitlines())
    assert code_view.split_code(text)[0] is lines  # kept
    other = "".join([text[:10], text[10:]])  # equal, another object: split on its own
    assert other is not text and code_view.split_code(other)[0] is not lines
    assert code_view.split_code("a\x01b\nc")[1] == code_view.code_width(["a\x01b", "c"])
    assert code_view.split_code("") == ([""], 0)
