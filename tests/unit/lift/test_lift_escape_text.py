"""``names.escape_text``: the text of a string constant inside a C comment or literal. A
printable text takes a short path (no loop per character); both paths must answer alike."""

from __future__ import annotations

import pytest

from kbtool.lift.names import comment_text, escape_text


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [
        ("hello", 80, "hello"),
        ('say "hi"', 80, 'say \\"hi\\"'),
        ("a\\b", 80, "a\\\\b"),
        ("end */ here", 80, "end *\\/ here"),
        ("/* open", 80, "/\\* open"),
        ("what??!", 80, "what?\\?!"),
        ("abcdef", 3, "abc..."),
        ("abc", 3, "abc"),
        ("abc", 0, "..."),
        ("", 0, ""),
        ("abc", -1, "..."),
        ("caf\u00e9 \u4e2d", 80, "caf\u00e9 \u4e2d"),  # printable beyond ASCII stays
        ("line\nnext", 80, "line\\nnext"),
        ("tab\there\r", 80, "tab\\there\\r"),
        ("nul\x00bell\x07", 80, "nul\\x00bell\\x07"),
        ("zero\u200bwidth", 80, "zero\\u200bwidth"),
        ("emoji \U0001f600", 80, "emoji \U0001f600"),
        ("sep\u2028x", 80, "sep\\u2028x"),
        ("ab\ncd", 3, "ab\\n..."),  # the limit counts the text's characters
        ("ab*/", 3, "ab*..."),
        ("ab*/", 4, "ab*\\/"),
        ('"' * 4, 2, '\\"\\"...'),
    ],
)
def test_escape_text(text: str, limit: int, want: str) -> None:
    assert escape_text(text, limit) == want


def test_escape_text_never_ends_the_comment() -> None:
    for text in ("*/", "x*/y", "**//", "a\n*/", '"*/"', "??=", "a??/b"):
        out = comment_text(text)
        assert "*/" not in out and "\n" not in out
        for tri in "=/'()!<>-":  # no trigraph (of a pair of `?`)
            assert "??" + tri not in out
