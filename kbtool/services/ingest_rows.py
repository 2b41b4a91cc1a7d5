"""The rows a new version's ingest writes, made from the decoder's facts (issue #30).

The facts and call edges need no stable id (a later ingest writes them while the matcher's
child runs: :mod:`kbtool.services.ingest_match`); the function rows do.
"""

from __future__ import annotations

import json
from typing import Any

from kbtool.kb import store

# the columns of ingest's rows, in the order function_rows and fact_rows build their values
FUNCTION_COLUMNS = (
    "version_id",
    "idx",
    "stable_id",
    "imported",
    "import_module",
    "import_field",
    "type_sig",
    "body_hash",
    "shape_hash",
    "body_offset",
    "body_size",
    "instr_count",
    "raw_name",
    "export_names",
    "is_exported",
    "prev_index",
    "match_method",
    "match_score",
    "body_changed",
)
FACT_COLUMNS = (
    "version_id",
    "idx",
    "calls",
    "call_indirect",
    "ref_funcs",
    "consts",
    "strings",
    "globals_used",
    "mem_ops",
    "atomic_sites",
    "loops",
    "ops",
    "table_slots",
)
EDGE_COLUMNS = ("version_id", "caller", "callee")


def function_rows(vid, funcs, carried, new_ids) -> tuple[dict[int, str], list[tuple]]:
    """The version's function rows (tuples of :data:`FUNCTION_COLUMNS`) and each index's
    stable id."""
    sid_of: dict[int, str] = {}
    frows: list[tuple] = []
    null = store.NULL  # (binds as NULL without pysqlite's adapter lookup of a None)
    for f in funcs:
        i = f.index
        if i in carried:
            sid, method, score, prev_idx, changed = carried[i]
            if score is None:
                score = null
        else:
            sid, method, score, prev_idx, changed = new_ids[i], "new", null, null, False
        sid_of[i] = sid
        exports = f.export_names
        mod, fld, bh, sh, raw = (
            f.import_module,
            f.import_field,
            f.body_hash,
            f.shape_hash,
            f.raw_name,
        )
        frows.append(
            (
                vid,
                i,
                sid,
                int(f.imported),
                null if mod is None else mod,
                null if fld is None else fld,
                f.type_sig,
                null if bh is None else bh,
                null if sh is None else sh,
                f.body_offset,
                f.body_size,
                f.instr_count,
                null if raw is None else raw,
                json.dumps(list(exports)) if exports else "[]",
                int(bool(exports)),
                null if prev_idx is None else prev_idx,
                method,
                score,
                int(changed),
            )
        )
    return sid_of, frows


def fact_rows(vid, funcs, table_slots_of) -> tuple[list[tuple], list[tuple]]:
    """The version's facts and call-edge rows (tuples of :data:`FACT_COLUMNS` and
    :data:`EDGE_COLUMNS`; ``table_slots_of``: :func:`kbtool.identity.records.table_slots`):
    they need no stable id, so a later ingest writes them while the matcher's child runs."""
    slots_of = table_slots_of.get
    xrows: list[tuple] = []
    erows: list[tuple] = []
    dumps = store.dumps  # (called only for a non-empty list: many are empty)
    for f in funcs:
        i = f.index
        slots = slots_of(i)
        xrows.append(
            (
                vid,
                i,
                dumps(f.calls) if f.calls else "[]",
                f.call_indirect,
                dumps(f.ref_funcs) if f.ref_funcs else "[]",
                dumps(f.consts) if f.consts else "[]",
                dumps(f.strings) if f.strings else "[]",
                dumps(f.globals_used) if f.globals_used else "[]",
                dumps(f.mem_ops) if f.mem_ops else "[]",
                f.atomic_sites,
                f.loops,
                bytes(f.ops),
                dumps(slots) if slots else "[]",
            )
        )
        if f.calls:
            erows.extend([(vid, i, c) for c in set(f.calls)])
    return xrows, erows


def matching_rows(funcs, table_slots_of) -> list[dict[str, Any]]:
    """The version's rows as :func:`kbtool.kb.queries.matching_rows` reads them back from
    what :func:`function_rows` and :func:`fact_rows` stored (the same keys in the same
    order, each JSON list as the list it encodes, the flag as a bool), made from the values
    themselves; ``stable_id`` is None until :func:`set_stable_ids` (a later ingest makes
    them while its matcher runs)."""
    slots_of = table_slots_of.get
    out: list[dict[str, Any]] = []
    for f in funcs:
        i = f.index
        imported = bool(f.imported)
        out.append(
            {
                "index": i,
                "stable_id": None,
                "imported": imported,
                "import_name": f"{f.import_module}.{f.import_field}" if imported else None,
                "type_sig": f.type_sig,
                "body_hash": f.body_hash,
                "shape_hash": f.shape_hash,
                "raw_name": f.raw_name,
                "export_names": list(f.export_names) if f.export_names else [],
                "body_size": f.body_size,
                "instr_count": f.instr_count,
                "calls": list(f.calls) if f.calls else [],
                "strings": list(f.strings) if f.strings else [],
                "consts": list(f.consts) if f.consts else [],
                "ops": bytes(f.ops),
                "loops": f.loops,
                "call_indirect": f.call_indirect,
                "table_slots": list(slots_of(i) or ()),
            }
        )
    return out


def set_stable_ids(rows: list[dict[str, Any]], sid_of: dict[int, str]) -> list[dict[str, Any]]:
    """``rows`` (:func:`matching_rows`) with each index's stable id; the same list."""
    for r in rows:
        r["stable_id"] = sid_of[r["index"]]
    return rows


def insert_version(
    conn, analysis, data, label, source_path, parent, carried_n, program_id, lineage, sha256
) -> int:
    """The version's ``versions`` row; its id."""
    mod, funcs = analysis.module, analysis.functions
    n_imp = sum(1 for f in funcs if f.imported)
    return store.insert_version(
        conn,
        {
            "label": label,
            "sha256": sha256,
            "size": len(data),
            "toolchain_version": analysis.toolchain_version,
            "shared_memory": int(bool(mod.shared_memory)),
            "imported_functions": n_imp,
            "defined_functions": len(funcs) - n_imp,
            "exported_functions": sum(1 for f in funcs if f.export_names),
            "instructions": sum(f.instr_count for f in funcs),
            "module_name": mod.module_name,
            "producers": json.dumps(mod.producers, sort_keys=True),
            "target_features": json.dumps(list(mod.target_features)),
            "source_path": source_path,
            "parent_version_id": parent,
            "carried": carried_n,
            "program_id": program_id,
            "lineage": json.dumps(lineage.record(), sort_keys=True),
        },
    )
