"""Annotation records (symbols) of logical functions, and the rows of an export."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.queries._base import version_row

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import ExportRow, IndexAnnotation, Symbol


def _symbol(row: sqlite3.Row) -> Symbol:
    return {
        "stable_id": row["stable_id"],
        "name": row["name"],
        "summary": row["summary"],
        "type_signature": row["type_signature"],
        "provenance": row["provenance"],
        "confidence": row["confidence"],
        "locked": bool(row["locked"]),
        "evidence": json.loads(row["evidence"] or "[]"),
        "version_id": row["version_id"],
        "updated_at": row["updated_at"],
    }


def get_symbol(conn: sqlite3.Connection, stable_id: str) -> Symbol | None:
    """The annotation record of a logical function, or None when it has none."""
    row = conn.execute("SELECT * FROM symbols WHERE stable_id = ?", (stable_id,)).fetchone()
    return _symbol(row) if row else None


def stable_id_exists(conn: sqlite3.Connection, stable_id: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM functions WHERE stable_id = ? LIMIT 1", (stable_id,)).fetchone()
        is not None
    )


def require_stable_id(conn: sqlite3.Connection, stable_id: str) -> None:
    if not stable_id_exists(conn, stable_id):
        raise UnknownStableIdError(
            f"unknown stable_id {stable_id!r} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )


def export_rows(conn: sqlite3.Connection, version_id: int) -> list[ExportRow]:
    """Every function of a version in index order with its annotation and the hashes a name
    needs to find its function in another KB (text format: kbtool.services.names_io)."""
    version_row(conn, version_id)
    return [
        {
            "index": idx,
            "stable_id": sid,
            "type": typ,
            "name": name,
            "provenance": prov,
            "confidence": conf,
            "summary": summary,
            "body_hash": bh,
            "shape_hash": sh,
            "instr_count": n,
            "imported": bool(imp),
        }
        for idx, sid, typ, name, prov, conf, summary, bh, sh, n, imp in conn.execute(
            "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence, s.summary,"
            " f.body_hash, f.shape_hash, f.instr_count, f.imported"
            " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? ORDER BY f.idx",
            (version_id,),
        )
    ]


def diff_annotation_rows(
    conn: sqlite3.Connection, version_id: int
) -> list[tuple[int, str, str | None, float | None, str | None]]:
    """``(idx, name, provenance, confidence, evidence)`` of a version's named functions, as
    :func:`annotations_by_index` reads them (the same rows, in the same order), with the
    evidence's JSON text only where the provenance is ``oracle`` (else None): all the diff
    report's runtime flag reads of it (:func:`kbtool.services.diff.rejoin.version_annotations`;
    every other evidence was parsed to be dropped)."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT f.idx, s.name, s.provenance, s.confidence,"
            " CASE WHEN s.provenance = 'oracle' THEN s.evidence END"
            " FROM functions f JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? AND s.name IS NOT NULL",
            (version_id,),
        )
    ]


def annotations_by_index(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    defined_only: bool = False,
    with_evidence: bool = False,
) -> dict[int, IndexAnnotation]:
    """index -> {name, summary, provenance, confidence[, evidence]} for a version's named functions."""
    out: dict[int, IndexAnnotation] = {}
    for idx, name, summary, prov, conf, ev in conn.execute(
        "SELECT f.idx, s.name, s.summary, s.provenance, s.confidence, "
        + ("s.evidence" if with_evidence else "NULL")
        + " FROM functions f JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND s.name IS NOT NULL"
        + (" AND f.imported = 0" if defined_only else ""),
        (version_id,),
    ):
        rec: IndexAnnotation = {
            "name": name,
            "summary": summary,
            "provenance": prov,
            "confidence": conf,
        }
        if with_evidence:
            try:
                rec["evidence"] = json.loads(ev or "[]")
            except ValueError:
                rec["evidence"] = []
        out[idx] = rec
    return out
