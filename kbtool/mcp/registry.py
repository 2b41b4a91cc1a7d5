"""The one registry of kbtool's MCP tools.

Each tool is a module-level typed function in a ``kbtool.mcp.tools_*`` module, declared
once with :func:`tool`: its name is the function's name, its description the docstring, its
input schema the parameter annotations, and the decorator gives the title and the hints
(``readOnlyHint``, ``idempotentHint``; ``destructiveHint`` and ``openWorldHint`` are always
false). :func:`load` imports the tool modules in a fixed order and returns the list.

A tool reads the KB it serves through :func:`read` (a reused read-only connection,
:mod:`kbtool.mcp.reads`) and writes through its own read-write connection on
:func:`kb_path`; the server binds the path around every call (:func:`bound`), so the same
functions serve any KB and tests can call them directly inside ``with bound(path):``.

The tool modules import this module, never :mod:`kbtool.mcp.server` (no import cycle).
No ``from __future__ import annotations`` in the tool modules: the SDK reads their
parameter annotations (``Annotated[..., Field(...)]``) as live objects.
"""

from __future__ import annotations

import codecs
import contextvars
import importlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from kbtool.textutil import json_safe

MAX_INT = 2**63 - 1  # SQLite's largest integer: every id/index/limit argument is 0..MAX_INT

#: the tool modules, in the order their tools are listed (``tools/list``)
MODULES = (
    "tools_core",
    "tools_xrefs",
    "tools_agents",
    "tools_analysis",
    "tools_code",
    "tools_data",
    "tools_knowledge",
    "tools_types",
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Tool:
    """One registered tool. ``text``: the answer is plain text (else the JSON of the value)."""

    fn: Callable[..., Any]
    title: str
    read_only: bool
    idempotent: bool
    text: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__

    def render(self, value: Any) -> str:
        if isinstance(value, Rendered):
            return value.text
        return value if self.text else as_json(value)


class Rendered:
    """An answer a tool has already rendered (its JSON text, kept for the next same call)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


TOOLS: list[Tool] = []


def tool(
    *, title: str, read_only: bool = True, idempotent: bool | None = None, text: bool = False
) -> Callable[[F], F]:
    """Register the decorated function as an MCP tool (once per name). ``idempotent``
    defaults to ``read_only`` (a read is idempotent; a write only when declared so)."""

    def register(fn: F) -> F:
        if any(t.name == fn.__name__ for t in TOOLS):
            raise ValueError(f"MCP tool {fn.__name__} registered twice")
        TOOLS.append(
            Tool(fn, title, read_only, read_only if idempotent is None else idempotent, text)
        )
        return fn

    return register


def load() -> list[Tool]:
    """Every tool, in :data:`MODULES` order (imports the tool modules, hence pydantic)."""
    for name in MODULES:
        importlib.import_module(f"kbtool.mcp.{name}")
    order = {name: i for i, name in enumerate(MODULES)}
    return sorted(TOOLS, key=lambda t: order.get(t.fn.__module__.rsplit(".", 1)[-1], len(order)))


# ---------------------------------------------------------------- the KB a call serves

_KB: contextvars.ContextVar[str | None] = contextvars.ContextVar("kbtool_mcp_kb", default=None)


@contextmanager
def bound(db_path: str) -> Iterator[None]:
    """Calls inside see ``db_path`` as their KB (:func:`kb_path`, :func:`read`)."""
    token = _KB.set(db_path)
    try:
        yield
    finally:
        _KB.reset(token)


def kb_path() -> str:
    """The KB file of the current call (resolved, checked by the server)."""
    path = _KB.get()
    if path is None:
        raise RuntimeError("no KB bound: call MCP tools through the server or inside bound()")
    return path


def read(query: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``query(conn, *args, **kwargs)`` on a reused read-only connection of the call's KB."""
    from kbtool.mcp import reads

    return reads.pool_for(kb_path()).read(query, *args, **kwargs)


# ---------------------------------------------------------------- answers


def _env_bytes(name: str, default: int) -> int:
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
LARGE = _env_bytes("KBTOOL_MCP_ASCII_FROM", 2 << 20)


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


def as_text(value: str) -> str:
    return value
