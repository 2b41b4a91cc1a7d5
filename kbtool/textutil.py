"""Untrusted text (names, strings from binaries, summaries from models): the one place that
knows which characters are unsafe to show and how each surface reveals them.

Unsafe characters, one vocabulary for every surface:

- **controls**: C0 (U+0000-U+001F), DEL, C1 (U+0080-U+009F): they drive terminals;
- **line separators** U+2028/U+2029: line breaks for JavaScript and some terminals;
- **bidi controls** (U+061C, U+200E/U+200F, U+202A-U+202E, U+2066-U+2069): they reorder what
  a reader sees (Trojan Source);
- **invisibles**: zero-width characters (U+200B-U+200D, U+2060-U+2064, U+FEFF), the soft
  hyphen U+00AD and the tag characters U+E0000-U+E007F: they hide text from a reader (an
  instruction to an agent, a name that looks like another).

Surfaces reveal them as escapes (``\\x1b``, ``\\u202e``, ``\\U000e0041``): the terminal
(:func:`printable`), JSON text (:func:`json_safe`), C comments and export files (their
modules call :func:`printable`). The gate refuses names that hold any of them
(:func:`unsafe_chars`).
"""

from __future__ import annotations

import re
from typing import Any

#: what a compiled pattern offers (:class:`LazyPattern` hands these on)
_PATTERN_ATTRS = (
    "match",
    "fullmatch",
    "search",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class LazyPattern:
    """``re.compile(pattern, flags)`` made when first used, for a module-level pattern that
    many runs never use: compiling one is ~0.1-0.4 ms of pure-Python parsing, and a plain
    ``kbtool ingest`` of a small module used to compile ~20 at import that it never used.
    Offers the compiled pattern's methods and attributes (``.match``, ``.sub``, ``.pattern``
    ...); after the first use they are plain attributes of this object (no lookup hook). Not
    a :class:`re.Pattern` itself: call its methods (``p.sub(...)``, not ``re.sub(p, ...)``)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # the first use (later ones find attributes)
        if name.startswith("__"):  # (copy, pickle and friends probe dunders: not a use)
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for attr in _PATTERN_ATTRS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)


BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
INVISIBLE = "\u00ad\u200b-\u200d\u2060-\u2064\ufeff\U000e0000-\U000e007f"
_UNSAFE_BODY = f"\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}"

_CONTROL = LazyPattern(f"[\x00-\x08\x0b-\x1f{_UNSAFE_BODY}]")  # keeps \t and \n
_ALL_CONTROL = LazyPattern(f"[\x00-\x1f{_UNSAFE_BODY}]")
_UNSAFE_IN_LINE = _ALL_CONTROL  # a one-line value (a name, a label)


def _safe_ascii(s: object) -> bool:
    """Whether ``s`` is a str of ASCII without a control: then it holds no unsafe character
    (the unsafe ASCII ones are C0 and DEL, exactly what ``str.isprintable`` refuses among
    ASCII) and the patterns need not run (most names and labels: a small ingest compiles
    none). Anything else (a str subclass too) goes through the patterns as before."""
    return type(s) is str and s.isascii() and s.isprintable()


def _esc(m: re.Match[str]) -> str:
    ch = m.group(0)
    o = ord(ch)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch) or (
        f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
    )


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with control, bidi and invisible characters shown as escapes (never
    interpreted)."""
    if text is None:
        return ""
    s = str(text)
    if _safe_ascii(s):
        return s
    return (_CONTROL if keep_newlines else _ALL_CONTROL).sub(_esc, s)


def unsafe_chars(text: str, *, allow_newlines: bool = False) -> list[str]:
    """The unsafe characters ``text`` holds, as ``U+XXXX`` (empty: safe)."""
    if _safe_ascii(text):
        return []
    rx = _CONTROL if allow_newlines else _UNSAFE_IN_LINE
    return [f"U+{ord(c):04X}" for c in rx.findall(text)]


def strip_unsafe(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without its unsafe characters (a summary is cleaned, not refused)."""
    if _safe_ascii(text):
        return text
    return (_CONTROL if keep_newlines else _ALL_CONTROL).sub("", text)


def clip(text: str, width: int) -> str:
    """Shorten to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


# Characters JSON does not have to escape but terminals and JavaScript treat specially (C0 is
# escaped by JSON itself): written as \uXXXX escapes (surrogate pairs above U+FFFF).
_JSON_UNSAFE = LazyPattern(f"[{_UNSAFE_BODY}]")


def _json_esc(m: re.Match[str]) -> str:
    o = ord(m.group(0))
    if o < 0x10000:
        return f"\\u{o:04x}"
    o -= 0x10000
    return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"


def json_safe(json_text: str) -> str:
    """Serialized JSON with those characters written as ``\\uXXXX`` escapes: the same JSON
    value (outside strings JSON text is ASCII), safe to print or embed."""
    return _JSON_UNSAFE.sub(_json_esc, json_text)
