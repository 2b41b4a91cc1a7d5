"""Matcher records built from stored versions, and the one rule for names a binary carries."""

from __future__ import annotations

from typing import Any

from kbtool.diff.features import is_minified_name, module_is_minified
from kbtool.diff.matcher import FuncRecord


def is_minified(name: str, module_minified: bool = False) -> bool:
    """Minifier output (Emscripten's ``xa``), not a name worth carrying (one rule: the matcher's)."""
    return is_minified_name(name, module_minified=module_minified)


def carried_names(export_names: list[str], raw_name: str | None, module_minified: bool = False) -> tuple[str, ...]:
    """The names a binary carries for a function, minified ones dropped, deduplicated."""
    cand = list(export_names) + ([raw_name] if raw_name else [])
    return tuple(n for n in dict.fromkeys(cand) if not is_minified(n, module_minified))


def records_from_rows(rows: list[dict[str, Any]]) -> list[FuncRecord]:
    """Matcher records of a stored version (rows of :func:`kbtool.kb.queries.matching_rows`)."""
    minified = module_is_minified(n for r in rows for n in r["export_names"])
    return [
        FuncRecord(
            index=row["index"], stable_id=row["stable_id"], imported=row["imported"],
            import_name=row["import_name"], type_sig=row["type_sig"],
            body_hash=None if row["imported"] else row["body_hash"],
            shape_hash=None if row["imported"] else row["shape_hash"],
            names=carried_names(row["export_names"], row["raw_name"], minified),
            calls=tuple(dict.fromkeys(row["calls"])), strings=tuple(row["strings"]),
            consts=tuple(row["consts"]), ops=row["ops"], instr_count=row["instr_count"],
            body_size=row["body_size"], loops=row["loops"], call_indirect=row["call_indirect"],
            table_slots=tuple(row.get("table_slots") or ()),
        )
        for row in rows
    ]


