"""Make untrusted text (names, strings from binaries) safe to show in a terminal or a cell."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ALL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _esc(m: re.Match[str]) -> str:
    ch = m.group(0)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch) or (
        f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
    )


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with control and bidi-override characters shown as escapes (never interpreted)."""
    if text is None:
        return ""
    s = str(text)
    return (_CONTROL if keep_newlines else _ALL_CONTROL).sub(_esc, s)


def clip(text: str, width: int) -> str:
    """Shorten to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


# Characters JSON does not have to escape but terminals and JavaScript treat specially: DEL
# and C1 controls (U+0080-U+009F: 8-bit CSI/OSC), the JavaScript line terminators
# U+2028/U+2029, and the bidi controls that reorder what a reader sees.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def json_safe(json_text: str) -> str:
    """Serialized JSON with those characters written as ``\\uXXXX`` escapes: the same JSON
    value (outside strings JSON text is ASCII), safe to print or embed."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json_text)
