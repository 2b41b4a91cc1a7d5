"""Matcher records: what the matcher knows of each function, built from a fresh module or stored rows.

One builder for each source, one rule for names a binary carries (minified names dropped).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import starmap
from typing import Any

from kbtool.identity.names import is_minified_name, module_is_minified


@dataclass(slots=True)
class FuncRecord:
    """What the matcher knows about one function of one version."""

    index: int
    stable_id: str | None = None
    imported: bool = False
    import_name: str | None = None  # "module.field" for imports
    type_sig: str = ""
    body_hash: str | None = None
    shape_hash: str | None = None
    names: tuple[str, ...] = ()  # non-minified export names + raw (name-section) name
    calls: tuple[int, ...] = ()  # distinct direct callees, order of first call
    strings: tuple[str, ...] = ()
    consts: tuple[int, ...] = ()
    ops: bytes = b""  # array('H') of op ids
    instr_count: int = 0
    body_size: int = 0
    loops: int = 0
    call_indirect: int = 0
    # positions in the module's element segments (function tables), in segment order; the
    # table is one more ordered "caller" (vtables, API tables), optional
    table_slots: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Match:
    """One pairing of an old and a new function."""

    old_index: int
    new_index: int
    score: float
    method: str  # "import", "body", "shape", "name", "callgraph", "similarity"
    review: bool


# --------------------------------------------------------------------------- records


def records_from_analysis(analysis, stable_ids: dict[int, str] | None = None) -> list[FuncRecord]:
    """FuncRecords of every function (imports first) of a ``kbtool.wasm.ModuleAnalysis``
    (:func:`record_rows` made into records; ``stable_ids``: index -> stable id, else None).

    ``names`` keeps the export names the binary carries minus minified ones (length <= 2,
    ``$a``; in a module whose exports are mostly minified, also three-character identifiers),
    and the name-section name whatever its length.
    """
    rows = record_rows(analysis)
    if stable_ids:
        get = stable_ids.get
        return [FuncRecord(r[0], get(r[0]), *r[2:]) for r in rows]
    return list(starmap(FuncRecord, rows))


def record_rows(analysis) -> list[tuple]:
    """The FuncRecords of :func:`records_from_analysis` as tuples of their field values in
    ``fields(FuncRecord)`` order (``stable_id`` None): ``FuncRecord(*row)`` is the record.
    A later ingest can send them on before it builds record objects of its own."""
    funcs = analysis.functions
    minified = module_is_minified(n for f in funcs for n in (f.export_names or ()))
    slots = table_slots(analysis)
    out: list[tuple] = []
    for f in funcs:
        names = carried_names(list(f.export_names or ()), f.raw_name, minified)
        if f.imported:
            imp = f"{f.import_module}.{f.import_field}"
        else:
            imp = None
        out.append(
            (
                f.index,
                None,
                bool(f.imported),
                imp,
                f.type_sig,
                None if f.imported else f.body_hash,
                None if f.imported else f.shape_hash,
                names,
                tuple(dict.fromkeys(f.calls)),
                tuple(f.strings or ()),
                tuple(f.consts or ()),
                bytes(f.ops or b""),
                f.instr_count or 0,
                f.body_size or 0,
                f.loops or 0,
                f.call_indirect or 0,
                tuple(slots.get(f.index, ())),
            )
        )
    return out


def table_slots(analysis) -> dict[int, list[int]]:
    """Function index -> its positions in the module's element segments, in segment order
    (:attr:`FuncRecord.table_slots`; ingest stores them without building records when no
    earlier version is matched)."""
    slots: dict[int, list[int]] = defaultdict(list)
    pos = 0
    for seg in getattr(getattr(analysis, "module", None), "elements", None) or ():
        for fi in getattr(seg, "func_indices", None) or ():
            if fi is not None:
                slots[fi].append(pos)
            pos += 1
    return slots


def is_minified(name: str, module_minified: bool = False) -> bool:
    """Minifier output (Emscripten's ``xa``), not a name worth carrying (one rule: the matcher's)."""
    return is_minified_name(name, module_minified=module_minified)


def carried_names(
    export_names: list[str], raw_name: str | None, module_minified: bool = False
) -> tuple[str, ...]:
    """The names a binary carries for a function, deduplicated: export names minus minified
    ones, and the name-section name whatever its length (the minified rule is for exports)."""
    cand = [n for n in export_names if not is_minified(n, module_minified)]
    if raw_name:
        cand.append(raw_name)
    return tuple(dict.fromkeys(cand))


def records_from_rows(rows: list[dict[str, Any]]) -> list[FuncRecord]:
    """Matcher records of a stored version (rows of :func:`kbtool.kb.queries.matching_rows`).

    One comprehension with the fields in order (no keyword call per record, no call for a
    function without export names: its carried names are its raw name alone)."""
    minified = module_is_minified(n for r in rows for n in r["export_names"])
    fromkeys = dict.fromkeys
    return [
        FuncRecord(
            row["index"],
            row["stable_id"],
            imp,
            row["import_name"],
            row["type_sig"],
            None if imp else row["body_hash"],
            None if imp else row["shape_hash"],
            carried_names(exp, raw, minified) if exp else ((raw,) if raw else ()),
            tuple(fromkeys(row["calls"])),
            tuple(row["strings"]),
            tuple(row["consts"]),
            row["ops"],
            row["instr_count"],
            row["body_size"],
            row["loops"],
            row["call_indirect"],
            tuple(row.get("table_slots") or ()),
        )
        for row in rows
        for imp, exp, raw in ((row["imported"], row["export_names"], row["raw_name"]),)
    ]
