"""Navigation: parse "go to" queries (``#1031``, ``2:1031``, ``"text``, ``=0x5f3759df``) and
resolve them against the KB. Shared by the CLI, the TUI and the JSON API."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any, NamedTuple

from kbtool.kb import queries
from kbtool.kb.errors import KBError

MAX_QUERY = 256
_INDEX = re.compile(r"#?(\d{1,9})\Z")
_REF = re.compile(r"v?(\d{1,9})[:#](\d{1,9})\Z", re.IGNORECASE)
_INT = re.compile(r"[+-]?(0x[0-9a-f_]+|0o[0-7_]+|0b[01_]+|\d[\d_]*)\Z", re.IGNORECASE)


@dataclass(frozen=True)
class NavQuery:
    """What a search box holds: ``kind`` is ``index``, ``string``, ``const`` or ``name``."""

    kind: str
    text: str
    index: int | None = None
    version_id: int | None = None
    values: tuple[int, ...] = ()


def parse_index(text: str) -> int | None:
    """``#1031`` or ``1031`` -> 1031; anything else -> None."""
    m = _INDEX.match(text.strip())
    return int(m.group(1)) if m else None


class FunctionAddress(NamedTuple):
    """A function spelled by position: ``version_id`` None means the version in view/latest."""

    version_id: int | None
    index: int


def parse_ref(text: str) -> FunctionAddress | None:
    """``2:1031`` / ``v2#1031`` -> (2, 1031); ``#1031`` / ``1031`` -> (None, 1031); else None."""
    text = text.strip()
    m = _REF.match(text)
    if m:
        return FunctionAddress(int(m.group(1)), int(m.group(2)))
    index = parse_index(text)
    return None if index is None else FunctionAddress(None, index)


def parse_const(text: str) -> int:
    """An integer in decimal, hex (``0x``), octal (``0o``) or binary (``0b``); ValueError if not."""
    t = text.strip()
    if not _INT.match(t):
        raise ValueError(f"not an integer constant: {t[:40]!r} (try 42, -1 or 0x5f3759df)")
    return int(t.replace("_", ""), 0)


def const_values(value: int) -> tuple[int, ...]:
    """Spellings of ``value`` as the KB may store it: itself, and its signed/unsigned twins as an
    i32 and an i64 (``0xffffffff`` is stored as ``-1`` when it came from ``i32.const -1``)."""
    out = {value}
    for bits in (32, 64):
        mod = 1 << bits
        if -(mod >> 1) <= value < mod:
            unsigned = value % mod
            out.add(unsigned)
            out.add(unsigned - mod if unsigned >= mod >> 1 else unsigned)
    return tuple(sorted(v for v in out if -(1 << 63) <= v < (1 << 63)))  # SQLite's integers


def classify(text: str) -> NavQuery:
    """A TUI search box's text: ``#12``/``12``/``2:12`` index, ``"text`` string, ``=N`` const,
    otherwise a name (or stable_id prefix)."""
    t = text.strip()
    if t.startswith('"'):
        return NavQuery("string", t[1:].rstrip('"') if len(t) > 1 else "")
    if t.startswith("="):
        try:
            value = parse_const(t[1:])
        except ValueError:
            return NavQuery("const", t[1:])
        return NavQuery("const", t[1:], values=const_values(value))
    ref = parse_ref(t)
    if ref is not None:
        return NavQuery("index", t, index=ref.index, version_id=ref.version_id)
    return NavQuery("name", t)


def default_version(conn: sqlite3.Connection, version_id: int | None) -> int | None:
    """``version_id`` itself (checked), else the latest version; None for an empty KB."""
    if version_id is not None:
        queries.get_version(conn, version_id)
        return version_id
    return queries.latest_version_id(conn)


def function_at(
    conn: sqlite3.Connection, index: int, version_id: int | None = None
) -> dict[str, Any] | None:
    """The function at ``index`` of ``version_id`` (default: latest), or None."""
    vid = default_version(conn, version_id)
    return None if vid is None else queries.function_at_index(conn, vid, index)


def by_string(
    conn: sqlite3.Connection, text: str, version_id: int | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Functions of a version (default: latest) referencing a string containing ``text``."""
    vid = default_version(conn, version_id)
    if vid is None or not text:
        return []
    return queries.functions_with_string(conn, vid, text, limit=limit)


def by_const(
    conn: sqlite3.Connection, value: int, version_id: int | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Functions of a version (default: latest) using the integer constant ``value``."""
    vid = default_version(conn, version_id)
    if vid is None:
        return []
    return queries.functions_with_const(conn, vid, list(const_values(value)), limit=limit)


def string_xrefs(
    conn: sqlite3.Connection,
    version_id: int,
    index: int,
    strings: list[str],
    per_string: int = 8,
    max_strings: int = 6,
) -> list[tuple[str, list[dict[str, Any]], bool]]:
    """For each of the first ``max_strings`` strings: other functions referencing it (bounded),
    and whether the list was cut. Strings no other function uses are left out."""
    out = []
    for s in list(dict.fromkeys(strings))[:max_strings]:
        rows = queries.functions_referencing_string(conn, version_id, s, limit=per_string + 2)
        others = [r for r in rows if r["index"] != index]
        if others:
            out.append((s, others[:per_string], len(others) > per_string))
    return out


def located(
    conn: sqlite3.Connection, text: str, version_id: int | None, limit: int = 20
) -> list[dict[str, Any]]:
    """Hits for a search box's ``text`` when it is an index (``#1031``, ``2:1031``), a string
    (``"text``) or a constant (``=0x10``), in ``version_id`` (default latest); [] for a name
    (names are the caller's ``queries.search_symbols``) or an unknown version."""
    q = classify(text)
    try:
        if q.kind == "index" and q.index is not None:
            hit = function_at(conn, q.index, q.version_id or version_id)
            return [hit] if hit is not None else []
        if q.kind == "string":
            return by_string(conn, q.text, version_id, limit=limit)
        if q.kind == "const" and q.values:
            vid = default_version(conn, version_id)
            return (
                []
                if vid is None
                else queries.functions_with_const(conn, vid, list(q.values), limit)
            )
    except KBError:
        return []
    return []
