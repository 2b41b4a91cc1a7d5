"""Program lineages: which earlier version a new module descends from, decided before the matcher.

A KB can hold several applications (programs); each version belongs to one. Identities and
names are carried only from the version the new module is most related to, never across
programs. Relatedness is the share of the program's *own* functions two modules have in
common by exact body hash or shape hash:

    overlap = |own functions of new whose body or shape hash occurs among old's own|
              / max(own functions of new, of old)

Own code leaves out what two different programs built with one toolchain share (wasi-libc,
zig's libc, Emscripten's musl and dlmalloc, compiler-rt, Rust std, Go runtime):

- library/runtime functions (:func:`library_functions`): named by the fingerprint
  recognizers (:mod:`kbtool.analysis.recognize`, also the ambiguous ones: every candidate is
  a library name), whose shape is a reference fingerprint's, whose name in the binary (name
  section, exports) is a runtime name, small wrappers of runtime imports
  (:mod:`kbtool.analysis.runtime`), and then every function called only by library code
  (libc's internal helpers; the entry glue ``_start``/``__main_void`` is no source, so
  ``main`` stays the program's). A function whose hash is library code in either module of
  a pair is library code in both.
- tiny bodies (fewer than ``MIN_INSTRS`` instructions) and bodies that occur more than once
  in the module (by body or shape hash): both are the same in unrelated modules.

When fewer than ``SMALL_MODULE`` own functions are left, the tiny ones count too (basis
``own-small``); when none is left at all (a module that is only runtime code), every
non-trivial function counts as before (basis ``all``), and the lineage record says so.
Normalising by the larger side keeps a small module that shares code with a large one apart.
``RELATED_THRESHOLD`` was measured with ``benchmarks/lineage.py`` (figures in
docs/lineage.md) on the shared corpus and on ``benchmarks/programs.py`` (zstd, lua, sqlite,
brotli, lz4, libyaml with clang/zig/emcc at O2/Os/O3).

KBs created before schema v2 hold versions without a program: on the first ingest they are
assigned to one program named ``legacy`` (reads show ``legacy`` for them until then).
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from kbtool.analysis.fingerprints import FingerprintDB, default_db
from kbtool.analysis.recognize import recognize
from kbtool.analysis.runtime import (
    RUNTIME_WRAPPER_MAX_INSTR,
    is_runtime_import,
    is_runtime_name,
)
from kbtool.kb import queries, store
from kbtool.kb.errors import KBError
from kbtool.plainclass import NEW, FrozenPlain, Plain
from kbtool.wasm import ModuleAnalysis

MIN_INSTRS = 8  # functions with fewer instructions do not count towards relatedness
SMALL_MODULE = 16  # ... unless fewer than this many own functions are left: then all own count
# the entry glue calls main: it is runtime code, but what it calls is the program's
ENTRY_GLUE = frozenset(
    {
        "_start",
        "_initialize",
        "__main_void",
        "__original_main",
        "__main_argc_argv",
        "main_argc_argv",
        "__wasm_call_ctors",
        "_emscripten_start",
        "__libc_start_main",
    }
)
RELATED_THRESHOLD = 0.05  # overlap at or above: same program (measured: see module docstring)
LEGACY_PROGRAM = queries.LEGACY_PROGRAM


class LineageError(KBError):
    """A --program/--base choice that cannot be honoured."""


class HashProfile(FrozenPlain):
    """The counted functions of one module as (body hash, shape hash) pairs."""

    __slots__ = _FIELDS = ("pairs", "bodies", "shapes", "basis", "library")
    pairs: tuple[tuple[str | None, str | None], ...]
    bodies: frozenset[str]
    shapes: frozenset[str]
    basis: str  # "own", "own-small" or "all" (see the module docstring)
    library: int  # functions left out as library/runtime code

    def __init__(
        self,
        pairs: tuple[tuple[str | None, str | None], ...],
        bodies: frozenset[str],
        shapes: frozenset[str],
        basis: str = "all",
        library: int = 0,
    ) -> None:
        put = object.__setattr__
        put(self, "pairs", pairs)
        put(self, "bodies", bodies)
        put(self, "shapes", shapes)
        put(self, "basis", basis)
        put(self, "library", library)

    @property
    def size(self) -> int:
        return len(self.pairs)


Row = tuple[str | None, str | None, int, bool]  # body hash, shape hash, instrs, library


class ModuleRows(FrozenPlain):
    """A module's defined functions for the lineage decision, and which are library code."""

    __slots__ = _FIELDS = ("rows", "library_indices")
    rows: tuple[Row, ...]
    library_indices: tuple[int, ...]  # function indices (for the lineage record)

    def __init__(self, rows: tuple[Row, ...], library_indices: tuple[int, ...] = ()) -> None:
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "library_indices", library_indices)

    def library_hashes(self) -> frozenset[str]:
        """Body and shape hashes of the non-trivial library functions."""
        return frozenset(
            h for b, s, n, lib in self.rows if lib and n >= MIN_INSTRS for h in (b, s) if h
        )


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


def own_profile(rows: Iterable[Row], also_library: frozenset[str] = frozenset()) -> HashProfile:
    """Profile on the program's own code (see the module docstring); a function whose body or
    shape hash is in ``also_library`` (library code of the other module) counts as library."""
    return _own_profile(_OwnBase(rows), also_library)


class _OwnBase:
    """What :func:`own_profile` finds in a module's rows whatever the other module's library
    code: the rows with a hash and the hashes that repeat among them (a lineage choice
    scores the new module against every stored version: found once for all of them)."""

    __slots__ = ("rows", "rep_b", "rep_s")

    def __init__(self, rows: Iterable[Row]) -> None:
        rows = [r for r in rows if r[0] or r[1]]
        # hashes that occur more than once (a hash never counted, None or "", is no repeat)
        bodies = Counter([r[0] for r in rows])
        shapes = Counter([r[1] for r in rows])
        self.rows = rows
        self.rep_b = {h for h, k in bodies.items() if k > 1 and h}
        self.rep_s = {h for h, k in shapes.items() if k > 1 and h}


def _own_profile(base: _OwnBase, also_library: frozenset[str]) -> HashProfile:
    rows, rep_b, rep_s = base.rows, base.rep_b, base.rep_s
    # library code counted (its own flag, or a hash that is the other module's library
    # code), the rest kept when neither hash repeats
    if also_library:
        kept = [
            r for r in rows if not r[3] and r[0] not in also_library and r[1] not in also_library
        ]
    else:
        kept = [r for r in rows if not r[3]]
    n_lib = len(rows) - len(kept)
    mine = [r for r in kept if r[0] not in rep_b and r[1] not in rep_s]
    pairs = tuple([(r[0], r[1]) for r in mine if (r[2] or 0) >= MIN_INSTRS])
    basis = "own"
    if len(pairs) < SMALL_MODULE:
        pairs, basis = tuple([(r[0], r[1]) for r in mine]), "own-small"
    if not pairs:  # nothing of its own left: every non-trivial function counts
        old = profile((b, s, n) for b, s, n, _ in rows)
        return HashProfile(old.pairs, old.bodies, old.shapes, "all", n_lib)
    return HashProfile(
        pairs=pairs,
        bodies=frozenset([b for b, _ in pairs if b]),
        shapes=frozenset([s for _, s in pairs if s]),
        basis=basis,
        library=n_lib,
    )


def library_functions(
    analysis: ModuleAnalysis, data: bytes, db: FingerprintDB | None = None
) -> set[int]:
    """Indices of defined functions that are library/runtime code (see the module docstring)."""
    db = db or default_db()
    funcs = [f for f in analysis.functions if not f.imported]
    imports = {f.index: f.import_name for f in analysis.functions if f.imported}
    names, review = recognize(analysis, data, db)
    lib = {n["func_index"] for n in names} | {r["func_index"] for r in review}
    entry = {n["func_index"] for n in names if n["name"] in ENTRY_GLUE}
    own_api: set[int] = set()  # exported under an application name: never propagated to
    by_shape = db.by_shape
    # (runtime_by_signature with its import lookups done once: the runtime's imports)
    runtime_imports = {i for i, name in imports.items() if is_runtime_import(name)}
    callees: dict[int, set[int]] = {}  # each defined function's distinct direct callees
    for f in funcs:
        i = f.index
        raw, exports = f.raw_name, f.export_names
        calls = f.calls
        if calls:
            callees[i] = set(calls)
        if raw or exports:  # (a stripped function: no name to look at)
            names_of = (raw, *exports) if raw else exports
            if not ENTRY_GLUE.isdisjoint(names_of):
                entry.add(i)
            # each name's verdict once (a pure test): the library and own-API checks share it
            rt = list(map(is_runtime_name, names_of))
            if f.shape_hash in by_shape or any(rt):
                lib.add(i)
            elif (
                f.instr_count <= RUNTIME_WRAPPER_MAX_INSTR
                and calls
                and not runtime_imports.isdisjoint(calls)
            ):
                lib.add(i)
            if (raw and not rt[0]) or (exports and not any(rt[1:] if raw else rt)):
                own_api.add(i)
        elif f.shape_hash in by_shape:
            lib.add(i)
        elif f.instr_count <= RUNTIME_WRAPPER_MAX_INSTR and calls:
            if not runtime_imports.isdisjoint(calls):
                lib.add(i)
    # called only by library code: library code (libc's helpers). A function joins once
    # every one of its callers is in ``source``; ``source`` only grows, so the set reached
    # is the same in any order: each function's callers counted once, the functions
    # whose count the growing source reaches taken from a work list
    callers = Counter(c for cs in callees.values() for c in cs)
    source = lib - entry
    todo = {f.index for f in funcs if f.index not in lib and f.index not in own_api}
    hits: dict[int, int] = defaultdict(int)
    work = list(source)
    while work:
        j = work.pop()
        for c in callees.get(j, ()):
            hits[c] += 1
            if c in todo and hits[c] == callers[c]:
                todo.discard(c)
                lib.add(c)
                source.add(c)
                work.append(c)
    return lib


def module_rows(analysis: ModuleAnalysis, data: bytes) -> ModuleRows:
    """The lineage rows of a freshly analysed module (library code recognised)."""
    lib = library_functions(analysis, data)
    return ModuleRows(
        rows=tuple(
            (f.body_hash, f.shape_hash, f.instr_count, f.index in lib)
            for f in analysis.functions
            if not f.imported
        ),
        library_indices=tuple(sorted(lib)),
    )


def ranges(indices: Iterable[int]) -> str:
    """``1,2,3,7`` -> ``"1-3,7"``."""
    out: list[str] = []
    for i in sorted(set(indices)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        elif out and "-" not in out[-1] and int(out[-1]) == i - 1:
            out[-1] = f"{out[-1]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def parse_ranges(text: str | None) -> set[int]:
    """Inverse of :func:`ranges` (empty or malformed text: nothing)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def stored_rows(conn: sqlite3.Connection, version_id: int, record: dict | None) -> ModuleRows:
    """Lineage rows of a stored version: library code from its lineage record (versions
    ingested before it was recorded: none; the pair's other side still marks what it knows)."""
    lib = parse_ranges((record or {}).get("library"))
    return ModuleRows(
        tuple((b, s, n, i in lib) for i, b, s, n in queries.lineage_hash_rows(conn, version_id))
    )


def pair_overlap(new: ModuleRows, old: ModuleRows) -> tuple[float, HashProfile]:
    """Own-code overlap of two modules and new's profile for this pair."""
    pn = own_profile(new.rows, old.library_hashes())
    po = own_profile(old.rows, new.library_hashes())
    return overlap(pn, po), pn


def overlap(new: HashProfile, old: HashProfile) -> float:
    """Share of functions in common (see the module docstring), 0.0..1.0."""
    denom = max(new.size, old.size)
    if not denom:
        return 0.0
    hit = sum(1 for b, s in new.pairs if (b and b in old.bodies) or (s and s in old.shapes))
    return hit / denom


class Lineage(Plain):
    """Where a new version goes: its program and the parent it carries from (None: nothing).

    A plain class with what ``dataclass(slots=True)`` gave: ``==`` over the fields (no
    hash), a field-by-field ``repr``."""

    __slots__ = _FIELDS = (
        "program",
        "program_id",
        "parent_version_id",
        "overlap",
        "method",
        "new_program",
        "candidates",
        "basis",
        "own_functions",
        "library",
        "near",
    )

    def __init__(
        self,
        program: str,
        program_id: int | None,
        parent_version_id: int | None,
        overlap: float | None,
        method: str,  # "related", "base", "program", "new-program", "first"
        new_program: bool,
        candidates: list[dict[str, Any]] = NEW,  # best first, at most 3
        basis: str = "own",  # what the overlap was measured on (see the module docstring)
        own_functions: int = 0,
        library: str = "",  # ranges of library/runtime function indices in the new module
        # a new program that may be another build of an existing one (see ``near_miss``):
        # {"program", "version_id", "overlap"}; shown as a hint, never acted on
        near: dict[str, Any] | None = None,
    ) -> None:
        self.program = program
        self.program_id = program_id
        self.parent_version_id = parent_version_id
        self.overlap = overlap
        self.method = method
        self.new_program = new_program
        self.candidates = [] if candidates is NEW else candidates
        self.basis = basis
        self.own_functions = own_functions
        self.library = library
        self.near = near

    def record(self) -> dict[str, Any]:
        """JSON stored in ``versions.lineage``."""
        return {
            "method": self.method,
            "overlap": _round(self.overlap),
            "threshold": RELATED_THRESHOLD,
            "min_instrs": MIN_INSTRS,
            "candidates": self.candidates,
            "basis": self.basis,
            "own_functions": self.own_functions,
            "library_functions": len(parse_ranges(self.library)),
            "library": self.library,
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
    new: ModuleRows,
    *,
    default_name: str,
    program: str | None = None,
    base: int | None = None,
    same_bytes_as: int | None = None,
) -> Lineage:
    """Decide program and parent for a module with rows ``new`` (reads only; see ``commit``)."""
    versions = queries.lineage_versions(conn)  # id, label, program (name)
    records = queries.lineage_records(conn)
    lib_text = ranges(new.library_indices)
    # (pair_overlap with new's side found once: the same profiles, every version scored)
    new_base, new_lib = _OwnBase(new.rows), new.library_hashes()

    def score(vid: int) -> tuple[float, HashProfile]:
        old = stored_rows(conn, vid, records.get(vid))
        pn = _own_profile(new_base, old.library_hashes())
        return overlap(pn, own_profile(old.rows, new_lib)), pn

    def made(
        program_name: str,
        pid: int | None,
        parent: int | None,
        ov: float | None,
        method: str,
        is_new: bool,
        cands: list[dict[str, Any]],
        prof: HashProfile | None,
    ) -> Lineage:
        if prof is None:  # nothing to compare with: new's profile on its own
            prof = _own_profile(new_base, frozenset())
        return Lineage(
            program_name,
            pid,
            parent,
            ov,
            method,
            is_new,
            cands,
            basis=prof.basis,
            own_functions=prof.size,
            library=lib_text,
        )

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
        ov, prof = score(base)
        cand = [{"version_id": base, "label": row["label"], "overlap": _round(ov)}]
        return made(row["program"], row["program_id"], base, ov, "base", False, cand, prof)

    pool = [v for v in versions if program is None or v["program"] == program]
    scored = [(*score(v["id"]), v["id"], v) for v in pool]
    scored.sort(key=lambda t: (t[0], t[2]), reverse=True)  # ties: the latest version
    cands = [
        {"version_id": v["id"], "label": v["label"], "program": v["program"], "overlap": _round(ov)}
        for ov, _, _, v in scored[:3]
    ]
    if program is not None:
        if not scored:
            return made(program, None, None, None, "new-program", True, cands, None)
        ov, prof, vid, v = scored[0]
        return made(program, v["program_id"], vid, ov, "program", False, cands, prof)
    if scored and scored[0][0] >= RELATED_THRESHOLD:
        ov, prof, vid, v = scored[0]
        return made(v["program"], v["program_id"], vid, ov, "related", False, cands, prof)
    best, prof = (scored[0][0], scored[0][1]) if scored else (None, None)
    name = _unique_program_name(conn, program_name_for(default_name))
    out = made(name, None, None, best, "new-program" if versions else "first", True, cands, prof)
    out.near = near_miss(program_name_for(default_name), scored)
    return out


def near_miss(stem_program: str, scored: list[tuple]) -> dict[str, Any] | None:
    """The existing program a module decided new may still be a build of, or None.

    Builds of one program at other optimisation levels or by another compiler share little
    identical code: measured with ``benchmarks/lineage.py`` (opt-level rows), own-code overlap
    between -O2/-Os/-O3 builds of one program goes as low as 0.6 % (zstd, emcc -O2 ~ -Os)
    while different programs sharing a libc reach 4.6 %, so no threshold joins them safely
    and they are kept apart. A near miss is a program whose name the file name gives (the new
    program was renamed ``zstd-2``), else the most related version when it shares at least
    one own function: the ingest summary then says that ``--program`` joins it.
    ``scored``: (overlap, profile, version id, version row), best first.
    """
    same_name = [t for t in scored if t[3]["program"] == stem_program]
    pick = same_name[0] if same_name else (scored[0] if scored and scored[0][0] > 0 else None)
    if pick is None:
        return None
    ov, _, vid, v = pick
    return {"program": v["program"], "version_id": vid, "overlap": _round(ov)}


def commit(conn: sqlite3.Connection, lineage: Lineage) -> int:
    """Create the program when new (and adopt pre-v2 versions); return its id."""
    if queries.has_versions_without_program(conn):
        store.assign_legacy_program(conn, store.ensure_program(conn, LEGACY_PROGRAM))
    if lineage.program_id is None:
        lineage.program_id = store.ensure_program(conn, lineage.program)
    return lineage.program_id


def carry_from_parent(
    conn: sqlite3.Connection,
    parent: int,
    version_id: int,
    *,
    old_rows: list[dict[str, Any]] | None = None,
    matches: Any = None,
    old_recs: Any = None,
    new_rows: list[dict[str, Any]] | None = None,
    new_recs: Any = None,
    carry: bool = True,
    new_view: Any = None,
    new_mem: Any = None,
    pairing: Any = None,
    classes: Any = None,
) -> dict[str, Any] | None:
    """Pair a version with its parent, carry the parent's names and knowledge to it through the
    gate (``carry``) and store the pair's diff report: what ingest does for a new version and
    ``kbtool set-program`` for a moved one. ``old_rows``/``matches``: the parent's matching rows
    and the matcher's result when the caller already has them (ingest), else read and run
    here (``old_recs``: the matcher's records of ``old_rows``); ``new_rows``/``new_recs``
    likewise for the version itself (ingest: the rows it stored and the matcher's records,
    exactly what reading them back gives; ``new_view``: the relocation view ingest made of
    the module it stored, so the report neither reads nor hashes those bytes again;
    ``new_mem``: the ``mem_ops`` texts it stored, by index; ``pairing``: the pairing of
    these rows and records when already made (ingest: by the matcher's child); ``classes``:
    the report's pair flags, :data:`kbtool.services.diff.report.Classes`). Returns the carry counts (None
    when not carried)."""
    # imported here: the first version of a program needs no matcher (start-up)
    from kbtool.identity.pairing import pair_rows
    from kbtool.services.diff.carry import carry_names
    from kbtool.services.diff.report import store_report

    if old_rows is None:
        old_rows, old_recs = queries.matching_rows(conn, parent), None
    if pairing is None:
        pairing = pair_rows(
            parent,
            version_id,
            old_rows,
            queries.matching_rows(conn, version_id) if new_rows is None else new_rows,
            matches=matches,
            old_recs=old_recs,
            new_recs=new_recs if new_rows is not None else None,
        )
    defined = pairing.defined_pairs()  # (once: the carry and the report walk them)
    out = carry_names(conn, parent, version_id, pairing=pairing, defined=defined) if carry else None
    store_report(
        conn, pairing, new_view=new_view, new_mem=new_mem, classes=classes, defined=defined
    )
    return out


def describe(lineage: Lineage, version_id: int | None = None) -> str:
    """One line for the ingest summary (``version_id``: the new version, named in the hint)."""
    pct = "" if lineage.overlap is None else f"{lineage.overlap:.1%}"
    if lineage.method == "first":
        return f"program {lineage.program} (new: first version of the KB)"
    if lineage.new_program:
        why = (
            f"best overlap {pct} with any version, under {RELATED_THRESHOLD:.0%}"
            if lineage.overlap is not None
            else "no earlier version of it"
        )
        line = f"program {lineage.program} (new: {why}); nothing carried from other programs"
        near = lineage.near
        if near:
            pct = f"{near['overlap']:.1%}" if near["overlap"] is not None else "?"
            line += (
                f"; hint: if this is another build of program {near['program']} (another"
                f" optimisation level or compiler shares too little identical code to be joined"
                f" automatically: {pct} with its version {near['version_id']}), ingest it with"
                f" --program {near['program']} to carry its names (already ingested:"
                f" kbtool set-program {version_id if version_id is not None else 'VERSION'}"
                f" {near['program']})"
            )
        return line
    how = {"related": "most related version", "base": "--base", "program": "--program"}[
        lineage.method
    ]
    low = lineage.overlap is not None and lineage.overlap < RELATED_THRESHOLD
    return (
        f"program {lineage.program}: parent version {lineage.parent_version_id} "
        f"({how}, overlap {pct})"
        + (f"; warning: under the {RELATED_THRESHOLD:.0%} of related modules" if low else "")
    )
