"""Move an ingested version into another program (``kbtool set-program VERSION PROGRAM``).

Ingest keeps builds of one program at other optimisation levels apart (they share too little
identical code to be joined safely, :func:`kbtool.services.lineage.near_miss`); a person who
knows better moves the version afterwards, as ``ingest --program`` would have placed it:

- the parent is the target program's most related version
  (:func:`kbtool.services.lineage.choose_lineage` with ``program``: method ``program``; an
  empty/new program: ``new-program``, nothing to carry), recorded in the version's lineage
  with ``moved`` = who, when, and where from;
- names and knowledge are carried from the parent through the gate by the same path ingest
  takes (:func:`kbtool.services.lineage.carry_from_parent`: ``diff-carry``, the lowest
  authority, so human, locked, oracle, export and agent names stay) and the pair's diff report
  is stored;
- the version keeps its stable ids (its functions stay the same logical functions: no
  annotation is merged or dropped), so a version that shares stable ids with a version of
  another program is refused (carried names would reach that one too);
- the program it leaves is deleted when no version is left in it (its name is free again);
- the move is recorded as an analysis run (kind ``program``), so the KB's change token
  moves and every cached diff, changelog and prepared code of the KB is stale.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from kbtool.kb import programs as kb_programs
from kbtool.kb import queries, store
from kbtool.kb.db import now, transaction
from kbtool.services import lineage as lineage_svc
from kbtool.services.lineage import LineageError
from kbtool.textutil import printable

__all__ = ["MoveResult", "set_program", "LineageError", "ACTOR"]

ACTOR = "human:cli"


@dataclass(slots=True)
class MoveResult:
    """What ``set_program`` did."""

    version_id: int
    label: str
    from_program: str
    program: str
    new_program: bool  # the program was created by this move
    parent_version_id: int | None
    overlap: float | None
    lineage: dict[str, Any]
    carry: dict[str, Any] | None  # carry counts (None: no parent to carry from)
    dropped_program: bool  # the program left had no other version: deleted


def _check_name(program: str) -> str:
    name = program.strip()
    if not name:
        raise LineageError("the program name is empty")
    if printable(name) != name:
        raise LineageError(f"program name {printable(name)!r} has control characters")
    return name


def set_program(
    conn: sqlite3.Connection,
    version_id: int,
    program: str,
    *,
    create: bool = False,
    carry: bool = True,
    actor: str = ACTOR,
) -> MoveResult:
    """Move version ``version_id`` into ``program`` (created only with ``create``) and carry
    names from that program's most related version (see the module docstring).

    Raises :class:`kbtool.kb.errors.UnknownVersionError` or :class:`LineageError` (one line,
    nothing written) for an unknown version, an unknown program without ``create``, the
    program the version is already in, or a version sharing identities with another program.
    """
    program = _check_name(program)
    # one write transaction from the checks to the carry: a concurrent ingest or move cannot
    # slip in between (a refusal rolls back: nothing written)
    with transaction(conn):
        v = queries.get_version(conn, version_id)
        frm = v["program"]
        if frm == program:
            raise LineageError(
                f"version {version_id} ({printable(v['label'])}) is already in program"
                f" {program!r}: nothing to do"
            )
        target_id = kb_programs.program_id_of(conn, program)
        if target_id is None and not create:
            known = ", ".join(sorted(queries.program_names(conn))) or "none"
            raise LineageError(
                f"unknown program {program!r} (programs: {known}); add --create to start it"
            )
        versions = {r["id"]: r for r in queries.lineage_versions(conn)}
        others = [
            i
            for i in kb_programs.versions_sharing_identities(conn, version_id)
            if versions[i]["program"] != program
        ]
        if others:
            ids = ", ".join(str(i) for i in others[:5]) + (", ..." if len(others) > 5 else "")
            raise LineageError(
                f"version {version_id} shares function identities (hence names) with version(s)"
                f" {ids} of program {versions[others[0]]['program']!r}: moving it alone would"
                " carry names into them; not supported"
            )
        record = queries.lineage_records(conn).get(version_id) or {}
        stored = lineage_svc.stored_rows(conn, version_id, record)
        rows = lineage_svc.ModuleRows(
            stored.rows, tuple(sorted(lineage_svc.parse_ranges(record.get("library"))))
        )
        lin = lineage_svc.choose_lineage(conn, rows, default_name=program, program=program)
        lin_record = {
            **lin.record(),
            "moved": {
                "by": actor,
                "at": now(),
                "from_program": frm,
                "from_parent_version_id": v["parent_version_id"],
                "from_method": record.get("method"),
            },
        }
        pid = lineage_svc.commit(conn, lin)  # creates the program when new
        old_pid = versions[version_id]["program_id"]
        if old_pid is None:  # a pre-v2 version: commit just put it in the legacy program
            old_pid = kb_programs.program_id_of(conn, lineage_svc.LEGACY_PROGRAM)
        kb_programs.move_version(
            conn,
            version_id,
            program_id=pid,
            parent_version_id=lin.parent_version_id,
            lineage=lin_record,
        )
        dropped = old_pid is not None and kb_programs.drop_if_empty(conn, old_pid)
        counts = None
        if lin.parent_version_id is not None:
            counts = lineage_svc.carry_from_parent(
                conn, lin.parent_version_id, version_id, carry=carry
            )
        # the move moves the KB's change token (cached diffs and code of the KB are stale)
        store.record_run(
            conn,
            version_id,
            "program",
            {
                "from_program": frm,
                "program": program,
                "parent_version_id": lin.parent_version_id,
                "by": actor,
                "carry": counts,
                "dropped_program": dropped,
            },
        )
        return MoveResult(
            version_id=version_id,
            label=v["label"],
            from_program=frm,
            program=program,
            new_program=lin.new_program,
            parent_version_id=lin.parent_version_id,
            overlap=lin.overlap,
            lineage=lin_record,
            carry=counts,
            dropped_program=dropped,
        )
