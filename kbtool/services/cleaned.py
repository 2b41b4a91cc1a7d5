"""One function's cleaned C (``kbtool code V I --cleaned``): the deep record's when
``kbtool deep`` has one for the function, else the lifter's C (KB names, knowledge) through
the cleaner :func:`kbtool.lift.clean.clean_c` (variables renamed from their roles)."""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.lift.clean import clean_c
from kbtool.services import code as code_service
from kbtool.services.deep import _stack_globals, _struct_params


def cleaned_c(conn: sqlite3.Connection, version_id: int, func_index: int) -> dict[str, Any]:
    """``{version_id, func_index, stable_id, name, type, provenance, clean_c, source,
    source_version_id, rename_map, roles, truncated}``; ``source`` is ``"deep"`` (the stored
    record, written for ``source_version_id``) or ``"cleaner"`` (cleaned now)."""
    d = code_service.disassembly(conn, version_id, func_index)
    out: dict[str, Any] = {
        k: d[k]
        for k in (
            "version_id",
            "func_index",
            "stable_id",
            "name",
            "type",
            "provenance",
            "truncated",
        )
    }
    rec = queries.get_analysis(conn, d["stable_id"]) if d["stable_id"] else None
    if rec is not None and rec.get("clean_c"):
        out.update(
            clean_c=rec["clean_c"],
            source="deep",
            source_version_id=rec["version_id"],
            rename_map=dict(rec.get("rename_map") or {}),
            roles={},
        )
        return out
    lm = code_service.code_module(conn, version_id).lm
    structs = _struct_params(conn, version_id).get(func_index)
    res = clean_c(d["lifted_c"], stack_globals=_stack_globals(lm), struct_params=structs)
    out.update(
        clean_c=res.text,
        source="cleaner",
        source_version_id=version_id,
        rename_map=res.rename_map,
        roles=res.roles,
    )
    return out
