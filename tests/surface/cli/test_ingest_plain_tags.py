"""A plain ingest's summary drops its Rich tags without compiling their pattern
(``ingest_cmd._drop_tags``): the same text as the pattern's ``sub`` for random texts over the
characters that matter and for the tags the summary prints."""

from __future__ import annotations

import random
import re

from kbtool.commands.ingest_cmd import _MARKUP, _drop_tags

_PATTERN = re.compile(_MARKUP)


def test_random_texts_as_the_pattern() -> None:
    rnd = random.Random(31)
    alphabet = "[]/ abzAZ1\u00e9\n"
    for _ in range(100_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(14)))
        assert _drop_tags(text) == _PATTERN.sub("", text), repr(text)


def test_the_summary_tags() -> None:
    for text in (
        "ingested version [bold]1[/] ",
        "[yellow]note:[/] ",
        "[bold red]error:[/]",
        "[/]",
        "[/bold]",
        "[[bold]]",
        "[a b c]x[/ a]",
        "[/a]]",
        "no tags at all",
        "[Bold] stays, [1] stays, [] stays",
    ):
        assert _drop_tags(text) == _PATTERN.sub("", text), text
