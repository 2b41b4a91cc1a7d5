"""The rows a new version's ingest writes, made from the decoder's facts (issue #30).

The facts and call edges need no stable id (a later ingest writes them while the matcher's
child runs: :mod:`kbtool.services.ingest_match`); the function rows do.
"""

from __future__ import annotations

import json
from typing import Any

from kbtool.kb import store
from kbtool.wasm.facts import edge_values

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


def fact_rows(
    vid, funcs, table_slots_of, side=None, *, flat_edges: bool = False
) -> tuple[list[tuple], list]:
    """The version's facts and call-edge rows (tuples of :data:`FACT_COLUMNS` and
    :data:`EDGE_COLUMNS`; ``table_slots_of``: :func:`kbtool.identity.records.table_slots`):
    they need no stable id, so a later ingest writes them while the matcher's child runs.
    ``side``: the decoder's texts of ``funcs`` (:attr:`kbtool.wasm.facts.ModuleAnalysis.side`,
    per defined function: the same JSON texts as ``dumps`` of ``mem_ops`` / ``calls``, and the
    distinct callees), or None (then made here). ``flat_edges``: the call edges instead as
    one list ``[callee, caller, ...]`` in (callee, caller) order
    (:func:`kbtool.kb.store.insert_call_edge_pairs`), from the decoder's callees by its
    compiled counting sort when ``side`` is its whole list: no tuple per edge."""
    slots_of = table_slots_of.get
    xrows: list[tuple] = []
    erows: list[tuple] = []
    dumps = store.dumps  # (called only for a non-empty list: many are empty)
    n = len(funcs)
    nimp = n - len(side[0]) if side is not None else 0
    if side is not None and not (0 <= nimp and (n == 0 or funcs[-1].index == n - 1)):
        side = None  # (not the decoder's list of every function, in index order)
    whole = flat_edges and side is not None  # (the edges by the decoder's counting sort)
    for f in funcs:
        i = f.index
        slots = slots_of(i)
        if side is not None and i >= nimp:
            mem_text = side[0][i - nimp]
            calls_text = side[1][i - nimp]
            callees = side[2][i - nimp]
        else:
            mem_text = dumps(f.mem_ops) if f.mem_ops else "[]"
            calls_text = dumps(f.calls) if f.calls else "[]"
            callees = set(f.calls) if f.calls else ()
        xrows.append(
            (
                vid,
                i,
                calls_text,
                f.call_indirect,
                dumps(f.ref_funcs) if f.ref_funcs else "[]",
                dumps(f.consts) if f.consts else "[]",
                dumps(f.strings) if f.strings else "[]",
                dumps(f.globals_used) if f.globals_used else "[]",
                mem_text,
                f.atomic_sites,
                f.loops,
                bytes(f.ops),
                dumps(slots) if slots else "[]",
            )
        )
        if callees and not whole:
            erows.extend([(vid, i, c) for c in callees])
    if not flat_edges:
        return xrows, erows
    if whole:
        return xrows, edge_values(side[2], nimp)
    pairs = sorted([(c, i) for _, i, c in erows])
    return xrows, [v for p in pairs for v in p]


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


def expected_names(funcs, proposals, old_rows, old_names: dict[int, str]) -> dict[int, str]:
    """What :func:`kbtool.kb.queries.function_names` is expected to read for the new version
    once its ingest wrote its rows and names, guessed before the matcher's answer (a later
    ingest builds the data model with it meanwhile; the caller checks the guess after).

    ``proposals``: the binary's names (``(index, name, ...)``: the gate writes them when
    the identity has no name); ``old_rows``/``old_names``: the parent's
    :func:`~kbtool.kb.queries.matching_rows` and names. A function keeps the name of the
    old function it continues, when one is plain (a defined one by a body hash that only it
    has on each side, an import by an import name likewise; the gate keeps an identity's
    name against a binary's of the same provenance and confidence); else the binary's name;
    else SQLite's choice without a name (the import field, the name-section hint)."""
    named = {p[0]: p[1] for p in proposals}
    old_body = _unique((r["body_hash"], r["index"]) for r in old_rows if not r["imported"])
    old_imp = _unique((r["import_name"], r["index"]) for r in old_rows if r["imported"])
    new_body = _unique((f.body_hash, f.index) for f in funcs if not f.imported)
    new_imp = _unique((f"{f.import_module}.{f.import_field}", f.index) for f in funcs if f.imported)
    out: dict[int, str] = {}
    for f in funcs:
        i = f.index
        if f.imported:
            key = f"{f.import_module}.{f.import_field}"
            j = old_imp.get(key) if new_imp.get(key) == i else None
        else:
            j = old_body.get(f.body_hash) if new_body.get(f.body_hash) == i else None
        # the old name first: the gate keeps a name of the same provenance and confidence
        name = (old_names.get(j) if j is not None else None) or named.get(i)
        if not name:
            name = (f.import_field if f.imported else None) or f.raw_name
        if name:
            out[i] = name
    return out


def _unique(pairs) -> dict[Any, int]:
    """``key -> index`` for the keys (not None) only one index has."""
    seen: dict[Any, int] = {}
    dup: set[Any] = set()
    for k, i in pairs:
        if k is None:
            continue
        if k in seen:
            dup.add(k)
        else:
            seen[k] = i
    for k in dup:
        del seen[k]
    return seen


def row_extras(funcs) -> tuple[dict, dict, dict]:
    """What :func:`rows_from_records` needs beside the matcher's records to make
    :func:`matching_rows` (a few hundred KB where the rows pickle to ~29 MB on ffmpeg): the
    imports' hashes (records have none), the name-section and export names, and the calls
    of each function that calls one function more than once (records keep them distinct)."""
    hashes: dict[int, tuple] = {}
    named: dict[int, tuple] = {}
    calls: dict[int, list] = {}
    for f in funcs:
        i = f.index
        if f.imported:
            hashes[i] = (f.body_hash, f.shape_hash)
        if f.raw_name is not None or f.export_names:
            named[i] = (f.raw_name, list(f.export_names) if f.export_names else [])
        c = f.calls
        if c and len(set(c)) != len(c):
            calls[i] = list(c)
    return hashes, named, calls


def rows_from_records(recs, extras: tuple[dict, dict, dict]) -> list[dict[str, Any]]:
    """:func:`matching_rows` of the module ``recs`` were made of (:func:`kbtool.identity.
    records.records_from_analysis`), equal to it, from ``recs`` and :func:`row_extras`."""
    hashes, named, calls = extras
    out: list[dict[str, Any]] = []
    nothing = (None, [])
    for r in recs:
        i = r.index
        imported = r.imported
        bh, sh = hashes[i] if imported else (r.body_hash, r.shape_hash)
        raw, exports = named.get(i, nothing)
        c = calls.get(i)
        out.append(
            {
                "index": i,
                "stable_id": None,
                "imported": imported,
                "import_name": r.import_name,
                "type_sig": r.type_sig,
                "body_hash": bh,
                "shape_hash": sh,
                "raw_name": raw,
                "export_names": list(exports),
                "body_size": r.body_size,
                "instr_count": r.instr_count,
                "calls": list(r.calls) if c is None else list(c),
                "strings": list(r.strings),
                "consts": list(r.consts),
                "ops": r.ops,
                "loops": r.loops,
                "call_indirect": r.call_indirect,
                "table_slots": list(r.table_slots),
            }
        )
    return out
