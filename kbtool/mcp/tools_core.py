"""The MCP tools of docs/interface.md (and their paged forms) plus the batch proposal: versions,
coverage, functions, facts, names, search, diff, export, proposals.

Reads borrow a reused read-only connection (:func:`kbtool.mcp.registry.read`); each gated
write opens its own read-write connection; answers come only from :mod:`kbtool.kb.queries`,
the diff cache of :mod:`kbtool.services.diff` and :mod:`kbtool.services.propose` (verifier,
then the gate). Fields and errors: docs/interface.md. No ``from __future__ import
annotations``: the SDK reads the parameter annotations as live objects.
"""

import threading
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.errors import KBError, UnknownStableIdError
from kbtool.kb.gate import MAX_BINARY_NAME, MAX_NAME, MAX_STABLE_ID, MAX_SUMMARY
from kbtool.mcp.errors import message
from kbtool.mcp.paging import (
    MAX_ANSWER_BYTES,
    MAX_PAGE,
    call_text,
    cut_lists,
    page_limit,
    page_rows,
    page_window,
)
from kbtool.mcp.registry import MAX_INT, Rendered, as_json, kb_path, read, tool

MAX_BATCH = 100  # proposals per propose_symbols call
ENTRY_FIELDS = ("index", "stable_id", "type", "name", "provenance", "confidence")
FACT_LISTS = (
    "call_targets",
    "referenced_strings",
    "instruction_mnemonics",
    "export_names",
    "callees",
    "constants",
    "globals_used",
    "memory_accesses",
)
# the words of `kbtool diff --only` (kbtool.render.terminal.parse_only defines them)
DIFF_ONLY = (
    "unchanged",
    "moved",
    "modified",
    "new",
    "deleted",
    "changed",
    "review",
    "runtime",
    "added",
    "removed",
    "all",
)


# Strict, bounded arguments: pydantic's lax mode would turn `true` into 1 or 1.0 and
# let 10**30 reach SQLite; strict mode refuses both with a validation (tool) error.
def Count(description: str) -> Any:  # noqa: N802 - a type alias factory
    return Annotated[int, Field(strict=True, ge=0, le=MAX_INT, description=description)]


def Text(description: str, max_length: int) -> Any:  # noqa: N802
    return Annotated[str, Field(strict=True, max_length=max_length, description=description)]


VersionId = Count("A version id from list_versions.")


StableId = Text(
    "A function's stable_id (from list_functions, search_symbols or get_function_facts);"
    " it names the same logical function in every version.",
    MAX_STABLE_ID,
)


Offset = Annotated[
    int | None,
    Field(
        strict=True,
        ge=0,
        le=MAX_INT,
        description=(
            "Paging: the first row to return (0-based); use the next_offset of the previous page."
            " Giving it turns the answer into a page."
        ),
    ),
]


Limit = Annotated[
    int | None,
    Field(
        strict=True,
        ge=1,
        le=MAX_PAGE,
        description=(
            f"Paging: rows per page (1..{MAX_PAGE}; default 500 when paging). A page is also cut"
            f" at {MAX_ANSWER_BYTES // 1000} KB. Giving it turns the answer into a page."
        ),
    ),
]


def _fit(facts: dict[str, Any]) -> dict[str, Any]:
    n = 4096
    out = cut_lists(facts, n, FACT_LISTS)
    while n > 16 and len(as_json(out)) > MAX_ANSWER_BYTES:
        n //= 2
        out = cut_lists(facts, n, FACT_LISTS)
    return out


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stable_id: StableId
    name: Text("A C-like identifier, optionally qualified with ::.", MAX_NAME)
    summary: Text("What the function does (plain text).", MAX_SUMMARY) = ""
    confidence: Annotated[
        float,
        Field(
            strict=True,
            ge=0.0,
            le=1.0,
            allow_inf_nan=False,
            description="How sure you are, 0.0 to 1.0.",
        ),
    ] = 0.5


@tool(title="List versions")
def list_versions() -> list[dict[str, Any]]:
    """List every ingested version of the module, oldest first. Start here: each
    entry's `id` is the version_id the other tools take.

    Returns [{id, label, toolchain_version, functions, shared_memory}]; `functions`
    counts imported plus defined functions."""
    return read(queries.list_versions)


@tool(title="Naming coverage")
def coverage(version_id: VersionId) -> dict[str, Any]:
    """How much of one version is named, to pick where to work or to measure progress.

    Returns {defined, named, coverage_pct, oracle_named, human_named, agent_named,
    export_named, diff_carry_named}; coverage_pct = named / defined * 100."""
    return read(queries.coverage, version_id)


@tool(title="List functions (pageable)")
def list_functions(
    version_id: VersionId,
    include_imports: Annotated[
        bool, Field(strict=True, description="Also list imported functions.")
    ] = False,
    offset: Offset = None,
    limit: Limit = None,
    unnamed_only: Annotated[
        bool | None,
        Field(
            strict=True,
            description=(
                "Only functions without a name (what is left to name). Turns the answer into a page."
            ),
        ),
    ] = None,
    name_contains: Annotated[
        str | None,
        Field(
            strict=True,
            max_length=MAX_BINARY_NAME,
            description=(
                "Only functions whose name contains this (case-insensitive). Turns the answer into a page."
            ),
        ),
    ] = None,
    fields: Annotated[
        list[Literal[ENTRY_FIELDS]] | None,
        Field(
            description=(
                'Only these keys in each row (e.g. ["index", "stable_id"]) to make pages smaller.'
                " Turns the answer into a page."
            )
        ),
    ] = None,
) -> Any:
    """The functions of a version in index order: find unnamed functions (name null) and
    the index/stable_id the other tools take. Imported functions are left out unless
    include_imports is true.

    Called with version_id (and include_imports) only, it returns every row in one list
    [{index, stable_id, type, name, provenance, confidence}] (the contract's answer, about
    130 bytes per function, several MB on a large module: page instead). With any of offset, limit,
    unnamed_only, name_contains or fields it returns one page {items, total, offset,
    next_offset, truncated, note} of at most `limit` rows (default 500) and 100 KB;
    call again with offset=next_offset until next_offset is null."""
    paging = (offset, limit, unnamed_only, name_contains, fields)
    if all(p is None for p in paging):
        return read(queries.list_functions, version_id, include_imports)
    call = call_text(
        "list_functions",
        version_id=version_id,
        include_imports=include_imports or None,
        unnamed_only=unnamed_only,
        name_contains=name_contains,
        fields=fields,
        limit=limit,
    )
    keep = [f for f in ENTRY_FIELDS if f in fields] if fields else None
    if not name_contains:  # one page read in SQL, not the whole list
        start = max(0, offset or 0)
        total, window = read(
            queries.function_list_window,
            version_id,
            include_imports,
            start,
            page_limit(limit),
            bool(unnamed_only),
        )
        if keep:
            window = [{k: r[k] for k in keep} for r in window]
        return page_window(window, total, start, call=call)
    rows = read(queries.list_functions, version_id, include_imports)
    if unnamed_only:
        rows = [r for r in rows if r["name"] is None]
    if name_contains:
        needle = name_contains.lower()
        rows = [r for r in rows if r["name"] and needle in r["name"].lower()]
    if keep:
        rows = [{k: r[k] for k in keep} for r in rows]
    return page_rows(rows, offset or 0, limit, call=call)


@tool(title="Function facts")
def get_function_facts(
    version_id: VersionId,
    func_index: Count("The function's index in that version (from list_functions)."),
    max_items: Annotated[
        int | None,
        Field(
            strict=True,
            ge=0,
            le=MAX_INT,
            description=(
                "Cut every list (instruction_mnemonics, constants, strings, call_targets, ...) to"
                " this many items; `truncated` then maps each cut list to how many were left out."
            ),
        ),
    ] = None,
    aggregate_calls: Annotated[
        bool | None,
        Field(
            strict=True,
            description=(
                "call_targets as [{target, count}] with a count per call site (direct imports,"
                ' defined callees by name or func[N], and "<indirect>"), instead of one entry per'
                " indirect site."
            ),
        ),
    ] = None,
) -> dict[str, Any] | None:
    """Static facts of one defined function: what to read before proposing a name.

    Returns {func_index, stable_id, type_signature, call_targets (imports called
    directly, plus "<indirect>" per indirect call site), referenced_strings, raw_name
    (name-section hint or null), instruction_mnemonics, is_exported} plus extras
    (export_names, callees with their names, constants, globals_used,
    memory_accesses, loops, atomic_sites, body_size, instr_count).
    Returns null when the version has no such function or it is imported.
    Called with version_id and func_index only it is the contract's full answer, one
    mnemonic per instruction: about 10 bytes per instruction, several MB for a big
    function (5 MB seen). Pass max_items (e.g. 200) to cut every list, or
    aggregate_calls=true: then an answer above 100 KB has its lists cut and `truncated`
    says how much was left out (read the code with get_disassembly)."""
    facts = read(queries.get_function_facts, version_id, func_index)
    if facts is None:
        return None
    if aggregate_calls:
        facts = dict(facts)
        facts["call_targets"] = read(queries.call_target_counts, version_id, func_index)
    if max_items is not None:
        return cut_lists(facts, max_items, FACT_LISTS)
    if aggregate_calls is not None and len(as_json(facts)) > MAX_ANSWER_BYTES:
        return _fit(facts)
    return facts


@tool(title="Get a function's name record")
def get_symbol(stable_id: StableId) -> dict[str, Any] | None:
    """The annotation record (name and why) of one logical function.

    Returns {stable_id, name, summary, type_signature, provenance, confidence, locked,
    evidence, version_id, updated_at}; provenance is one of human, oracle, export,
    agent, diff-carry; a locked record only a human may change. Returns null when
    the function exists but has no annotation yet."""

    def query(conn: Any, sid: str) -> dict[str, Any] | None:
        sym = queries.get_symbol(conn, sid)
        if sym is None:
            queries.require_stable_id(conn, sid)  # unknown id: a tool error, not null
        return sym

    return read(query, stable_id)


@tool(title="Search names")
def search_symbols(
    query: Text("Case-insensitive substring of a function name.", MAX_BINARY_NAME),
    limit: Count("Maximum number of results (capped at 200).") = 50,
) -> list[dict[str, Any]]:
    """Find named functions by a case-insensitive substring of their name, across all
    versions; one entry per stable_id, sorted by name. An empty query returns [].

    Returns [{stable_id, name, provenance, confidence}]."""
    return read(queries.search_symbols, query, limit)


@tool(title="Diff two versions (pageable)")
def get_diff(
    from_version_id: Count("The older (baseline) version id."),
    to_version_id: Count("The newer version id."),
    only: Annotated[
        list[Literal[DIFF_ONLY]] | None,
        Field(
            description=(
                'Only these classifications, the words of `kbtool diff --only`: "changed" ='
                ' modified, new and deleted (not moved: a move keeps the code); "review" ='
                ' flagged for review; "runtime" = runtime/toolchain code; "added"/"removed"'
                ' = new/deleted; "all" = everything. Turns the answer into a page.'
            )
        ),
    ] = None,
    limit: Limit = None,
    offset: Offset = None,
    order: Annotated[
        Literal["triage", "index"] | None,
        Field(
            description=(
                'Order of `changes`: "triage" = modified functions that look like patches first'
                " (new bounds checks, error paths, widened arithmetic; each with `triage`, `reasons`),"
                ' then new, deleted, moved, unchanged; "index" = by new-side index. Default:'
                " triage for a page (only/limit/offset), index for the full answer."
            )
        ),
    ] = None,
) -> dict[str, Any] | Rendered:
    """What changed between two versions, function by function. Served from a stored
    diff when one was saved, otherwise computed as a pure read (names are not carried
    over and nothing is stored).

    Returns {from, to (labels), from_version_id, to_version_id, stored, summary
    (counts: unchanged, moved, modified, added, removed, runtime_churn, review),
    changes: [{classification (unchanged|moved|modified|new|deleted), from_index,
    to_index, from_stable_id, to_stable_id, score, review, runtime, name, provenance,
    confidence}], from_program, to_program, warning (only when the two versions belong
    to different programs: names never cross programs, the diff compares unrelated
    code)}. Without only/limit/offset every change is listed, the contract's full
    answer: about 250 bytes per function, several MB on a large module (3 MB seen).
    Start with only=["changed"] and limit instead. With any of them, `changes`
    is one page (at most `limit` rows, default 500, and 100 KB) and a `page` object
    {total, offset, next_offset, truncated, note} is added; call again with
    offset=next_offset until it is null. `summary` always counts the whole diff."""
    # the process cache: an agent paging a computed diff must not re-run the matcher on
    # every page (the same report as services.diff.report.get_diff, kept until the KB
    # changes)
    from kbtool.services.diff.cache import DIFF_CACHE

    whole = only is None and limit is None and offset is None
    if whole and order in (None, "index"):
        # kept encoded beside the kept report (services.diff.answer): a new process writes
        # those bytes without reading the report or encoding it again; in memory after that
        return Rendered(read(DIFF_CACHE.answer, from_version_id, to_version_id, as_json))
    from kbtool.services.diff.triage import order_changes

    report = read(DIFF_CACHE.report, from_version_id, to_version_id)
    if whole:
        return {**report, "order": order, "changes": order_changes(report["changes"], order)}
    changes = _page_rows_of(report, order or "triage", only)
    call = call_text(
        "get_diff",
        from_version_id=from_version_id,
        to_version_id=to_version_id,
        only=only,
        limit=limit,
        order=order,
    )
    budget = MAX_ANSWER_BYTES - 2_000 - len(as_json({**report, "changes": []}))
    paged = page_rows(changes, offset or 0, limit, call=call, budget=budget)
    out = {**report, "changes": paged.pop("items"), "order": order or "triage"}
    out["page"] = paged
    return out


#: the rows of the last reports paged (the diff cache's report objects, in an order, filtered
#: by `only`): an agent paging a diff sorts its ~22k rows once, not on every page (~30 ms)
_PAGED: dict[tuple[int, str, tuple[str, ...]], tuple[dict[str, Any], list[dict[str, Any]]]] = {}
_PAGED_KEPT = 8
_PAGED_LOCK = threading.Lock()  # tools run on worker threads (SDK 2.x)


def _page_rows_of(
    report: dict[str, Any], order: str, only: list[str] | None
) -> list[dict[str, Any]]:
    """``report``'s changes in ``order``, only the classifications ``only`` asks for; kept for
    the next page while the diff cache answers the same report object (a new one, once the
    KB changed, is sorted again). The rows are the report's own dicts, as before."""
    key = (id(report), order, tuple(only or ()))
    hit = _PAGED.get(key)
    if hit is not None and hit[0] is report:
        return hit[1]
    from kbtool.services.diff.triage import order_changes

    changes = order_changes(report["changes"], order)
    if only:
        from kbtool.render.terminal import keep_change, parse_only

        wanted = parse_only(list(only))
        changes = [c for c in changes if keep_change(c, wanted)]
    with _PAGED_LOCK:
        while len(_PAGED) >= _PAGED_KEPT:
            _PAGED.pop(next(iter(_PAGED)))
        _PAGED[key] = (report, changes)
    return changes


@tool(title="Export names as text", text=True)
def export_kb_text(
    version_id: VersionId,
    offset: Offset = None,
    limit: Limit = None,
    knowledge: Annotated[
        bool,
        Field(
            strict=True,
            description=(
                "Also the '# knowledge' lines after the rows: comments, line comments, prototypes,"
                " local and data names (and types), as `kbtool export` writes them."
            ),
        ),
    ] = True,
) -> str:
    """The version's names as git-diffable plain text (stable across runs), returned
    as text, not JSON: a "# kbtool KB export" comment line, a version line, a
    tab-separated header, then one row per function in index order with index,
    stable_id, name, provenance, confidence, type and summary.
    Without offset/limit the whole export comes in one answer, the contract's: about 200
    bytes per function, several MB on a large module (2.5 MB seen): pass offset/limit. With them, the three header lines come first, then
    at most `limit` rows (default 500, at most 100 KB) from row `offset`, and when rows
    remain a last line "# kbtool: truncated: ... offset=N" says what to call next.
    knowledge=false leaves out the '# knowledge' lines (they are paged like rows)."""
    from kbtool.services import names_io

    text = read(names_io.export_text, version_id, knowledge=knowledge)
    if offset is None and limit is None:
        return text
    lines = text.splitlines()
    head, rows = lines[:3], lines[3:]
    call = call_text("export_kb_text", version_id=version_id, limit=limit)
    paged = page_rows(rows, offset or 0, limit, call=call)
    out = head + paged["items"]
    if paged["truncated"] or (offset or 0) >= len(rows):
        out.append(f"# kbtool: truncated: {paged['note']}")
    return "\n".join(out) + "\n"


@tool(title="Propose a name (gated)", read_only=False, idempotent=True)
def propose_symbol(
    stable_id: StableId,
    name: Text(
        "A C-like identifier naming what the function does, optionally qualified"
        " with ::. Placeholders (sub_1234, func_12), keywords and sentences are"
        " refused.",
        MAX_NAME,
    ),
    summary: Text(
        "What the function does: purpose, parameters, behaviour (plain text;"
        " newlines and tabs kept, other control characters removed).",
        MAX_SUMMARY,
    ) = "",
    # a JSON number 0..1 (1 and 0 included); never a boolean or a string
    confidence: Annotated[
        float,
        Field(
            strict=True,
            ge=0.0,
            le=1.0,
            allow_inf_nan=False,
            description="How sure you are, 0.0 to 1.0.",
        ),
    ] = 0.5,
) -> dict[str, Any]:
    """Propose a name (and optionally a summary) for a function. The proposal first goes
    through the same verifier as run_agent_pass (a C-like identifier that is not a
    keyword, a tool placeholder such as sub_1234 or FUN_00401000, an instruction or a
    sentence, not already the name of another function of the version, and not
    contradicted by the function's facts), then the KB's gate decides, recording
    provenance "agent" and actor "agent:mcp": written when the function is unnamed or
    only diff-carried; over an oracle, export or agent name only with a strictly higher
    confidence; never over a human name (locked or not). Every gate decision is kept in
    the function's history.

    Returns {written, reason}; written false means the current name stays, and a reason
    starting "verifier:" says what the verifier refused."""

    from kbtool.services.propose import propose_name  # the verifier: loaded on first use

    conn = open_rw(kb_path(), create=False)
    try:
        return propose_name(conn, stable_id, name, summary, confidence, "propose_symbol", {})
    finally:
        conn.close()


@tool(title="Propose names in a batch (gated)", read_only=False, idempotent=True)
def propose_symbols(
    proposals: Annotated[
        list[Proposal],
        Field(
            min_length=1,
            max_length=MAX_BATCH,
            description=(
                f"1..{MAX_BATCH} proposals {{stable_id, name, summary, confidence}}; split larger"
                " batches."
            ),
        ),
    ],
) -> list[dict[str, Any]]:
    """Propose names for many functions in one call (up to 100), e.g. a page of
    list_functions(unnamed_only=true) you have read the facts of. Each proposal goes
    through the verifier and the KB's gate on its own, exactly as propose_symbol would
    (provenance "agent", actor "agent:mcp"; never over a human name; over an oracle,
    export or agent name only with a strictly higher confidence), and is committed on its
    own: an unknown stable_id is refused for that entry only, and a name written earlier
    in the batch is taken for the later ones.

    Returns one decision per proposal, in order: [{stable_id, written, reason}]
    (at most 100 entries, a few KB)."""
    from kbtool.services.propose import propose_name  # the verifier: loaded on first use

    out: list[dict[str, Any]] = []
    names: dict[int, dict[int, str]] = {}  # version -> index -> name, kept up to date
    conn = open_rw(kb_path(), create=False)
    try:
        for p in proposals:
            try:
                decision = propose_name(
                    conn, p.stable_id, p.name, p.summary, p.confidence, "propose_symbols", names
                )
            except (UnknownStableIdError, ValueError) as exc:
                decision = {
                    "written": False,
                    "reason": message(exc)
                    if isinstance(exc, KBError)
                    else str(exc).splitlines()[0],
                }
            out.append({"stable_id": p.stable_id, **decision})
    finally:
        conn.close()
    return out
