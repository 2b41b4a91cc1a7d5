"""The JSON text of an answer as kbtool's MCP server writes it (one text block per tool).

Here, below the services, so that a diff preparation (:mod:`kbtool.services.diff.warm`) can
keep a whole diff's answer already encoded (:mod:`kbtool.services.diff.answer`): the MCP
server then writes those kept bytes instead of reading the report and encoding it again.
:func:`form` names this encoder's output (its version, the ASCII bound, the encoder used):
an answer kept under another form is never served.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
from typing import Any

from kbtool.textutil import json_safe

__all__ = ["form", "LARGE", "Encoded", "as_json", "ascii_json", "env_bytes", "string_literal"]


def env_bytes(name: str, default: int) -> int:
    """A positive byte count from the environment variable ``name``, else ``default``."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def as_json(value: Any) -> str:
    """Compact JSON (UTF-8 text as is, but C1 controls, U+2028/U+2029 and bidi controls
    written as ``\\uXXXX``: an agent's terminal or a JavaScript client never meets them raw);
    pydantic-core's encoder, ~4x faster on big lists, is there whenever the SDK is. An
    answer of :data:`LARGE` bytes or more (only an unpaged whole answer can be) is written
    all ASCII (:func:`ascii_json`)."""
    try:
        from pydantic_core import to_json
    except ImportError:  # pragma: no cover - the SDK depends on pydantic
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return json_safe(text) if len(text) < LARGE else ascii_json(text)
    raw = to_json(value)
    # every character json_safe escapes is DEL or beyond ASCII: look for them among those
    # bytes only (a whole ffmpeg diff: 7 KB of its 5.7 MB, 1 ms instead of a 20 ms scan)
    rest = raw.translate(None, _BELOW_DEL)
    if not rest:
        return raw.decode("ascii")
    if len(raw) >= LARGE:
        return _ascii(raw, rest)
    if json_safe(rest.decode("utf-8")) != rest.decode("utf-8"):
        return json_safe(raw.decode("utf-8"))
    return raw.decode("utf-8")


_BELOW_DEL = bytes(range(0x7F))  # ASCII but DEL: never escaped by json_safe

#: answers this long (bytes) or longer are written all ASCII: the MCP SDK's stdio client
#: joins an answer line from 64 KB reads, copying and scanning what it has so far at each
#: one (its cost grows with the square of the line), and one character beyond U+00FF makes
#: Python hold the whole line at 4 (or 2) bytes per character: 140 -> 82 ms for ffmpeg's
#: 6.4 MB whole diff line; 22 -> 9 ms at 2 MiB, 8 -> 4 ms at 1 MiB, so smaller answers keep
#: their readable UTF-8 (docs/DECISIONS.md, "The whole get_diff over MCP");
#: ``KBTOOL_MCP_ASCII_FROM`` (bytes) moves the bound
LARGE = env_bytes("KBTOOL_MCP_ASCII_FROM", 2 << 20)


def ascii_json(json_text: str) -> str:
    """``json_text`` (serialized JSON) with DEL and every character beyond ASCII written as
    ``\\uXXXX`` escapes (surrogate pairs above U+FFFF, as ``json.dumps`` with ``ensure_ascii``
    writes them): the same JSON value, safe wherever :func:`json_safe` text is (a superset)."""
    raw = json_text.encode("utf-8", "surrogatepass")  # a lone surrogate: escaped as one
    return _ascii(raw, raw.translate(None, _BELOW_DEL))


def _ascii(raw: bytes, rest: bytes) -> str:
    """:func:`ascii_json` of the UTF-8 bytes ``raw``, whose bytes from DEL up are ``rest``."""
    if b"\x7f" in rest:
        raw = raw.replace(b"\x7f", b"\\u007f")
    return raw.decode("ascii", _ESCAPE_ERRORS)


def _escape_beyond_ascii(err: UnicodeError) -> tuple[str, int]:
    """The codec error handler behind :func:`ascii_json`: decoding UTF-8 JSON bytes as ASCII,
    the run of bytes beyond ASCII at ``err.start`` (whole UTF-8 sequences: their bytes are
    all beyond ASCII), as JSON escapes of its characters (the ASCII around it is copied by
    the codec, in C)."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    data: bytes = err.object
    end = err.start
    while end < len(data) and data[end] >= 0x80:
        end += 1
    out = []
    for ch in data[err.start : end].decode("utf-8", "surrogatepass"):
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out), end


_ESCAPE_ERRORS = "kbtool-json-ascii"
codecs.register_error(_ESCAPE_ERRORS, _escape_beyond_ascii)


@functools.cache
def form() -> str:
    """What :func:`as_json` writes, by version (bump the number when its output changes),
    the ASCII bound and the encoder behind it (pydantic-core when installed, else json).
    pydantic-core is found, not imported (a preparation asking what is kept should not pay
    its ~60 ms import); its output for plain JSON values (str, int, float, bool, None, dict,
    list) is taken as stable across its versions (a change would still be the same value)."""
    import importlib.util

    encoder = "pc" if importlib.util.find_spec("pydantic_core") is not None else "json"
    return f"mcp-json-1-{LARGE}-{encoder}"


def string_literal(text: str) -> bytes:
    """``text`` as a JSON string literal, quotes included: for an ASCII text, byte for byte
    what the MCP SDK's pydantic writes for it in an answer line (orjson escapes ``"``, ``\\``
    and the controls as pydantic does, ``\\u00xx`` in lower case; DEL and the rest as is)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        orjson = None
    if orjson is not None:
        try:
            return orjson.dumps(text)
        except TypeError:  # a lone surrogate (never in as_json's output): below, not ASCII
            pass
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")


class Encoded:
    """A JSON answer kept two ways, each made from the other when first asked: its text (as
    :func:`as_json` wrote it) and that text's :func:`string_literal` (what the MCP server's
    stdio guard writes into the answer line: :mod:`kbtool.mcp.splice`)."""

    __slots__ = ("_text", "_literal")

    def __init__(self, text: str | None = None, literal: bytes | None = None) -> None:
        if text is None and literal is None:
            raise ValueError("an encoded answer needs its text or its literal")
        self._text = text
        self._literal = literal

    def text(self) -> str:
        if self._text is None:
            assert self._literal is not None
            try:
                import orjson
            except ImportError:  # pragma: no cover - orjson is a dependency
                self._text = json.loads(self._literal)
            else:  # the literal holds one JSON string (~5 ms for ffmpeg's whole diff)
                self._text = orjson.loads(self._literal)
        return self._text

    def literal(self) -> bytes:
        if self._literal is None:
            self._literal = string_literal(self.text())
        return self._literal
