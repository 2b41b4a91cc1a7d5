"""Program lineages: which earlier version a new module descends from, decided before the matcher.

A KB can hold several applications (programs); each version belongs to one. Identities and
names are carried only from the version the new module is most related to, never across
programs. Relatedness is the share of functions two modules have in common by exact body
hash or shape hash, counted on non-trivial functions only (tiny bodies such as ``return 0``
or a libc stub are the same in unrelated modules):

    overlap = |new functions whose body or shape hash occurs in the old version|
              / max(non-trivial functions of new, of old)

Normalising by the larger side keeps a small module that shares only a runtime or libc with
a large one (a Go ``hello`` beside a Go application, two Emscripten builds) apart.
``RELATED_THRESHOLD`` was measured on the corpus (``benchmarks/lineage.py``, figures in
docs/lineage.md): releases of one program overlap at 0.17 (zstd 1.5.2 -O2 vs 1.5.6 -Os) to 1.0,
unrelated modules (zstd, sql.js, lightningcss, onnxruntime) at 0.001 at most; 0.05 sits
between with a wide margin on both sides.

KBs created before schema v2 hold versions without a program: on the first ingest they are
assigned to one program named ``legacy`` (reads show ``legacy`` for them until then).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kbtool.kb import queries, store
from kbtool.kb.errors import KBError

MIN_INSTRS = 8  # functions with fewer instructions do not count towards relatedness
SMALL_MODULE = 16  # ... unless fewer than this many functions are left: then all count
RELATED_THRESHOLD = 0.05  # overlap at or above: same program (measured: see module docstring)
LEGACY_PROGRAM = queries.LEGACY_PROGRAM


class LineageError(KBError):
    """A --program/--base choice that cannot be honoured."""


@dataclass(frozen=True, slots=True)
class HashProfile:
    """The non-trivial functions of one module as (body hash, shape hash) pairs."""

    pairs: tuple[tuple[str | None, str | None], ...]
    bodies: frozenset[str]
    shapes: frozenset[str]

    @property
    def size(self) -> int:
        return len(self.pairs)


def profile(rows: Iterable[tuple[str | None, str | None, int]]) -> HashProfile:
    """Profile from ``(body_hash, shape_hash, instr_count)`` of defined functions."""
    rows = [(b, s, n or 0) for b, s, n in rows if b or s]
    pairs = tuple((b, s) for b, s, n in rows if n >= MIN_INSTRS)
    if len(pairs) < SMALL_MODULE:  # a tiny module: every function counts
        pairs = tuple((b, s) for b, s, _ in rows)
    return HashProfile(
        pairs=pairs,
        bodies=frozenset(b for b, _ in pairs if b),
        shapes=frozenset(s for _, s in pairs if s),
    )


def overlap(new: HashProfile, old: HashProfile) -> float:
    """Share of functions in common (see the module docstring), 0.0..1.0."""
    denom = max(new.size, old.size)
    if not denom:
        return 0.0
    hit = sum(1 for b, s in new.pairs if (b and b in old.bodies) or (s and s in old.shapes))
    return hit / denom


@dataclass(slots=True)
class Lineage:
    """Where a new version goes: its program and the parent it carries from (None: nothing)."""

    program: str
    program_id: int | None
    parent_version_id: int | None
    overlap: float | None
    method: str  # "related", "base", "program", "new-program", "first"
    new_program: bool
    candidates: list[dict[str, Any]] = field(default_factory=list)  # best first, at most 3

    def record(self) -> dict[str, Any]:
        """JSON stored in ``versions.lineage``."""
        return {
            "method": self.method,
            "overlap": _round(self.overlap),
            "threshold": RELATED_THRESHOLD,
            "min_instrs": MIN_INSTRS,
            "candidates": self.candidates,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def program_name_for(stem: str) -> str:
    """A program name from a file name or label: ``zstd-1.5.7.O2.wasm`` -> ``zstd``."""
    base = re.sub(r"\.wasm$", "", stem.strip(), flags=re.I)
    cut = re.split(r"(?:[-_.@ ]v?\d)", base, maxsplit=1)[0].strip("-_. ")
    if not re.search(r"[A-Za-z]", cut):  # a bare version number: keep it whole
        cut = base
    return cut or "program"


def _unique_program_name(conn: sqlite3.Connection, name: str) -> str:
    taken = queries.program_names(conn)
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def choose_lineage(
    conn: sqlite3.Connection,
    new: HashProfile,
    *,
    default_name: str,
    program: str | None = None,
    base: int | None = None,
    same_bytes_as: int | None = None,
) -> Lineage:
    """Decide program and parent for a module with profile ``new`` (reads only; see ``commit``)."""
    versions = queries.lineage_versions(conn)  # id, label, program (name)
    if base is None and program is None and same_bytes_as is not None:
        base = same_bytes_as  # the same module ingested again (--force): its own lineage
    if base is not None:
        row = next((v for v in versions if v["id"] == base), None)
        if row is None:
            raise LineageError(f"--base {base}: no such version (see `kbtool versions`)")
        if program is not None and program != row["program"]:
            raise LineageError(
                f"--base {base} belongs to program {row['program']!r}, not {program!r}"
            )
        ov = overlap(new, profile(queries.hash_rows(conn, base)))
        cand = [{"version_id": base, "label": row["label"], "overlap": _round(ov)}]
        return Lineage(row["program"], row["program_id"], base, ov, "base", False, cand)

    pool = [v for v in versions if program is None or v["program"] == program]
    scored = [(overlap(new, profile(queries.hash_rows(conn, v["id"]))), v["id"], v) for v in pool]
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)  # ties: the latest version
    cands = [
        {"version_id": v["id"], "label": v["label"], "program": v["program"], "overlap": _round(ov)}
        for ov, _, v in scored[:3]
    ]
    if program is not None:
        if not scored:
            return Lineage(program, None, None, None, "new-program", True, cands)
        ov, vid, v = scored[0]
        return Lineage(program, v["program_id"], vid, ov, "program", False, cands)
    if scored and scored[0][0] >= RELATED_THRESHOLD:
        ov, vid, v = scored[0]
        return Lineage(v["program"], v["program_id"], vid, ov, "related", False, cands)
    best = scored[0][0] if scored else None
    name = _unique_program_name(conn, program_name_for(default_name))
    return Lineage(name, None, None, best, "new-program" if versions else "first", True, cands)


def commit(conn: sqlite3.Connection, lineage: Lineage) -> int:
    """Create the program when new (and adopt pre-v2 versions); return its id."""
    if queries.has_versions_without_program(conn):
        store.assign_legacy_program(conn, store.ensure_program(conn, LEGACY_PROGRAM))
    if lineage.program_id is None:
        lineage.program_id = store.ensure_program(conn, lineage.program)
    return lineage.program_id


def describe(lineage: Lineage) -> str:
    """One line for the ingest summary."""
    pct = "" if lineage.overlap is None else f"{lineage.overlap:.1%}"
    if lineage.method == "first":
        return f"program {lineage.program} (new: first version of the KB)"
    if lineage.new_program:
        why = (
            f"best overlap {pct} with any version, under {RELATED_THRESHOLD:.0%}"
            if lineage.overlap is not None
            else "no earlier version of it"
        )
        return f"program {lineage.program} (new: {why}); nothing carried from other programs"
    how = {"related": "most related version", "base": "--base", "program": "--program"}[
        lineage.method
    ]
    low = lineage.overlap is not None and lineage.overlap < RELATED_THRESHOLD
    return (
        f"program {lineage.program}: parent version {lineage.parent_version_id} "
        f"({how}, overlap {pct})"
        + (f"; warning: under the {RELATED_THRESHOLD:.0%} of related modules" if low else "")
    )
