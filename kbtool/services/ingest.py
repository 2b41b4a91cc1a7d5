"""Ingest one release of a module: decode, store facts, carry identities, record binary names,
build the data model (globals, data items, xrefs).

Everything for one version lands in one transaction: a failure leaves the KB as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from itertools import starmap
from pathlib import Path
from typing import Any, NamedTuple

from kbtool.identity.ids import assign_new_ids
from kbtool.identity.names import module_is_minified
from kbtool.identity.records import (
    FuncRecord,
    is_minified,
    record_rows,
    records_from_analysis,
    table_slots,
)
from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbols
from kbtool.services import data as data_model
from kbtool.services import ingest_rows as rows
from kbtool.services import lineage as lineage_svc
from kbtool.services.ingest_classify import child_report, report_inputs
from kbtool.services.ingest_data import build_ahead, built
from kbtool.services.ingest_end import free_meanwhile, gc_paused_aged, kept
from kbtool.services.ingest_match import keep_views, preload, start_early
from kbtool.services.ingest_result import IngestResult
from kbtool.services.inputs import read_input, read_text_input
from kbtool.wasm import WasmFormatError, analyze_module
from kbtool.wasm.facts import analyze_workers
from kbtool.wasm.gosyms import GoSymbolsError, recover_go_names
from kbtool.wasm.kept import stop_keeping

Progress = Callable[[str, int, int], None]

NAME_SECTION_CONFIDENCE = 1.0
EXPORT_CONFIDENCE = 0.95
GLUE_CONFIDENCE = 0.95
IMPORT_CONFIDENCE = 1.0
GO_PCLNTAB_CONFIDENCE = 1.0


class IngestError(KBError):
    """The input cannot be ingested (missing, not wasm, malformed, label taken)."""


class AlreadyIngested(IngestError):
    """The same bytes are already a version of the KB; nothing was ingested."""

    def __init__(self, version_id: int, label: str) -> None:
        self.version_id = version_id
        self.label = label
        super().__init__(
            f"identical bytes are already version {version_id} ({label}); nothing ingested"
            " (to ingest them again under another label: --label NEW --force)"
        )


def ingest_file(
    conn: sqlite3.Connection,
    path: str | Path,
    *,
    label: str | None = None,
    glue_path: str | Path | None = None,
    progress: Progress | None = None,
    carry: bool = True,
    program: str | None = None,
    base: int | None = None,
    force: bool = False,
) -> IngestResult:
    """Read ``path`` (and optional Emscripten JS glue) and ingest it as a new version.

    ``program``/``base`` choose the lineage (see :mod:`kbtool.services.lineage`); identical
    bytes already in the KB raise :class:`AlreadyIngested` unless ``force`` and a new label.
    """
    p = Path(path)
    if not p.exists():
        raise IngestError(f"no such file: {p}")
    if p.is_dir():
        raise IngestError(f"{p} is a directory, not a wasm module")
    data = read_input(p, "wasm")  # at most KBTOOL_MAX_WASM_BYTES (1 GiB)
    glue_text = None
    if glue_path is not None:
        gp = Path(glue_path)
        if not gp.exists():
            raise IngestError(f"no such file: {gp}")
        glue_text = read_text_input(gp, "js", errors="replace")  # KBTOOL_MAX_JS_BYTES
    return ingest_bytes(
        conn,
        data,
        label=label or p.name,
        source_path=str(p),
        glue_text=glue_text,
        progress=progress,
        carry=carry,
        program=program,
        base=base,
        force=force,
        program_hint=p.name,
    )


def ingest_bytes(
    conn: sqlite3.Connection,
    data: bytes,
    *,
    label: str,
    source_path: str | None = None,
    glue_text: str | None = None,
    progress: Progress | None = None,
    carry: bool = True,
    program: str | None = None,
    base: int | None = None,
    force: bool = False,
    program_hint: str | None = None,
) -> IngestResult:
    if not label or _CONTROL.search(label):
        raise IngestError("invalid label: empty or has control characters")
    if program is not None and (not program.strip() or _CONTROL.search(program)):
        raise IngestError("invalid program name: empty or has control characters")
    sha256 = hashlib.sha256(data).hexdigest()  # once: _store records it too
    same = queries.versions_with_sha256(conn, sha256)
    if same and not (force and not queries.label_exists(conn, label)):
        raise AlreadyIngested(same[0]["id"], same[0]["label"])
    if queries.label_exists(conn, label):
        raise IngestError(f"a version labelled {label!r} already exists (choose another --label)")
    # the cyclic collector paused for the whole ingest (as the decoder and the data model
    # do for themselves): millions of small objects, no cycles, and its full passes over
    # them cost ~9% of an ffmpeg ingest (perf) between the stages
    with gc_paused_aged():  # (what it leaves alive joins the oldest generation: ingest_end)
        # a big module's matcher child forked now, reading the expected parent while this
        # process decodes (its matcher starts with the new records: before the lineage)
        job = start_early(conn, data, sha256, program, base, same)
        try:
            return _ingest(
                conn,
                data,
                job,
                label=label,
                source_path=source_path,
                glue_text=glue_text,
                progress=progress,
                carry=carry,
                program=program,
                base=base,
                same=same,
                sha256=sha256,
                program_hint=program_hint,
            )
        finally:
            if job is not None:
                job.stop()


def _ingest(
    conn: sqlite3.Connection,
    data: bytes,
    job: Any,
    *,
    label: str,
    source_path: str | None,
    glue_text: str | None,
    progress: Progress | None,
    carry: bool,
    program: str | None,
    base: int | None,
    same: list,
    sha256: str,
    program_hint: str | None,
) -> IngestResult:
    # both cores for big modules: bodies decode independently (measured: ~15-40% faster)
    workers = analyze_workers(len(data))  # 2 for big modules (KBTOOL_PARALLEL_DECODE_BYTES)
    try:
        analysis = analyze_module(
            data,
            progress=(lambda done, total: progress("decode", done, total)) if progress else None,
            workers=workers,
        )
    except WasmFormatError as exc:
        raise IngestError(f"not a valid WebAssembly module: {exc}") from None
    new = None
    if job is not None:  # (the early child's matcher starts now)
        # the records' tuples sent as they are, this process's records made after the send
        recs = record_rows(analysis)
        job.send_rows(recs)
        new = job.new = list(starmap(FuncRecord, recs))
        del recs
    glue = None
    if glue_text is not None:
        from kbtool.glue import parse_glue  # (imported when used: start-up of a plain ingest)

        glue = parse_glue(glue_text)

    # the lineage is decided before the matcher, from hashes alone (cheap)
    # (on the program's own code: library/runtime functions recognised and left out)
    lineage = lineage_svc.choose_lineage(
        conn,
        lineage_svc.module_rows(analysis, data),
        default_name=program_hint or label,
        program=program,
        base=base,
        same_bytes_as=same[-1]["id"] if same else None,
    )
    early = job
    if job is not None and (job.proc is None or job.parent != lineage.parent_version_id):
        job.stop(kill=True)  # (another parent, or the child died: matched as without it)
        job = None
    # the working data, handed over by the frames that hold it and freed beside the COMMIT
    # (:func:`kbtool.services.ingest_end.free_meanwhile`: the thread is joined after it)
    trash: list = []
    freeing = None
    keep = False
    try:
        with transaction(conn):
            result = _store(
                conn,
                data,
                analysis,
                label=label,
                source_path=source_path,
                glue=glue,
                progress=progress,
                carry=carry,
                lineage=lineage,
                sha256=sha256,
                early_job=job,
                new=new,
                trash=trash,
            )
            trash += [analysis, new, glue, lineage, early and early.drop()]
            del analysis, new, glue, job
            keep = kept(trash)  # (the process ends right after: not freed at all)
            freeing = None if keep else free_meanwhile(trash, len(data))
    finally:
        if freeing is not None:
            freeing.join()
        elif not keep:  # (a small module's, freed here: it holds itself through the locals)
            trash.clear()
    return result


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CarriedId(NamedTuple):
    """A stable id carried to a new function from its unique match in the parent version."""

    stable_id: str
    method: str
    score: float
    old_index: int
    changed: bool  # the body's logic (shape hash) differs from the parent's


def _carry_ids(
    conn,
    parent,
    new,
    funcs,
    progress,
    nbytes: int = 0,
    meanwhile: Callable[[list[dict[str, Any]]], Any] | None = None,
    report: Callable[[list[dict[str, Any]]], dict] | None = None,
    early_job: Any = None,
) -> tuple[
    dict[int, CarriedId],
    dict[str, int],
    Any,
    list[str],
    list[dict[str, Any]],
    list[Any] | None,
    Any,
]:
    """Stable ids carried from ``parent``: ``(carried, by_method, full_matches, notes,
    old_rows, old_recs, job)`` (``carried``: new index -> :class:`CarriedId`; ``old_recs``:
    the matcher's records of ``old_rows``, which the pairing of the diff report reuses;
    ``job``: the matcher's :class:`~kbtool.services.ingest_match.MatchJob`, None without a
    parent: the caller stops it, whose child may still make the report's pair flags).

    A module of ``nbytes`` above ``KBTOOL_PARALLEL_MATCH_BYTES`` is matched in a second
    process (:mod:`kbtool.services.ingest_match`) while this one calls
    ``meanwhile(old_rows)`` (work that needs no pairing: the data walk); ``report(old_rows)``: that child's inputs
    for the report's flags (:func:`kbtool.services.ingest_classify.report_inputs`).
    ``early_job``: the child forked before the decode (:func:`kbtool.services.
    ingest_match.start_early`), already matching ``new`` against ``parent``."""
    # identity: carry stable ids from the parent (the most related earlier version of the same
    # program; none for a new program) by unique, non-fuzzy matches;
    # the same matcher run goes on to the full (fuzzy) pairing that carry-over and the stored
    # diff report use, so the matcher runs once per ingest
    carried: dict[int, CarriedId] = {}
    by_method: dict[str, int] = defaultdict(int)
    full_matches = None
    matcher_notes: list[str] = []
    old_rows: list[dict[str, Any]] = []
    old = job = None
    if parent is not None:
        # imported here: the first version of a program needs no matcher (start-up)
        from kbtool.identity.records import records_from_rows
        from kbtool.services.ingest_match import install_verdicts, start_match

        old_rows = queries.matching_rows(conn, parent)
        old = records_from_rows(old_rows)
        old_by_index = {r.index: r for r in old}
        if progress:
            progress("match", 0, 1)
        if early_job is not None:
            job, job.old = early_job, old  # (here: its matcher runs if the child fails)
        else:
            report_of = None if report is None else (lambda: report(old_rows))
            job = start_match(old, new, nbytes, report_of)
        try:
            if job.proc is not None and meanwhile is not None:
                meanwhile(old_rows)
            exact, full_matches, matcher_notes, verdicts = job.result()
        except BaseException:
            job.stop()
            raise
        if job.in_child:  # the diff report's pairing reuses them as in one process
            install_verdicts(verdicts, old, new)
        for m in exact:
            o = old_by_index[m.old_index]
            # a body "changed" when its logic did: the shape hash (call targets, type indices and
            # data addresses normalised) differs; relocation alone is not a change
            changed = o.shape_hash != funcs[m.new_index].shape_hash
            carried[m.new_index] = CarriedId(o.stable_id, m.method, m.score, m.old_index, changed)
            by_method[m.method] += 1
        if progress:
            progress("match", 1, 1)
    return carried, by_method, full_matches, matcher_notes, old_rows, old, job


def _store(conn, data, analysis, **kw) -> IngestResult:
    """:func:`_stored` inside one feature pool: the pairing that stores the diff report
    (records read back from the KB) shares the matcher's features and similarities
    (records of the module, equal in content; :func:`kbtool.identity.features.feature_pool`),
    and the matcher's review verdicts on it when every input is the same (the same pairs,
    records equal in content: :func:`kbtool.identity.matcher.review.review_memo`)."""
    reviews: Any = contextlib.nullcontext()
    pool: Any = contextlib.nullcontext()
    if kw["lineage"].parent_version_id is not None:
        # imported here: the first version of a program pairs nothing, so it loads no
        # matcher (start-up of a small module's ingest)
        from kbtool.identity.features import feature_pool
        from kbtool.identity.matcher.review import review_memo

        reviews, pool = review_memo(), feature_pool()
    jobs: list[Any] = []  # the matcher's job: its child may outlive the pairing's answer
    try:
        with pool, reviews:
            return _stored(conn, data, analysis, jobs=jobs, **kw)
    finally:
        for job in jobs:  # (its pair flags the report did not ask for: not waited for)
            job.stop(kill=True)


def _stored(
    conn,
    data,
    analysis,
    *,
    label,
    source_path,
    glue,
    progress,
    carry,
    lineage: lineage_svc.Lineage,
    sha256: str | None = None,
    jobs: list[Any],
    early_job: Any = None,
    new: list | None = None,
    trash: list,
) -> IngestResult:
    mod = analysis.module
    funcs = analysis.functions
    program_id = lineage_svc.commit(conn, lineage)
    parent = lineage.parent_version_id
    if parent is not None:  # (its peak is at the end: keeping would raise it)
        stop_keeping()
    slots = table_slots(analysis)
    # the matcher's records: only to match a parent (a first version needs its table slots)
    new = [] if parent is None else (new or records_from_analysis(analysis))

    walked: list[data_model.Walked] = []  # the data walk, when done during the matcher
    ahead: list[tuple[dict, dict]] = []  # the data model built during the matcher: (names, out)
    # the version's rows that need no stable id, once written (and the binary's names, once made)
    early: dict[str, Any] = {}

    def write_early(carried_n: int = 0) -> None:
        """The version row (``carried``: set after the join when the matcher ran meanwhile),
        its module bytes, facts and call edges: none needs a stable id."""
        early["vid"] = vid = rows.insert_version(
            conn, analysis, data, label, source_path, parent, carried_n, program_id, lineage, sha256
        )
        store.insert_module_bytes(conn, vid, data)
        xrows, edges = rows.fact_rows(vid, funcs, slots, analysis.side, flat_edges=True)
        early["callees"] = analysis.side[2] if analysis.side is not None else None  # (new ids)
        analysis.side = None  # (its texts are in the rows now)
        store.insert_fact_values(conn, rows.FACT_COLUMNS, xrows)
        store.insert_call_edge_pairs(conn, vid, edges)
        # the memory accesses as the JSON text stored: the report's layout check compares them
        early["mem_text"] = {r[1]: r[8] for r in xrows} if parent is not None else None

    dp = (lambda done, total: progress("data", done, total)) if progress else None

    def walk(old_rows) -> None:  # one process: the matcher has the other core
        walked.append(data_model.prepare(analysis, data, progress=dp, workers=1))
        got = pre.get("report") or (report(old_rows) if early_job is not None else None)  # (1)
        keep_views(conn, parent, data, mod, sha256, got and got["old_bytes"])  # (by content)
        write_early()
        data_model.write_refs(conn, early["vid"], walked[0])
        early["new_rows"] = rows.matching_rows(funcs, slots)  # (the report's; ids at the join)
        if early_job is not None:  # (the early child's report inputs: sent with the answer)
            early_job.prepare_report(funcs, early["mem_text"])
            got["new_mem"] = early["mem_text"]
        preload()  # (the report's modules)
        ahead.append(_data_ahead(conn, early, parent, analysis, data, glue, walked, old_rows))

    sha256 = sha256 or hashlib.sha256(data).hexdigest()

    # the match child's inputs, once read; (1) an early child's: for this process's share of
    # the report's pair flags (:func:`kbtool.services.ingest_classify.tail_codes`)
    pre: dict[str, Any] = {}

    def report(old_rows) -> dict:  # (the report's pair flags: the match child's inputs)
        pre["report"] = got = report_inputs(conn, parent, old_rows, funcs, slots, data, mod, sha256)
        return got

    carried, by_method, full_matches, matcher_notes, old_rows, old_recs, job = _carry_ids(
        conn, parent, new, funcs, progress, len(data), walk, report, early_job
    )
    if job is not None:
        jobs.append(job)
    if early:  # written while the matcher ran: its count now
        if carried:
            store.set_version_carried(conn, early["vid"], len(carried))
    else:
        write_early(len(carried))
    vid, mem_text = early["vid"], early.pop("mem_text")
    unmatched = [f.index for f in funcs if f.index not in carried]
    taken = queries.stable_id_taken(conn, len(unmatched))
    new_ids = assign_new_ids(analysis, unmatched, taken, early.pop("callees", None))

    sid_of, frows = rows.function_rows(vid, funcs, carried, new_ids)
    store.insert_function_values(conn, rows.FUNCTION_COLUMNS, frows)
    del frows  # (written: the data model reuses their memory)
    result = _result(analysis, vid, label, lineage, carried, by_method, unmatched, matcher_notes)
    _record_binary_names(conn, vid, analysis, sid_of, glue, result, early.pop("binary", None))
    # globals, data items and xrefs (issue 26), in this transaction: `kbtool xrefs` and
    # `kbtool strings` work after the first ingest; `kbtool analyze` rebuilds it with the
    # recognizers' names (labels such as errno and malloc_state)
    result.data = built(conn, vid, analysis, data, dp, walked, ahead)  # (their memory back)
    if parent is not None:  # (the same path as `kbtool set-program`)
        from kbtool.services.diff.relocation import module_view
        from kbtool.services.ingest_match import matches_of

        # the report's relocation check reads the module stored above: its view takes the
        # decoder's parse of these very bytes (the same module; no second parse). A module
        # the view refuses is refused again there, where the report handles it.
        view = None
        with contextlib.suppress(WasmFormatError):
            view = module_view(data, mod, sha=sha256)
        # the pairing takes this version's rows and records as ingest has them, not read
        # back: the rows are what matching_rows reads of what was stored above, and the
        # matcher's records, given their stable ids, are what records_from_rows makes of them
        for r in new:
            r.stable_id = sid_of[r.index]
        new_rows = early.pop("new_rows", None) or rows.matching_rows(funcs, slots)
        new_rows = rows.set_stable_ids(new_rows, sid_of)
        # the pairing and its pairs' flags as the matcher's child made them, if it did
        pairing, classes = child_report(
            job, parent, vid, old_rows, new_rows, old_recs, new, carried, pre.get("report")
        )
        result.diff_carry = lineage_svc.carry_from_parent(
            conn,
            parent,
            vid,
            old_rows=old_rows,
            matches=None if pairing is not None else matches_of(full_matches),
            old_recs=old_recs,
            new_rows=new_rows,
            new_recs=new,
            carry=carry,
            new_view=view,
            new_mem=mem_text,
            pairing=pairing,
            classes=classes,
        )
    trash.append(locals())  # (its working data: freed beside the COMMIT, not at this return)
    return result


def _result(analysis, vid, label, lineage, carried, by_method, unmatched, notes) -> IngestResult:
    """The :class:`IngestResult` of version ``vid`` before its names and data model."""
    funcs = analysis.functions
    n_imp = sum(1 for f in funcs if f.imported)
    return IngestResult(
        version_id=vid,
        label=label,
        imported=n_imp,
        defined=len(funcs) - n_imp,
        exported=sum(1 for f in funcs if f.export_names),
        instructions=sum(f.instr_count for f in funcs),
        toolchain_version=analysis.toolchain_version,
        shared_memory=bool(analysis.module.shared_memory),
        parent_version_id=lineage.parent_version_id,
        carried=len(carried),
        carried_by_method=dict(by_method),
        body_changed=sum(1 for c in carried.values() if c.changed),
        new_identities=len(unmatched),
        program=lineage.program,
        new_program=lineage.new_program,
        lineage=lineage.record(),
        lineage_text=lineage_svc.describe(lineage, vid),
        matcher_notes=notes,
    )


def _data_ahead(conn, early, parent, analysis, data, glue, walked, old_rows) -> tuple:
    """The data model of version ``early["vid"]`` built during the matcher with the function
    names expected after its answer (:func:`kbtool.services.ingest_data.build_ahead`:
    checked then). The binary's names it reads are kept as ``early["binary"]`` (with their
    counts) for :func:`_record_binary_names`: made once."""
    counts = _Scratch()
    names = _binary_proposals(analysis, glue, counts)
    early["binary"] = (names, counts)
    return build_ahead(conn, early["vid"], parent, analysis, data, walked[0], old_rows, names)


class _Scratch:
    """Where :func:`_binary_proposals` counts when only its names are wanted."""

    glue: dict[str, Any] | None = None
    go: dict[str, Any] | None = None


def _go_symbols(analysis, result: IngestResult):
    """Go names from the pclntab of a Go-built module (None for other modules)."""
    try:
        syms = recover_go_names(analysis.module)
    except GoSymbolsError as exc:  # a Go module of an unknown layout: reported, never guessed
        result.go = {"error": str(exc)}
        return None
    if syms is not None:
        result.go = {
            "go_version": syms.go_version,
            "pclntab_format": syms.pclntab_format,
            "named": len(syms.names),
            "defined": syms.defined_functions,
            "notes": list(syms.notes),
        }
    return syms


def _binary_proposals(analysis, glue, result) -> list[tuple[int, str, float, dict, str]]:
    """The best name this binary gives each function it names, the others kept as evidence:
    ``(index, name, confidence, evidence, source)`` in index order (``result``: its ``glue``
    and ``go`` counts set as :func:`_record_binary_names` reports them).

    Name-section names are kept whatever their length (a real ``cb`` is a name); the
    minified-name rule applies to export and import names only.
    """
    minified = module_is_minified(n for f in analysis.functions for n in f.export_names)
    glue_exports = glue.exports if glue else {}
    glue_imports = glue.imports if glue else {}
    if glue is not None:
        result.glue = {
            "exports": 0,
            "imports": 0,
            "unknown": list(glue.unknown),
            "shape": glue.shape,
        }
    go = _go_symbols(analysis, result)
    proposals: list[tuple[int, str, float, dict, str]] = []
    for f in analysis.functions:
        cands: list[tuple[str, float, str, dict[str, Any]]] = []
        if go is not None and f.index in go.names:
            ev = dict(go.evidence(f.index))
            ev.pop("source", None)
            cands.append((go.names[f.index], GO_PCLNTAB_CONFIDENCE, "go-pclntab", ev))
        if f.raw_name:
            cands.append((f.raw_name, NAME_SECTION_CONFIDENCE, "name-section", {}))
        for e in f.export_names:
            if e in glue_exports:
                cands.append((glue_exports[e], GLUE_CONFIDENCE, "js-glue", {"minified": e}))
                result.glue["exports"] += 1
            elif not is_minified(e, minified):
                cands.append((e, EXPORT_CONFIDENCE, "export", {"export": e}))
        if f.imported:
            if (
                glue is not None
                and f.import_field in glue_imports
                and (glue.import_module is None or glue.import_module == f.import_module)
            ):
                cands.append(
                    (
                        glue_imports[f.import_field],
                        GLUE_CONFIDENCE,
                        "js-glue",
                        {"minified": f"{f.import_module}.{f.import_field}"},
                    )
                )
                result.glue["imports"] += 1
            elif f.import_field and not is_minified(f.import_field, minified):
                cands.append(
                    (f.import_field, IMPORT_CONFIDENCE, "import", {"module": f.import_module})
                )
        if not cands:
            continue
        name, conf, source, extra = cands[0]
        others = sorted({c[0] for c in cands[1:] if c[0] != name})
        if others:
            extra = dict(extra, aliases=others)
        proposals.append((f.index, name, conf, extra, source))
    return proposals


def _record_binary_names(
    conn, vid, analysis, sid_of, glue, result: IngestResult, made: tuple | None = None
) -> None:
    """Go pclntab names, name-section names, exports, import names and JS-glue names, as
    ``export`` annotations (:func:`_binary_proposals`, or ``made``'s ``(proposals,
    counts)`` when made during the matcher); each record's evidence says where the name
    came from."""
    by_source: dict[str, int] = defaultdict(int)
    proposals: list[tuple[str, str, float, dict[str, Any]]] = []
    sources: list[str] = []
    if made:
        binary, counts = made
        if counts.glue is not None:
            result.glue = counts.glue
        if counts.go is not None:
            result.go = counts.go
    else:
        binary = _binary_proposals(analysis, glue, result)
    for i, name, conf, extra, source in binary:
        proposals.append((sid_of[i], name, conf, {"source": source, **extra}))
        sources.append(source)
    # every name in one call: the gate decides each as upsert_symbol would, in this order
    decisions = upsert_symbols(conn, proposals, provenance="export", actor="ingest", version_id=vid)
    for (sid, name, _conf, _ev), source, d in zip(proposals, sources, decisions, strict=True):
        if d["written"]:
            result.names_written += 1
            by_source[source] += 1
        elif d["reason"] != "no change":
            cur = queries.get_symbol(conn, sid)
            if cur is not None and cur["name"] == name:
                result.names_same += 1
            else:
                result.names_refused += 1
    result.names_by_source = dict(by_source)
