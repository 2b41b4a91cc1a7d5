"""Shared pieces of the query modules: the version row lookup, the names of functions, caps."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, TypedDict

from kbtool.kb.errors import UnknownVersionError

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import FunctionName


def opcode_names() -> list[str]:
    """The opcode table, imported on first use: importing ``kbtool.wasm`` loads the decoders,
    which a read that never shows an instruction (``kbtool mcp`` start-up) does not need."""
    from kbtool.wasm.opcodes import MNEMONICS

    return MNEMONICS


SEARCH_CAP = 200  # hard cap of any search, whatever the caller asks
LEGACY_PROGRAM = "legacy"  # the program of versions ingested before schema v2 (program_id NULL)


class Version(TypedDict, total=False):
    id: int
    label: str
    toolchain_version: str | None
    functions: int
    shared_memory: bool
    coverage_pct: float
    program: str  # extra fields beyond docs/interface.md's
    parent_version_id: int | None


def version_row(conn: sqlite3.Connection, version_id: int) -> sqlite3.Row:
    row = conn.execute(VERSION_SELECT + " WHERE v.id = ?", (version_id,)).fetchone()
    if row is None:
        raise UnknownVersionError(f"unknown version id {version_id}; {known_versions(conn)}")
    return row


def known_versions(conn: sqlite3.Connection) -> str:
    ids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
    if not ids:
        return "the KB has no versions yet (run `kbtool ingest FILE --label L`)"
    shown = ", ".join(str(i) for i in ids[:20]) + (", ..." if len(ids) > 20 else "")
    return f"known version ids: {shown} (see `kbtool versions`)"


def version_record(row: sqlite3.Row) -> Version:
    return {
        "id": row["id"],
        "label": row["label"],
        "toolchain_version": row["toolchain_version"],
        "functions": row["imported_functions"] + row["defined_functions"],
        "shared_memory": bool(row["shared_memory"]),
        "program": row["program"] or LEGACY_PROGRAM,
        "parent_version_id": row["parent_version_id"],
    }


VERSION_SELECT = (
    "SELECT v.*, p.name AS program FROM versions v LEFT JOIN programs p ON p.id = v.program_id"
)


def names_for(
    conn: sqlite3.Connection, version_id: int, indices: list[int]
) -> dict[int, FunctionName]:
    out: dict[int, FunctionName] = {}
    if not indices:
        return out
    for chunk_start in range(0, len(indices), 500):
        chunk = indices[chunk_start : chunk_start + 500]
        marks = ",".join("?" * len(chunk))
        for i, sid, imp, mod, fld, name, prov in conn.execute(
            "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, s.name, s.provenance"
            " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            f" WHERE f.version_id = ? AND f.idx IN ({marks})",
            (version_id, *chunk),
        ):
            out[i] = {
                "index": i,
                "stable_id": sid,
                "imported": bool(imp),
                "import": f"{mod}.{fld}" if imp else None,
                "name": name,
                "provenance": prov,
            }
    return out
