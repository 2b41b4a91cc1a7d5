"""The HTTP vocabulary of the web routes: the error a handler raises, the route rule, and
the parsers of ids and query parameters (each malformed value is a 400 with one line).
The route modules (:mod:`kbtool.web.router`, ``code_routes``, ``data_routes``,
``types_routes``) import from here, never from each other."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_SQLITE_INT = 2**63 - 1
_INT = re.compile(r"[0-9]{1,19}\Z")
_STABLE_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}\Z")

Query = Mapping[str, Sequence[str]]
Response = tuple[int, str, bytes]
Handler = Callable[[sqlite3.Connection, dict[str, str], Query], Any]


class HTTPError(Exception):
    """An answer with a status and a one-line ``error`` message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


#: whether one request of a route computes (CPU, memory), from its query
Cost = Callable[[Query], bool]


class Kept:
    """A handler's answer made from a cache's object ``anchor``, which the cache hands out
    unchanged (never changed in place) until it replaces it with a new one: the router keeps
    the answer's encoded bytes, by ``anchor`` and ``tag``, while the same anchor comes back.
    ``make`` builds the answer (called only when its bytes are not kept)."""

    __slots__ = ("anchor", "tag", "make")

    def __init__(self, anchor: object, tag: str, make: Callable[[], Any]) -> None:
        self.anchor = anchor
        self.tag = tag
        self.make = make


@dataclass(frozen=True)
class Route:
    pattern: re.Pattern[str]
    handler: Handler
    # computes (CPU, memory): the app bounds how many run at once; a function of the query
    # when only some requests of the route do (a first screen of lines is cheap, C is not)
    expensive: bool | Cost = False
    needs_kb: bool = True

    def costly(self, query: Query) -> bool:
        """Whether this request takes one of the app's expensive slots."""
        return self.expensive(query) if callable(self.expensive) else bool(self.expensive)


def rule(
    pattern: str, handler: Handler, *, expensive: bool | Cost = False, needs_kb: bool = True
) -> Route:
    """A route: ``pattern`` matches the whole path (named groups become the params)."""
    return Route(re.compile(pattern + r"\Z"), handler, expensive, needs_kb)


def clip(text: str | None, width: int = 60) -> str:
    text = text or ""
    return text if len(text) <= width else text[: width - 1] + "…"


def version_id(text: str, what: str = "version id") -> int:
    """A version id from a path segment or query value; 400 when malformed."""
    if not _INT.match(text or "") or int(text) > MAX_SQLITE_INT:
        raise HTTPError(400, f"malformed {what} {clip(text)!r}: expected a non-negative integer")
    return int(text)


def stable_id(text: str) -> str:
    """A stable id from a path segment; 400 when malformed."""
    if not _STABLE_ID.match(text or ""):
        raise HTTPError(
            400,
            f"malformed stable_id {clip(text)!r}: expected letters, digits, '_', '.', ':' or '-'",
        )
    return text


def one(query: Query, name: str) -> str | None:
    """The first value of a query parameter, or None when absent."""
    values = query.get(name)
    if not values:
        return None
    return values[0]
