"""Types as knowledge (issue 27, types): the value rules of three kinds written through the
gate (:func:`kbtool.kb.gate.upsert_knowledge`), and their reads.

| kind         | target                              | key          | value                                  |
|--------------|-------------------------------------|--------------|----------------------------------------|
| ``type``     | ``struct NAME`` / ``union NAME`` / ``enum NAME`` / ``NAME`` (typedef) | ``''`` | ``{text, kind, name, size, align, fields, ...}`` |
| ``local_type``| function stable_id                 | wasm local index | ``{text}`` (a C type: ``struct sqlite3 *``) |
| ``data_type``| ``d:...`` data_id / ``g:KEY``       | ``''``       | ``{text}``                             |

A type is version-independent (keyed by its name, so every release sees it); an applied type
follows its function (carried with it like a prototype) or its data (by content). The C
parsing lives in :mod:`kbtool.analysis.cdecl` and runs in the services before the gate;
these rules check the stored shape (bounded, names are C identifiers, no control text).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from kbtool.textutil import LazyPattern

TYPE_KINDS: tuple[str, ...] = ("type", "local_type", "data_type")
MAX_TYPE_TEXT = 64 * 1024  # characters of one canonical declaration
MAX_TYPE_NAME = 256
MAX_TYPE_USE = 300  # characters of an applied type (``struct sqlite3 *``)
MAX_FIELDS = 4096
MAX_LOCAL_INDEX = 50_000
RECORD_KINDS = ("struct", "union", "enum", "typedef")

_IDENT = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TYPE_TARGET = LazyPattern(r"(?:(struct|union|enum) )?([A-Za-z_][A-Za-z0-9_]{0,255})\Z")
_USE_CHARS = LazyPattern(r"[A-Za-z0-9_ *\[\](),.]+\Z")
_DECL_CONTROL = LazyPattern(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def type_target(kind: str, name: str) -> str:
    """The knowledge target of a named type: ``struct sqlite3``, or ``sqlite3`` for a typedef."""
    return name if kind == "typedef" else f"{kind} {name}"


def _v_type(key: str, value: dict[str, Any]) -> str | None:
    if key:
        return "invalid type: a type has no key"
    text, kind, name = value.get("text"), value.get("kind"), value.get("name")
    if not isinstance(text, str) or not text.strip():
        return "invalid type: empty declaration"
    if len(text) > MAX_TYPE_TEXT:
        return f"invalid type: declaration longer than {MAX_TYPE_TEXT} characters"
    if _DECL_CONTROL.search(text):
        return "invalid type: control, bidi or invisible characters in the declaration"
    if kind not in RECORD_KINDS:
        return f"invalid type: kind {str(kind)[:20]!r} is not one of {', '.join(RECORD_KINDS)}"
    if not isinstance(name, str) or not _IDENT.match(name) or len(name) > MAX_TYPE_NAME:
        return f"invalid type: name {str(name)[:60]!r} is not a C identifier"
    fields = value.get("fields") or []
    if not isinstance(fields, list) or len(fields) > MAX_FIELDS:
        return f"invalid type: more than {MAX_FIELDS} fields"
    for f in fields:
        if not isinstance(f, dict):
            return "invalid type: a field is not an object"
        n = f.get("name")
        if n is not None and (
            not isinstance(n, str) or not _IDENT.match(n) or len(n) > MAX_TYPE_NAME
        ):
            return f"invalid type: field name {str(n)[:60]!r} is not a C identifier"
        for k in ("offset", "size"):
            v = f.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 31:
                return f"invalid type: field {k} {str(v)[:20]!r} out of range"
    return None


def _use_problem(value: dict[str, Any]) -> str | None:
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        return "invalid type: empty"
    if len(text) > MAX_TYPE_USE:
        return f"invalid type: longer than {MAX_TYPE_USE} characters"
    if not _USE_CHARS.match(text):
        return f"invalid type {text[:60]!r}: a C type name such as 'struct sqlite3 *'"
    return None


def _v_local_type(key: str, value: dict[str, Any]) -> str | None:
    if not key.isdigit() or int(key) > MAX_LOCAL_INDEX:
        return f"invalid local index: {key[:20]!r} is not an index within 0..{MAX_LOCAL_INDEX}"
    return _use_problem(value)


def _v_data_type(key: str, value: dict[str, Any]) -> str | None:
    if key:
        return "invalid data type: no key"
    return _use_problem(value)


VALIDATORS: dict[str, Callable[[str, dict[str, Any]], str | None]] = {
    "type": _v_type,
    "local_type": _v_local_type,
    "data_type": _v_data_type,
}


def validate_target(kind: str, target: str) -> str | None:
    """Why ``target`` cannot name a type (None for the other kinds or a good one)."""
    if kind == "type" and not TYPE_TARGET.match(target):
        return f"invalid type name {target[:60]!r}: struct NAME, union NAME, enum NAME or a typedef NAME"
    return None


# --------------------------------------------------------------------------- reads


def all_types(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every named type of the KB (the ``knowledge`` rows of kind ``type``), by name."""
    from kbtool.kb import knowledge as kn

    return kn.of_kind(conn, "type")


def applied(conn: sqlite3.Connection, kind: str) -> list[dict[str, Any]]:
    """Every applied type of one kind (``local_type`` or ``data_type``)."""
    from kbtool.kb import knowledge as kn

    return kn.of_kind(conn, kind)
