"""Matcher records: what the matcher knows of each function, built from a fresh module or stored rows.

One builder for each source, one rule for names a binary carries (minified names dropped).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import starmap
from typing import Any

from kbtool.identity.names import is_minified_name, module_is_minified
from kbtool.plainclass import FrozenPlain, Plain


class FuncRecord(Plain):
    """What the matcher knows about one function of one version (a ``@dataclass(slots=True)``
    in behaviour: :mod:`kbtool.plainclass`; no dataclass made at import: a fresh ingest
    imports this module, and :mod:`dataclasses` and :mod:`inspect` with it, for nothing else)."""

    _FIELDS = (
        "index",
        "stable_id",
        "imported",
        "import_name",
        "type_sig",
        "body_hash",
        "shape_hash",
        "names",
        "calls",
        "strings",
        "consts",
        "ops",
        "instr_count",
        "body_size",
        "loops",
        "call_indirect",
        "table_slots",
    )
    __slots__ = _FIELDS

    index: int
    stable_id: str | None
    imported: bool
    import_name: str | None  # "module.field" for imports
    type_sig: str
    body_hash: str | None
    shape_hash: str | None
    names: tuple[str, ...]  # non-minified export names + raw (name-section) name
    calls: tuple[int, ...]  # distinct direct callees, order of first call
    strings: tuple[str, ...]
    consts: tuple[int, ...]
    ops: bytes  # array('H') of op ids
    instr_count: int
    body_size: int
    loops: int
    call_indirect: int
    # positions in the module's element segments (function tables), in segment order; the
    # table is one more ordered "caller" (vtables, API tables), optional
    table_slots: tuple[int, ...]

    def __init__(
        self,
        index: int,
        stable_id: str | None = None,
        imported: bool = False,
        import_name: str | None = None,
        type_sig: str = "",
        body_hash: str | None = None,
        shape_hash: str | None = None,
        names: tuple[str, ...] = (),
        calls: tuple[int, ...] = (),
        strings: tuple[str, ...] = (),
        consts: tuple[int, ...] = (),
        ops: bytes = b"",
        instr_count: int = 0,
        body_size: int = 0,
        loops: int = 0,
        call_indirect: int = 0,
        table_slots: tuple[int, ...] = (),
    ) -> None:
        self.index = index
        self.stable_id = stable_id
        self.imported = imported
        self.import_name = import_name
        self.type_sig = type_sig
        self.body_hash = body_hash
        self.shape_hash = shape_hash
        self.names = names
        self.calls = calls
        self.strings = strings
        self.consts = consts
        self.ops = ops
        self.instr_count = instr_count
        self.body_size = body_size
        self.loops = loops
        self.call_indirect = call_indirect
        self.table_slots = table_slots


class Match(FrozenPlain):
    """One pairing of an old and a new function (a ``@dataclass(frozen=True, slots=True)``
    in behaviour: :mod:`kbtool.plainclass`)."""

    _FIELDS = ("old_index", "new_index", "score", "method", "review")
    __slots__ = _FIELDS

    old_index: int
    new_index: int
    score: float
    method: str  # "import", "body", "shape", "name", "callgraph", "similarity"
    review: bool

    def __init__(
        self, old_index: int, new_index: int, score: float, method: str, review: bool
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "old_index", old_index)
        setattr_(self, "new_index", new_index)
        setattr_(self, "score", score)
        setattr_(self, "method", method)
        setattr_(self, "review", review)


def replace(rec: Any, **changes: Any) -> Any:
    """A copy of a record (:class:`FuncRecord`, :class:`Match`) with ``changes``, as
    ``dataclasses.replace`` made one (an unknown field: ``TypeError``)."""
    return type(rec)(**{f: changes.pop(f, getattr(rec, f)) for f in rec._FIELDS}, **changes)


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
    A later ingest can send them on before it builds record objects of its own (on the
    early match child's path: one comprehension, no call for a function without export
    names, whose carried names are its raw name alone)."""
    funcs = analysis.functions
    minified = module_is_minified(n for f in funcs for n in (f.export_names or ()))
    get_slots = table_slots(analysis).get
    fromkeys = dict.fromkeys
    return [
        (
            f.index,
            None,
            bool(imp),
            f"{f.import_module}.{f.import_field}" if imp else None,
            f.type_sig,
            None if imp else f.body_hash,
            None if imp else f.shape_hash,
            carried_names(list(exp), raw, minified) if exp else ((raw,) if raw else ()),
            tuple(fromkeys(f.calls)),
            tuple(f.strings or ()),
            tuple(f.consts or ()),
            bytes(f.ops or b""),
            f.instr_count or 0,
            f.body_size or 0,
            f.loops or 0,
            f.call_indirect or 0,
            tuple(get_slots(f.index, ())),
        )
        for f in funcs
        for imp, exp, raw in ((f.imported, f.export_names, f.raw_name),)
    ]


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
