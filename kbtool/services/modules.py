"""A stored version's module, parsed, for the front-ends that show its sections (MCP
``list_globals``, ``list_memory_regions``): they call here instead of the wasm reader."""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.wasm import WasmFormatError
from kbtool.wasm.reader import parse_module

__all__ = ["WasmFormatError", "stack_pointer_index", "stored_module"]


def stored_module(conn: sqlite3.Connection, version_id: int) -> Any | None:
    """The parsed :class:`kbtool.wasm.reader.Module` of a version (sections only, no
    per-instruction work), or None when the KB holds no module bytes for it."""
    data = queries.module_bytes(conn, version_id)
    return None if data is None else parse_module(data)


def stack_pointer_index(m: Any) -> int | None:
    """Index of the likely stack pointer: the first defined mutable i32 global with a
    constant initialiser (wasm-ld's ``__stack_pointer``), else None. (The data model's
    role, :mod:`kbtool.services.data`, wins where a version has one.)"""
    for gi, g in enumerate(m.globals):
        if g.mutable and g.valtype == "i32" and not g.imported and isinstance(g.init, int):
            return gi
    return None
