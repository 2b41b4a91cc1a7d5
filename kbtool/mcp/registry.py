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

import contextvars
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

# the answers' encoder lives below the services, which keep a whole diff's encoded answer
# (:mod:`kbtool.services.diff.answer`); re-exported here for the tools
from kbtool.services.json_answer import LARGE, Encoded, as_json, ascii_json, env_bytes  # noqa: F401

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

#: the longest answer a tool sends (bytes of its JSON string in the JSON-RPC line): the MCP
#: TypeScript SDK's stdio client (Claude Desktop, Claude Code, the Inspector) ends the whole
#: session on a message over 10 MiB, so a bigger whole answer is refused with a one-line
#: error that says how to page; ``KBTOOL_MCP_MAX_ANSWER`` (bytes) for clients without that bound
MAX_ANSWER = env_bytes("KBTOOL_MCP_MAX_ANSWER", 10_000_000)


class AnswerTooLarge(Exception):
    """A tool's answer is longer than :data:`MAX_ANSWER` (the message says how to page)."""


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
        """What the SDK is given for ``value``; :class:`AnswerTooLarge` past :data:`MAX_ANSWER`."""
        from kbtool.mcp import splice

        if isinstance(value, Rendered):
            wire = value.wire()
        else:
            wire = value if self.text else as_json(value)
        size = splice.wire_bytes(wire)
        if size > MAX_ANSWER:
            splice.forget(wire)
            raise AnswerTooLarge(
                f"the whole answer of {self.name} is {size:,} bytes, more than one MCP message"
                f" may carry ({MAX_ANSWER:,}: the TypeScript SDK's stdio client ends the"
                " session past 10 MiB); ask for pages with its offset and limit inputs (its"
                " description says how), or start `kbtool mcp` with"
                " KBTOOL_MCP_MAX_ANSWER=<bytes> for a client without that bound"
            )
        return wire


class Rendered:
    """An answer a tool has already rendered (its JSON text, kept for the next same call),
    or that text kept with its JSON string literal (:class:`json_answer.Encoded`)."""

    __slots__ = ("answer",)

    def __init__(self, answer: str | Encoded) -> None:
        self.answer = answer

    @property
    def text(self) -> str:
        return self.answer if isinstance(self.answer, str) else self.answer.text()

    def wire(self) -> str:
        """What the SDK is given: the text, or a stand-in for a kept literal the stdio guard
        writes in its place (:func:`kbtool.mcp.splice.stand_in_literal`), never decoded."""
        if isinstance(self.answer, str):
            return self.answer
        from kbtool.mcp.splice import stand_in_literal

        token = stand_in_literal(self.answer.literal)
        return self.answer.text() if token is None else token


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


def as_text(value: str) -> str:
    return value
