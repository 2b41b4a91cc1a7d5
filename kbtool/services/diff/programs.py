"""Which program each side of a diff belongs to, and the default pair of a version.

Names and identities never cross programs (lineages), so a diff between two programs compares
unrelated code. Every surface that compares versions says so:

- :func:`program_fields` gives ``from_program``, ``to_program`` and, for a cross-program
  pair only, ``warning`` (one sentence), added to every diff report and changelog;
- :func:`default_pair` is the pair a browsing surface opens by default: the selected version
  and its parent, else the previous version of the same program, else the next one; never
  two programs.

Pure reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from kbtool.kb import queries

__all__ = [
    "program_fields",
    "add_program_fields",
    "cross_program_warning",
    "default_pair",
    "CrossProgramError",
]


class CrossProgramError(ValueError):
    """A cross-program pair asked for without saying so (``--cross-program``)."""


def cross_program_warning(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """The warning sentence for versions ``a`` and ``b`` (``id``, ``program``), or None when
    they belong to the same program."""
    if a["program"] == b["program"]:
        return None
    return (
        f"versions {a['id']} ({a['program']}) and {b['id']} ({b['program']}) belong to different"
        " programs: names are not carried between programs; this diff compares unrelated code"
    )


def program_fields(conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any]:
    """``{"from_program", "to_program"}`` plus ``"warning"`` when they differ.

    Raises :class:`kbtool.kb.errors.UnknownVersionError` for an unknown id."""
    va, vb = queries.get_version(conn, a), queries.get_version(conn, b)
    out: dict[str, Any] = {"from_program": va["program"], "to_program": vb["program"]}
    warning = cross_program_warning(va, vb)
    if warning is not None:
        out["warning"] = warning
    return out


def add_program_fields(conn: sqlite3.Connection, answer: dict[str, Any]) -> dict[str, Any]:
    """Set the program fields of a report or changelog (``from_version_id``/``to_version_id``)
    in place, dropping a stale ``warning``; returns it."""
    answer.pop("warning", None)
    answer.update(
        program_fields(conn, int(answer["from_version_id"]), int(answer["to_version_id"]))
    )
    return answer


def default_pair(
    versions: Iterable[Mapping[str, Any]], selected: int | None
) -> tuple[int, int] | None:
    """``(from, to)`` to open by default for the ``selected`` version (else the latest).

    ``versions``: rows with ``id``, ``program`` and ``parent_version_id`` (``list_versions``).
    The parent when the version has one (and it is of the same program); else the previous
    version of the same program; for the first version of its program, that version and the
    next one of the program. None when the program has a single version: no pair of one
    program exists, and two programs are never paired by default.
    """
    rows = sorted(versions, key=lambda v: v["id"])
    if not rows:
        return None
    by_id = {v["id"]: v for v in rows}
    cur = by_id.get(selected) if selected is not None else None
    if cur is None:
        cur = rows[-1]
    parent = by_id.get(cur.get("parent_version_id"))
    if parent is not None and parent["program"] == cur["program"] and parent["id"] != cur["id"]:
        return parent["id"], cur["id"]
    same = [v["id"] for v in rows if v["program"] == cur["program"]]
    pos = same.index(cur["id"])
    if pos > 0:
        return same[pos - 1], cur["id"]
    if len(same) > 1:
        return cur["id"], same[1]
    return None
