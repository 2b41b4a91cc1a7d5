"""Static analysis of one stored version, on demand: ``analyze_version(conn, version_id)``.

Loads the module bytes the KB kept at ingest, runs :func:`kbtool.wasm.analyze_module` and
the pure :func:`kbtool.analysis.analyze_module_static`, then, in one transaction:

- proposes every recognised runtime/libc name through the gate
  (:func:`kbtool.kb.gate.upsert_symbol`, provenance ``agent``, actor ``analyzer``, the
  recognizer's evidence plus ``{"actor": "analyzer"}``), so a locked or human name, or a
  higher-confidence one, stays;
- replaces the version's thread facts and structs (:mod:`kbtool.kb.store`);
- records the run (``analysis_runs``, kind ``analyze``) with its counts.

Idempotent: the analysis is deterministic, the gate treats an equal proposal as a no-op,
and a proposal the gate already refused is not proposed again while the record is
unchanged since that refusal (so a re-run adds no annotation event). Names are written in
the KB's spelling: the canonical name (``dlmalloc`` -> ``malloc``, Zig's
``c.string.strlen`` -> ``strlen``); a dotted Zig path becomes a ``::`` path. A recognised
name that another function of the version already carries is skipped (one function per
name), and names the gate would reject as identifiers are skipped, never proposed.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from kbtool.analysis import analyze_module_static
from kbtool.analysis.families import canonical
from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbol, validate_name
from kbtool.kb.provenance import AUTHORITY
from kbtool.services import callgraph_store
from kbtool.services import data as data_model
from kbtool.wasm import WasmFormatError, analyze_module
from kbtool.wasm.facts import analyze_workers

__all__ = ["ACTOR", "PROVENANCE", "AnalyzeError", "analyze_version", "kb_name"]

Progress = Callable[[str, int, int], None]

ACTOR = "analyzer"
PROVENANCE = "agent"
RUN_KIND = "analyze"
OUTCOMES = ("written", "refused", "unchanged", "skipped")


class AnalyzeError(KBError):
    """A version cannot be analysed (no stored bytes, bytes not a valid module)."""


def kb_name(reference_name: str) -> str | None:
    """The name the KB records for a recognised reference name, or None when it cannot be
    spelled as an identifier the gate accepts from an agent."""
    for cand in (canonical(reference_name), reference_name.replace(".", "::")):
        if validate_name(cand, PROVENANCE) is None:
            return cand
    return None


def analyze_version(
    conn: sqlite3.Connection,
    version_id: int,
    progress: Progress | None = None,
    *,
    prepare_diffs: bool = False,
) -> dict[str, Any]:
    """Analyse a stored version and write what it finds; return the Analysis result.

    Returns ``{version_id, label, thread_facts, structs, names, review, summary}``:
    ``thread_facts`` and ``structs`` as the Analysis result of docs/interface.md (each struct with
    ``name``, ``source_function``, ``fields`` [{offset, size, type, name}] and its
    ``members``); ``names`` one entry per recognised function with the gate's ``outcome``
    (written, refused, unchanged, skipped) and ``reason``; ``review`` the functions that fit
    several names (none written); ``summary`` the counts stored with the run.
    ``prepare_diffs``: also start :func:`kbtool.services.diff.warm.start_background` after the
    writes (``diffs_preparing`` in the result), so the diffs nobody stored are kept ahead.
    Raises :class:`UnknownVersionError` for an unknown id, :class:`AnalyzeError` when the
    version's bytes are missing or do not decode.
    """
    label = queries.get_version(conn, version_id)["label"]
    data = queries.module_bytes(conn, version_id)
    if data is None:
        raise AnalyzeError(
            f"version {version_id} has no stored module bytes; re-ingest the module to analyse it"
        )
    workers = analyze_workers(len(data))  # 2 for big modules (KBTOOL_PARALLEL_DECODE_BYTES)
    try:
        analysis = analyze_module(
            data,
            workers=workers,
            progress=(lambda done, total: progress("decode", done, total)) if progress else None,
        )
    except WasmFormatError as exc:
        raise AnalyzeError(f"version {version_id}: stored module does not decode: {exc}") from None
    sa = analyze_module_static(analysis, data, progress=progress)
    graph = callgraph_store.encode(analysis, data)  # the code views read it (issue 30)

    if progress:
        progress("write", 0, max(1, len(sa.names)))
    with transaction(conn):
        names = _write_names(conn, version_id, sa.names, progress)
        store.replace_thread_facts(conn, version_id, sa.thread_facts)
        store.replace_structs(conn, version_id, sa.structs)
        summary = _summary(names, sa.review, sa.thread_facts, sa.structs)
        # globals, data items, xrefs (issue 26): rebuilt with the names just written (ingest
        # built it with the binary's); the run's record keeps counts, not timings
        built = data_model.build(
            conn,
            version_id,
            analysis,
            data,
            progress=(lambda done, total: progress("data", done, total)) if progress else None,
        )
        summary["data"] = {k: v for k, v in built.items() if k not in ("seconds", "cpu_seconds")}
        callgraph_store.save(conn, version_id, graph)
        store.record_run(conn, version_id, RUN_KIND, summary)
    out: dict[str, Any] = {}
    if prepare_diffs:  # the version's unstored same-program diffs, in a detached process
        from kbtool.services.diff.warm import start_background

        out["diffs_preparing"] = start_background(conn, version_id)
    return {
        "version_id": version_id,
        "label": label,
        "thread_facts": sa.thread_facts,
        "structs": sa.structs,
        "names": names,
        "review": [{k: r[k] for k in ("func_index", "candidates", "reason")} for r in sa.review],
        "summary": summary,
    } | out


def _write_names(
    conn: sqlite3.Connection,
    version_id: int,
    recognised: list[dict[str, Any]],
    progress: Progress | None,
) -> list[dict[str, Any]]:
    entries = {
        e["index"]: e for e in queries.list_functions(conn, version_id, include_imports=True)
    }
    holder: dict[str, int] = {}
    for e in entries.values():
        if e["name"]:
            holder.setdefault(e["name"], e["index"])
    out = []
    for k, n in enumerate(recognised):
        idx = n["func_index"]
        entry = entries.get(idx)
        name = kb_name(n["name"])
        conf = float(n["confidence"])
        rec = {
            "func_index": idx,
            "stable_id": entry["stable_id"] if entry else None,
            "name": name or n["name"],
            "reference_name": n["name"],
            "confidence": conf,
            "family": n["family"],
            "recognizer": n["evidence"].get("recognizer"),
        }
        rec["outcome"], rec["reason"] = _propose(conn, version_id, entry, name, conf, n, holder)
        out.append(rec)
        if progress and k % 64 == 0:
            progress("write", k, len(recognised))
    return out


def _propose(
    conn: sqlite3.Connection,
    version_id: int,
    entry: dict[str, Any] | None,
    name: str | None,
    conf: float,
    n: dict[str, Any],
    holder: dict[str, int],
) -> tuple[str, str]:
    """(outcome, reason) of one recognised name."""
    if entry is None:
        return "skipped", "no such function in the KB"
    if name is None:
        return "skipped", f"{n['name']!r} is not an identifier the gate accepts"
    other = holder.get(name)
    if other is not None and other != entry["index"]:
        return "skipped", f"name already on function #{other} of this version"
    if entry["name"] == name and AUTHORITY.get(entry["provenance"], 0) > AUTHORITY[PROVENANCE]:
        return "unchanged", f"already named so ({entry['provenance']})"
    sid = entry["stable_id"]
    last = queries.last_annotation_event(conn, sid)
    if (
        last is not None
        and not last["written"]
        and last["actor"] == ACTOR
        and last["new_name"] == name
        and last["confidence"] == conf
    ):
        # nothing changed the record since the gate refused this very proposal
        return "refused", last["reason"]
    evidence = dict(n["evidence"])
    if name != n["name"]:
        evidence["reference_name"] = n["name"]
    evidence["actor"] = ACTOR
    d = upsert_symbol(
        conn,
        sid,
        name,
        provenance=PROVENANCE,
        confidence=conf,
        actor=ACTOR,
        evidence=evidence,
        version_id=version_id,
    )
    if d["written"]:
        holder[name] = entry["index"]
        return "written", d["reason"]
    return ("unchanged" if d["reason"] == "no change" else "refused"), d["reason"]


def _summary(
    names: list[dict[str, Any]],
    review: list[dict[str, Any]],
    facts: list[dict[str, Any]],
    structs: list[dict[str, Any]],
) -> dict[str, Any]:
    by_family: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(OUTCOMES, 0))
    totals = dict.fromkeys(OUTCOMES, 0)
    for n in names:
        by_family[n["family"]][n["outcome"]] += 1
        totals[n["outcome"]] += 1
    return {
        "recognised": len(names),
        "names": totals,
        "names_by_family": {f: by_family[f] for f in sorted(by_family)},
        "review": len(review),
        "thread_facts": len(facts),
        "thread_facts_by_kind": dict(sorted(Counter(f["kind"] for f in facts).items())),
        "structs": len(structs),
    }
