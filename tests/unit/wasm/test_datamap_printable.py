"""The data map's text check without its regex: ``_printable_text`` decodes strictly and
checks the characters; the ``_RUN.fullmatch`` it ran first never changed the answer (every
strictly decoded string of printable characters and ``\\t \\n \\r`` is made of ``_RUN``'s
characters, and what ``_RUN`` refuses fails the decode or the check). Compared with that
reference on crafted and random bytes, pure and compiled."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.wasm import active
from kbtool.wasm.decoder import dmap as pure_dmap

COMPILED = active.load_compiled()
_RUN = re.compile(
    rb"(?:[\t\n\r\x20-\x7e]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}"
    rb"|[\xf0-\xf4][\x80-\xbf]{3})*"
)


def _reference(b: bytes) -> str | None:
    """The check as it was: the regex, then the strict decode and the printable check."""
    if _RUN.fullmatch(b) is None:
        return None
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return None
    return s


def _impls() -> list:
    out = [pure_dmap._printable_text]
    if COMPILED is not None:
        from kbtool.wasm._cdecoder import dmap as cdmap  # type: ignore[import-not-found]

        out.append(cdmap._printable_text)
    return out


# what the regex refuses and a decode might take, or the reverse: overlongs, surrogates,
# code points past U+10FFFF, C0 and C1 controls, DEL, a lone continuation, a cut sequence
CRAFTED = [
    b"",
    b"abcd",
    b"a\tb\nc\rd",
    b"\x0b\x0c",
    b"ab\x00cd",
    b"ab\x7fcd",
    b"\x1f",
    b"\xc2\x80",  # U+0080, a C1 control: the regex takes it, isprintable refuses
    b"\xc2\xa0",  # no-break space
    b"\xc0\x80",  # overlong NUL
    b"\xc1\xbf",
    b"\xe0\x80\x80",  # overlong
    b"\xe0\xa0\x80",
    b"\xed\xa0\x80",  # a surrogate: the regex takes it, the decode refuses
    b"\xef\xbf\xbf",  # U+FFFF: not a character, not printable
    b"\xef\xbb\xbf",  # BOM (format character)
    b"\xe2\x80\x8b",  # zero-width space
    b"\xe2\x80\xa8",  # line separator
    b"\xf0\x9f\x98\x80",  # an emoji
    b"\xf4\x8f\xbf\xbf",  # U+10FFFF
    b"\xf4\x90\x80\x80",  # past U+10FFFF: the regex takes it, the decode refuses
    b"\xf5\x80\x80\x80",
    b"\x80",
    b"\xc3",
    b"abc\xe2\x82",
    "héllo wörld ✓ 日本語".encode(),
    "tab\there\u00ad".encode(),  # soft hyphen (format character)
]


@pytest.mark.parametrize("b", CRAFTED)
def test_crafted_bytes_give_the_reference_answer(b: bytes) -> None:
    for f in _impls():
        assert f(b) == _reference(b), (f, b)


def test_every_short_sequence_gives_the_reference_answer() -> None:
    # every one- and two-byte string, and three-byte ones led by a multi-byte lead
    cases = [bytes([a]) for a in range(256)]
    cases += [bytes([a, b]) for a in range(256) for b in range(256)]
    cases += [
        bytes([a, b, c])
        for a in (0xE0, 0xED, 0xEF, 0xF0, 0xF4)
        for b in range(0x80, 0xC0)
        for c in range(0x7E, 0xC1)
    ]
    for f in _impls():
        assert [f(b) for b in cases] == [_reference(b) for b in cases]


_PIECES = st.sampled_from(
    [b"a", b" ", b"~", b"\t", b"\n", b"\r", b"\x00", b"\x7f", b"\x0b"] + CRAFTED[6:]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12).map(b"".join) | st.binary(max_size=40))
def test_random_bytes_give_the_reference_answer(b: bytes) -> None:
    for f in _impls():
        assert f(b) == _reference(b)


def test_printable_text_mixes_are_kept_and_controls_refused() -> None:
    f = pure_dmap._printable_text
    assert f(b"ok\tgo\n") == "ok\tgo\n"
    assert f(b"ok\x0bgo") is None
    assert f(b"\xed\xa0\x80") is None
