"""Oracle: reference modules that carry names, and naming a version's functions from them.

    add_oracle(conn, path, label=None)       store a reference module (name section or exports)
    list_oracles(conn)                       the stored references
    match_oracle(conn, version_id, ...)      name functions of a version, through the gate

A reference is a build of the same code that kept its names: a libc/runtime built with a
name section (``libc-ref.wasm``), or a named build of an older release of the application.
Matching, for each reference (oldest first):

1. **exact**: the normalised shape hash is unique among the reference's named functions
   (or all of its functions of that shape share one name) and unique in the version:
   confidence 1.0, except for trivial bodies (fewer than :data:`TRIVIAL_INSTR` instructions:
   getters, thunks, `return 0`) and shapes several reference functions share: those match by
   accident (Ghidra FunctionID's lesson), so they get :data:`TRIVIAL_CONFIDENCE`;
2. **structural**: the diff matcher (:func:`kbtool.identity.matcher.match_functions`, fuzzy)
   pairs the rest; a pair the matcher flags for review, or one below
   :data:`MIN_STRUCTURAL_SCORE`, is skipped (an oracle name outranks agent and carried
   names, so it must be sure); confidence = the match score.

Every write is ``upsert_symbol(..., provenance="oracle")`` with the evidence ``{source:
"oracle", oracle: label, oracle_id, oracle_index, method, score, runtime}``. ``runtime`` is
true when the reference is a runtime library: its label says so (``libc``, ``musl``,
``compiler-rt``, ``dlmalloc``, ``emscripten``...), or at least half of its named functions
have runtime names (:mod:`kbtool.analysis.runtime`). The diff report marks functions named
from a runtime reference as ``runtime``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbtool.analysis.runtime import is_runtime_label, is_runtime_name
from kbtool.identity.matcher import REVIEW_SCORE, MatchStats, match_functions
from kbtool.identity.records import records_from_analysis, records_from_rows
from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbol
from kbtool.services.inputs import read_input
from kbtool.wasm import WasmFormatError, analyze_module

__all__ = ["OracleError", "add_oracle", "list_oracles", "match_oracle", "MIN_STRUCTURAL_SCORE"]

MIN_STRUCTURAL_SCORE = REVIEW_SCORE
TRIVIAL_INSTR = 12  # bodies this small match other code by accident
TRIVIAL_CONFIDENCE = 0.6  # an exact match of a trivial or shared shape
ACTOR = "oracle"


class OracleError(KBError):
    """A reference module cannot be stored or used."""


def _analyze(data: bytes, what: str):

    try:
        return analyze_module(data)
    except WasmFormatError as exc:
        raise OracleError(f"{what} is not a valid WebAssembly module: {exc}") from None


def _names(analysis) -> dict[int, str]:
    """Defined function index -> the reference's name for it (name section, else an export)."""
    recs = records_from_analysis(analysis)
    out: dict[int, str] = {}
    for f, r in zip(analysis.functions, recs, strict=True):
        if f.imported:
            continue
        if f.raw_name and f.raw_name in r.names:
            out[f.index] = f.raw_name
        elif r.names:
            out[f.index] = r.names[0]
    return out


def _is_runtime_module(label: str, names: dict[int, str]) -> bool:
    if is_runtime_label(label):
        return True
    if not names:
        return False
    rt = sum(1 for n in names.values() if is_runtime_name(n))
    return rt * 2 >= len(names)


def add_oracle(
    conn: sqlite3.Connection, path: str | Path, *, label: str | None = None
) -> dict[str, Any]:
    """Store the reference module at ``path``; it must carry names (name section or exports)."""
    p = Path(path)
    if not p.exists():
        raise OracleError(f"no such file: {p}")
    if p.is_dir():
        raise OracleError(f"{p} is a directory, not a wasm module")
    data = read_input(p, "wasm")  # at most KBTOOL_MAX_WASM_BYTES (1 GiB)
    label = label or p.name
    if not label.strip() or any(ord(ch) < 32 for ch in label):
        raise OracleError("invalid label: empty or has control characters")
    analysis = _analyze(data, str(p))
    names = _names(analysis)
    if not names:
        raise OracleError(
            f"{p} carries no function names (no name section, no readable exports): "
            "an oracle needs a reference build that kept its names"
        )
    with transaction(conn):
        if queries.oracle_label_exists(conn, label):
            raise OracleError(
                f"an oracle labelled {label!r} already exists (choose another --label)"
            )
        oid = store.insert_oracle_module(
            conn,
            {
                "label": label,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "source_path": str(p),
                "data": data,
            },
        )
    return {
        "id": oid,
        "label": label,
        "functions": len(analysis.functions),
        "defined": sum(1 for f in analysis.functions if not f.imported),
        "named": len(names),
        "runtime": _is_runtime_module(label, names),
    }


def list_oracles(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return queries.list_oracles(conn)


def _target_records(conn: sqlite3.Connection, version_id: int):
    rows = queries.matching_rows(conn, version_id)
    return rows, records_from_rows(rows)


def match_oracle(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    oracle_ids: list[int] | None = None,
    structural: bool = True,
) -> dict[str, Any]:
    """Name the defined functions of ``version_id`` from the stored references (see module doc).

    Returns ``{version_id, written, refused, unchanged, exact, structural, skipped_review,
    oracles: [{id, label, runtime, exact, structural, written, refused, unchanged,
    skipped_review}]}``; ``exact``/``structural`` count proposals, ``written``/``refused`` the
    gate's decisions (``unchanged``: the same oracle name was already there).
    """
    queries.get_version(conn, version_id)  # UnknownVersionError with the known ids
    refs = queries.oracle_modules(conn)
    if oracle_ids:
        known = {r.id for r in refs}
        missing = [i for i in oracle_ids if i not in known]
        if missing:
            raise OracleError(f"unknown oracle id {missing[0]} (see `kbtool oracle list`)")
        refs = [r for r in refs if r.id in set(oracle_ids)]
    if not refs:
        raise OracleError("no oracle modules stored; add one with `kbtool oracle add REF.wasm`")
    rows, target = _target_records(conn, version_id)
    by_index = {r["index"]: r for r in rows}
    total = {
        "version_id": version_id,
        "written": 0,
        "refused": 0,
        "unchanged": 0,
        "exact": 0,
        "structural": 0,
        "skipped_review": 0,
        "oracles": [],
    }
    for oid, label, data in refs:
        analysis = _analyze(bytes(data), f"oracle {label!r}")
        names = _names(analysis)
        runtime = _is_runtime_module(label, names)
        recs = records_from_analysis(analysis)
        stats = {
            "id": oid,
            "label": label,
            "runtime": runtime,
            "exact": 0,
            "structural": 0,
            "written": 0,
            "refused": 0,
            "unchanged": 0,
            "skipped_review": 0,
        }
        proposals: dict[
            int, tuple[int, float, str, float]
        ] = {}  # target -> (ref idx, conf, method, score)

        # 1. exact shape
        ref_by_shape: dict[str, set[str]] = defaultdict(set)
        ref_idx_by_shape: dict[str, int] = {}
        ref_count: dict[str, int] = defaultdict(int)
        for r in recs:
            if r.imported or not r.shape_hash:
                continue
            ref_by_shape[r.shape_hash].add(names.get(r.index, ""))
            ref_idx_by_shape.setdefault(r.shape_hash, r.index)
            ref_count[r.shape_hash] += 1
        ref_by_index = {r.index: r for r in recs}

        def exact_confidence(
            ref_index: int, ref_by_index=ref_by_index, ref_count=ref_count
        ) -> tuple[float, str]:
            r = ref_by_index[ref_index]
            if r.instr_count < TRIVIAL_INSTR or ref_count.get(r.shape_hash or "", 0) > 1:
                return TRIVIAL_CONFIDENCE, "shape-trivial"
            return 1.0, "shape"

        tgt_by_shape: dict[str, list[int]] = defaultdict(list)
        for r in target:
            if not r.imported and r.shape_hash:
                tgt_by_shape[r.shape_hash].append(r.index)
        for shape, tidx in tgt_by_shape.items():
            ns = ref_by_shape.get(shape)
            if len(tidx) != 1 or not ns or len(ns) != 1 or "" in ns:
                continue
            conf, method = exact_confidence(ref_idx_by_shape[shape])
            proposals[tidx[0]] = (ref_idx_by_shape[shape], conf, method, 1.0)
            stats["exact"] += 1

        # 2. structural
        if structural:
            mstats: list[MatchStats] = []
            matches = match_functions(recs, target, fuzzy=True, stats=mstats)
            if mstats[0].notes:  # a matcher stage stopped at its work budget (hostile input)
                stats["notes"] = list(mstats[0].notes)
            for m in matches:
                if m.new_index in proposals or by_index[m.new_index]["imported"]:
                    continue
                name = names.get(m.old_index)
                if not name:
                    continue
                if m.method in ("body", "shape") and not m.review:
                    conf, method = exact_confidence(m.old_index)
                    proposals[m.new_index] = (
                        m.old_index,
                        conf,
                        m.method if conf == 1.0 else method,
                        m.score,
                    )
                    stats["exact"] += 1
                    continue
                if m.review or m.score < MIN_STRUCTURAL_SCORE:
                    stats["skipped_review"] += 1
                    continue
                proposals[m.new_index] = (m.old_index, round(m.score, 4), m.method, m.score)
                stats["structural"] += 1

        with transaction(conn):
            for t in sorted(proposals):
                ref_idx, conf, method, score = proposals[t]
                d = upsert_symbol(
                    conn,
                    by_index[t]["stable_id"],
                    names[ref_idx],
                    provenance="oracle",
                    confidence=conf,
                    actor=ACTOR,
                    version_id=version_id,
                    evidence={
                        "source": "oracle",
                        "oracle": label,
                        "oracle_id": oid,
                        "oracle_index": ref_idx,
                        "method": method,
                        "score": round(score, 4),
                        "runtime": runtime,
                    },
                )
                if d["written"]:
                    stats["written"] += 1
                elif d["reason"] == "no change":
                    stats["unchanged"] += 1
                else:
                    stats["refused"] += 1
        for k in ("written", "refused", "unchanged", "exact", "structural", "skipped_review"):
            total[k] += stats[k]
        total["oracles"].append(stats)
    return total
