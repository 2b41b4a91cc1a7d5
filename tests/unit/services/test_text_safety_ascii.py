"""The unsafe-character functions' ASCII fast path (``kbtool.textutil``, issue 30.4, session
30 S): a str of printable ASCII is answered without the patterns, with exactly what the
patterns answer for every text (a small ingest then compiles none of them:
tests/surface/cli/test_ingest_fixed_costs.py)."""

from __future__ import annotations

import random
import re

from kbtool import textutil

_BODY = textutil._UNSAFE_BODY
_KEEP = re.compile(f"[\x00-\x08\x0b-\x1f{_BODY}]")  # the patterns as written before the cut
_ALL = re.compile(f"[\x00-\x1f{_BODY}]")


def _old(text: str, keep: bool) -> tuple[str, list[str], str]:
    rx = _KEEP if keep else _ALL
    return (
        rx.sub(textutil._esc, text),
        [f"U+{ord(c):04X}" for c in rx.findall(text)],
        rx.sub("", text),
    )


def _new(text: str, keep: bool) -> tuple[str, list[str], str]:
    return (
        textutil.printable(text, keep_newlines=keep),
        textutil.unsafe_chars(text, allow_newlines=keep),
        textutil.strip_unsafe(text, keep_newlines=keep),
    )


def test_every_code_point_answers_as_the_patterns() -> None:
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        for keep in (False, True):
            assert _new(ch, keep) == _old(ch, keep), hex(cp)
            assert _new(f"a{ch}b", keep) == _old(f"a{ch}b", keep), hex(cp)


def test_random_texts_answer_as_the_patterns() -> None:
    rng = random.Random(30)
    odd = ["\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\u2028", "\u202e", "\ufeff", "é", "字"]
    for _ in range(20_000):
        n = rng.randrange(0, 16)
        if rng.random() < 0.5:
            text = "".join(chr(rng.randrange(0x20, 0x7F)) for _ in range(n))
        else:
            text = "".join(rng.choice(odd) if rng.random() < 0.3 else "x" for _ in range(n))
        for keep in (False, True):
            assert _new(text, keep) == _old(text, keep), repr(text)


def test_answers_are_plain_str_and_non_str_fails_as_before() -> None:
    class Sub(str):
        pass

    assert type(textutil.strip_unsafe(Sub("abc"))) is str
    assert type(textutil.printable(Sub("abc"))) is str
    assert textutil.unsafe_chars(Sub("a\x1b")) == ["U+001B"]
    for fn in (textutil.unsafe_chars, textutil.strip_unsafe):
        try:
            fn(None)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            raise AssertionError(f"{fn.__name__}(None) did not raise TypeError")
