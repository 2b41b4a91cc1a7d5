"""The MCP tools over the KB (contract part 4, MCP table), for both servers.

:func:`tool_specs` binds every tool to a KB file; :mod:`kbtool.mcp.wire` serves them over
stdio (what ``kbtool mcp`` runs) and :func:`build_server` registers them with the MCP
SDK's server (``KBTOOL_MCP_SDK=1``, and the reference the tests compare with). Reads borrow
a reused read-only connection (:mod:`kbtool.mcp.reads`); each gated write opens its own
read-write connection; answers come only from :mod:`kbtool.kb.queries`,
:func:`kbtool.services.diff.report.get_diff` and the gate :func:`kbtool.kb.gate.upsert_symbol`.

Results: each tool answers with exactly one text block, the JSON of the contract's shape
(``null`` included), except ``export_kb_text`` whose block is the plain-text export.
Errors: a KB error (unknown version id or stable_id, missing or locked KB) becomes an MCP
tool error carrying its one-line message; anything unexpected is logged with its
traceback on stderr and reaches the client as a generic one-line tool error.

The SDK (``mcp``) is imported lazily in :func:`build_server`, so the rest of kbtool works
without it. No ``from __future__ import annotations`` here: the SDK reads the tools'
parameter annotations (``Annotated[..., Field(...)]``) as live objects.
"""

import functools
import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError, KBMissingError, UnknownStableIdError, UnknownVersionError
from kbtool.kb.gate import MAX_BINARY_NAME, MAX_NAME, MAX_STABLE_ID, MAX_SUMMARY, upsert_symbol
from kbtool.mcp import compat, reads
from kbtool.mcp.paging import (
    MAX_ANSWER_BYTES,
    MAX_PAGE,
    call_text,
    cut_lists,
    page_limit,
    page_rows,
    page_window,
)
from kbtool.textutil import json_safe

log = logging.getLogger("kbtool.mcp")

SERVER_NAME = "kbtool"
MAX_INT = 2**63 - 1  # SQLite's largest integer: every id/index/limit argument is 0..MAX_INT
AGENT_PROVENANCE = "agent"
AGENT_ACTOR = "agent:mcp"
MAX_BATCH = 100  # proposals per propose_symbols call
TOOL_NAMES = (
    "list_versions", "coverage", "list_functions", "get_function_facts", "get_symbol",
    "search_symbols", "get_diff", "export_kb_text", "propose_symbol",
    "agent_backends", "run_agent_pass", "list_suggestions",
    "analyze_version",
    "get_disassembly", "get_lifted_c",
    "get_callers", "get_callees", "list_strings", "get_string_xrefs", "find_functions",
    "list_globals", "list_memory_regions", "propose_symbols",
    "get_xrefs_to", "list_data", "read_memory",
    "set_comment", "set_prototype", "rename_local", "name_data", "get_comments", "get_prototype",
)
TITLES = {
    "list_versions": "List versions", "coverage": "Naming coverage",
    "list_functions": "List functions (pageable)", "get_function_facts": "Function facts",
    "get_symbol": "Get a function's name record", "search_symbols": "Search names",
    "get_diff": "Diff two versions (pageable)", "export_kb_text": "Export names as text",
    "propose_symbol": "Propose a name (gated)", "agent_backends": "Agent backends",
    "run_agent_pass": "Run an agent naming pass (gated)",
    "analyze_version": "Static analysis (gated)", "get_disassembly": "Disassembly",
    "get_lifted_c": "Decompiled C", "get_callers": "Callers", "get_callees": "Callees",
    "list_strings": "List strings", "get_string_xrefs": "String cross-references",
    "find_functions": "Find functions by string, constant or call",
    "list_globals": "List globals", "list_memory_regions": "Memory regions",
    "propose_symbols": "Propose names in a batch (gated)",
    "list_suggestions": "Agent name suggestions (pageable)",
    "get_xrefs_to": "Cross-references to a function, global, address or string",
    "list_data": "Data items (pageable)", "read_memory": "Read initial memory (hex + ascii)",
}
# gated writes whose repetition changes nothing more (the gate refuses an equal proposal)
IDEMPOTENT_WRITES = {"propose_symbol", "propose_symbols", "analyze_version"}
ENTRY_FIELDS = ("index", "stable_id", "type", "name", "provenance", "confidence")
FACT_LISTS = (
    "call_targets", "referenced_strings", "instruction_mnemonics", "export_names", "callees",
    "constants", "globals_used", "memory_accesses",
)
# the words of `kbtool diff --only` (kbtool.render.terminal.parse_only defines them)
DIFF_ONLY = ("unchanged", "moved", "modified", "new", "deleted", "changed", "review", "runtime",
             "added", "removed", "all")
INSTRUCTIONS = """\
kbtool is a knowledge base of the releases (versions) of a WebAssembly module and the names
of their functions. Start with list_versions: its ids are the version_id every other tool
takes. A function has an index inside one version and a stable_id that names the same
logical function across versions; names are attached to stable_ids. To name functions:
list_functions (name null = unnamed) -> get_function_facts -> propose_symbol. Your names
are recorded as provenance 'agent' and never replace a human name.
Big modules: page. Pass offset/limit (and filters such as unnamed_only) to list_functions,
get_diff and export_kb_text, max_items/aggregate_calls to get_function_facts; a paged answer
is {items, total, offset, next_offset, truncated, note} (get_diff: the report plus a `page`
object) and never exceeds 100 KB; call again with offset=next_offset until it is null.
Called without paging inputs, list_functions, get_function_facts, get_diff and
export_kb_text give their whole answer, which can be several MB on a large module; every
other tool is bounded by default (a page of at most 100 KB with a note saying how to go on)."""


def check_kb(db_path: str | Path) -> Path:
    """The KB file, resolved; :class:`KBMissingError` when it does not exist, another
    :class:`KBError` when it is not a readable KB."""
    path = Path(db_path)
    if not path.exists():
        raise KBMissingError(
            f"no KB at {path} (create one with `kbtool ingest FILE` or `kbtool demo`)"
        )
    open_ro(path).close()  # fail now, not on the first call, when it is not a KB
    return path.resolve()


@dataclass(frozen=True)
class ToolSpec:
    """One tool as both servers register it: ``fn`` takes the validated arguments and
    returns the answer's text, raising only the given tool error (one line)."""

    fn: Callable[..., str]
    read_only: bool
    title: str | None
    idempotent: bool

    @property
    def name(self) -> str:
        return self.fn.__name__


def tool_specs(db_path: str | Path, tool_error: type[Exception]) -> list[ToolSpec]:
    """Every tool bound to the KB at ``db_path`` (already checked), in registration order."""
    return [
        ToolSpec(_as_tool(fn, render, tool_error), read_only, TITLES.get(fn.__name__),
                 fn.__name__ in IDEMPOTENT_WRITES if not read_only else True)
        for fn, read_only, render in _tools(str(Path(db_path).resolve()))
    ]


def build_server(db_path: str | Path, *, log_level: str = "WARNING") -> Any:
    """The MCP SDK's server for the KB at ``db_path``; ``server.run()`` blocks serving stdio.
    ``kbtool mcp`` serves with :mod:`kbtool.mcp.wire` instead (same tools, no SDK import);
    this one is the reference the tests compare it with, and ``KBTOOL_MCP_SDK=1`` selects it.

    Raises ``FileNotFoundError`` (a :class:`KBMissingError`) when the file does not exist,
    another :class:`KBError` when it is not a readable KB, and ``RuntimeError`` with an
    install hint when the ``mcp`` package is absent or unusable.
    """
    path = check_kb(db_path)
    sdk = compat.load()
    server = sdk.new_server(SERVER_NAME, instructions=INSTRUCTIONS, log_level=log_level)
    for spec in tool_specs(path, sdk.tool_error):
        fn = _with_progress(spec.fn, server) if spec.fn.__name__ in PROGRESS_TOOLS else spec.fn
        sdk.add_tool(server, fn, read_only=spec.read_only, title=spec.title,
                     idempotent=spec.idempotent)
    _stdio_only(server)
    log.info("kbtool MCP server on %s (mcp SDK %s)", path, sdk.version)
    return server


PROGRESS_TOOLS = ("run_agent_pass",)


def _with_progress(fn: Callable[..., str], server: Any) -> Callable[..., str]:
    """``fn`` taking the SDK's request context too, so its :mod:`kbtool.mcp.progress` reports
    become the SDK's ``notifications/progress`` (from any thread of the call; the SDK runs a
    sync tool in a worker thread and sends nothing when the client gave no progressToken)."""
    import asyncio
    import importlib

    import anyio.from_thread

    from kbtool.mcp import progress

    context_cls = getattr(importlib.import_module(type(server).__module__.rsplit(".", 1)[0]),
                          "Context", None)
    if context_cls is None:  # an SDK without request contexts: no progress, same tool
        return fn

    @functools.wraps(fn)
    def tool(**kwargs: Any) -> str:
        ctx = kwargs.pop("kbtool_ctx")
        loop = anyio.from_thread.run_sync(asyncio.get_running_loop)

        def sink(done: float, total: float | None, message: str | None) -> None:
            asyncio.run_coroutine_threadsafe(ctx.report_progress(done, total, message), loop)

        token = progress.bind(sink)
        try:
            return fn(**kwargs)
        finally:
            progress.unbind(token)

    sig = inspect.signature(fn)
    ctx_param = inspect.Parameter("kbtool_ctx", inspect.Parameter.KEYWORD_ONLY,
                                  annotation=context_cls)
    tool.__signature__ = sig.replace(parameters=[*sig.parameters.values(), ctx_param])
    tool.__annotations__ = {**fn.__annotations__, "kbtool_ctx": context_cls}
    return tool


def _stdio_only(server: Any) -> None:
    """The contract's transport is stdio only: ``run()`` refuses any other, and serves
    behind :func:`kbtool.mcp.linebound.guarded_stdio` (line length and nesting bounds)."""
    sdk_run = server.run

    def run(transport: str = "stdio") -> None:
        if transport != "stdio":
            raise ValueError(f"kbtool's MCP server speaks stdio only, not {transport!r}")
        from kbtool.mcp.linebound import guarded_stdio

        with guarded_stdio():  # the SDK reads lines unbounded: the bounds stand in front
            sdk_run("stdio")

    server.run = run


# ---------------------------------------------------------------- results and errors

def as_json(value: Any) -> str:
    """Compact JSON (UTF-8 text as is, but C1 controls, U+2028/U+2029 and bidi controls
    written as ``\\uXXXX``: an agent's terminal or a JavaScript client never meets them raw);
    pydantic-core's encoder, ~4x faster on big lists, is there whenever the SDK is."""
    try:
        from pydantic_core import to_json
    except ImportError:  # pragma: no cover - the SDK depends on pydantic
        return json_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return json_safe(to_json(value).decode("utf-8"))


def as_text(value: str) -> str:
    return value


def _as_tool(fn: Callable[..., Any], render: Callable[[Any], str], tool_error: type[Exception]) -> Callable[..., str]:
    """``fn`` as an SDK tool: same name, docstring and parameters; returns one string;
    raises only the SDK's tool error, with a one-line message and no traceback."""

    @functools.wraps(fn)
    def tool(**kwargs: Any) -> str:
        try:
            return render(fn(**kwargs))
        except KBError as exc:
            raise tool_error(_message(exc)) from None
        except OverflowError:  # an integer SQLite cannot hold (the schemas bound them too)
            raise tool_error(f"a number is out of range (0..{MAX_INT})") from None
        except Exception as exc:
            problem = _disk_problem(exc)  # the KB's disk: an answer the agent can act on
            if problem is not None:
                log.warning("tool %s: %s", fn.__name__, exc)
                raise tool_error(f"{problem}: {fn.__name__} could not write the KB; free some"
                                 " space (or check the disk) and call it again") from None
            log.exception("tool %s failed", fn.__name__)
            raise tool_error(
                f"internal error in {fn.__name__}; the server's log (stderr) has the details"
            ) from None

    tool.__signature__ = inspect.signature(fn).replace(return_annotation=str)
    tool.__annotations__ = {**fn.__annotations__, "return": str}
    return tool


def _disk_problem(exc: BaseException) -> str | None:
    """``"disk full"`` for SQLite's SQLITE_FULL or an OSError ENOSPC/EDQUOT/EFBIG,
    ``"disk I/O error"`` for SQLite's SQLITE_IOERR (e.g. a file size limit), else None."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        return "disk full" if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else None
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return "disk full"
    if (code is not None and code & 0xFF == sqlite3.SQLITE_IOERR) or "disk I/O error" in str(exc):
        return "disk I/O error"
    return None


def _message(exc: KBError) -> str:
    text = (str(exc) or exc.__class__.__name__).splitlines()[0]
    if isinstance(exc, UnknownVersionError):
        return text + "; over MCP, list_versions gives the ids"
    if isinstance(exc, UnknownStableIdError):
        return text + "; over MCP, list_functions(version_id) or search_symbols(query) give them"
    return text


def _propose(conn: Any, stable_id: str, name: str, summary: str, confidence: float,
             tool: str, names: dict[int, dict[int, str]]) -> dict[str, Any]:
    """One MCP proposal: the agent verifier (:mod:`kbtool.agents.verifier`, the one
    ``run_agent_pass`` uses), then the gate. ``names`` caches each version's names (index ->
    name) across a batch and learns the names written."""
    from kbtool.agents.proposal import Proposal as AgentProposal
    from kbtool.agents.verifier import clean_summary, verify

    where = queries.functions_by_stable_id(conn, stable_id)
    if not where:  # the gate's one-line unknown-stable_id error
        queries.require_stable_id(conn, stable_id)
    vid, idx = (where[-1]["version_id"], where[-1]["index"]) if where else (None, None)
    current = queries.get_symbol(conn, stable_id)
    ctx: dict[str, Any] = {}
    taken: set[str] = set()
    if vid is not None:
        facts = queries.get_function_facts(conn, vid, idx)
        if facts is not None:
            ctx = _facts_context(facts)
        if vid not in names:
            names[vid] = queries.function_names(conn, vid)
        taken = {n for i, n in names[vid].items() if i != idx}
    if current and current.get("name"):
        ctx["existing"] = {"name": current["name"], "confidence": current["confidence"],
                           "provenance": current["provenance"]}
    proposal = AgentProposal(index=idx if idx is not None else -1, name=name,
                             confidence=confidence, summary=summary, stable_id=stable_id)
    verdict = verify(proposal, ctx, taken)
    if not verdict.ok:
        return {"written": False, "reason": f"verifier: {verdict.reason}"}
    decision = upsert_symbol(
        conn, stable_id, name,
        provenance=AGENT_PROVENANCE, actor=AGENT_ACTOR, confidence=confidence,
        summary=clean_summary(summary) or None,
        evidence={"actor": AGENT_ACTOR, "tool": tool},
    )
    if decision["written"] and vid is not None:
        names[vid][idx] = name
    return decision


def _facts_context(facts: dict[str, Any]) -> dict[str, Any]:
    """The parts of an agent context the verifier reads, from the stored function facts."""
    stores = sum(1 for m in facts.get("memory_accesses") or () if "store" in m["op"])
    return {
        "type": facts.get("type_signature") or "",
        "callees": facts.get("callees") or [],
        "call_indirect": facts.get("indirect_call_sites") or 0,
        "mnemonics": sorted(set(facts.get("instruction_mnemonics") or ())),
        "mem_ops": {"stores": stores, "loads": len(facts.get("memory_accesses") or ()) - stores},
        "globals": facts.get("globals_used") or [],
        "strings": facts.get("referenced_strings") or [],
    }


# ---------------------------------------------------------------- the tools

def _tools(db_path: str) -> list[tuple[Callable[..., Any], bool, Callable[[Any], str]]]:
    """(function, read_only, renderer) for every tool, bound to ``db_path``."""
    # pydantic comes with the MCP SDK, which is optional: imported when the server is built
    from pydantic import BaseModel, ConfigDict, Field

    # the feature tool modules import this one (as_json), so they are loaded here
    from kbtool.mcp import (
        tools_agents,
        tools_analysis,
        tools_code,
        tools_data,
        tools_knowledge,
        tools_types,
        tools_xrefs,
    )


    read = reads.pool_for(db_path).read  # a reused read-only connection per call

    # Strict, bounded arguments: pydantic's lax mode would turn `true` into 1 or 1.0 and
    # let 10**30 reach SQLite; strict mode refuses both with a validation (tool) error.
    def Count(description: str) -> Any:  # noqa: N802 - a type alias factory
        return Annotated[int, Field(strict=True, ge=0, le=MAX_INT, description=description)]

    def Text(description: str, max_length: int) -> Any:  # noqa: N802
        return Annotated[str, Field(strict=True, max_length=max_length, description=description)]

    VersionId = Count("A version id from list_versions.")
    StableId = Text(
        "A function's stable_id (from list_functions, search_symbols or get_function_facts);"
        " it names the same logical function in every version.", MAX_STABLE_ID)

    def list_versions() -> list[dict[str, Any]]:
        """List every ingested version of the module, oldest first. Start here: each
        entry's `id` is the version_id the other tools take.

        Returns [{id, label, toolchain_version, functions, shared_memory}]; `functions`
        counts imported plus defined functions."""
        return read(queries.list_versions)

    def coverage(version_id: VersionId) -> dict[str, Any]:
        """How much of one version is named, to pick where to work or to measure progress.

        Returns {defined, named, coverage_pct, oracle_named, human_named, agent_named,
        export_named, diff_carry_named}; coverage_pct = named / defined * 100."""
        return read(queries.coverage, version_id)

    Offset = Annotated[int | None, Field(strict=True, ge=0, le=MAX_INT, description=(
        "Paging: the first row to return (0-based); use the next_offset of the previous page."
        " Giving it turns the answer into a page."))]
    Limit = Annotated[int | None, Field(strict=True, ge=1, le=MAX_PAGE, description=(
        f"Paging: rows per page (1..{MAX_PAGE}; default 500 when paging). A page is also cut"
        f" at {MAX_ANSWER_BYTES // 1000} KB. Giving it turns the answer into a page."))]

    def list_functions(
        version_id: VersionId,
        include_imports: Annotated[bool, Field(strict=True, description="Also list imported functions.")] = False,
        offset: Offset = None,
        limit: Limit = None,
        unnamed_only: Annotated[bool | None, Field(strict=True, description=(
            "Only functions without a name (what is left to name). Turns the answer into a page."
        ))] = None,
        name_contains: Annotated[str | None, Field(strict=True, max_length=MAX_BINARY_NAME, description=(
            "Only functions whose name contains this (case-insensitive). Turns the answer into a page."
        ))] = None,
        fields: Annotated[list[Literal[ENTRY_FIELDS]] | None, Field(description=(
            "Only these keys in each row (e.g. [\"index\", \"stable_id\"]) to make pages smaller."
            " Turns the answer into a page."))] = None,
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
        call = call_text("list_functions", version_id=version_id,
                         include_imports=include_imports or None, unnamed_only=unnamed_only,
                         name_contains=name_contains, fields=fields, limit=limit)
        keep = [f for f in ENTRY_FIELDS if f in fields] if fields else None
        if not name_contains:  # one page read in SQL, not the whole list
            start = max(0, offset or 0)
            total, window = read(queries.function_list_window, version_id, include_imports,
                                 start, page_limit(limit), bool(unnamed_only))
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

    def get_function_facts(
        version_id: VersionId,
        func_index: Count("The function's index in that version (from list_functions)."),
        max_items: Annotated[int | None, Field(strict=True, ge=0, le=MAX_INT, description=(
            "Cut every list (instruction_mnemonics, constants, strings, call_targets, ...) to"
            " this many items; `truncated` then maps each cut list to how many were left out."
        ))] = None,
        aggregate_calls: Annotated[bool | None, Field(strict=True, description=(
            "call_targets as [{target, count}] with a count per call site (direct imports,"
            " defined callees by name or func[N], and \"<indirect>\"), instead of one entry per"
            " indirect site."))] = None,
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

    def _fit(facts: dict[str, Any]) -> dict[str, Any]:
        n = 4096
        out = cut_lists(facts, n, FACT_LISTS)
        while n > 16 and len(as_json(out)) > MAX_ANSWER_BYTES:
            n //= 2
            out = cut_lists(facts, n, FACT_LISTS)
        return out

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

    def search_symbols(
        query: Text("Case-insensitive substring of a function name.", MAX_BINARY_NAME),
        limit: Count("Maximum number of results (capped at 200).") = 50,
    ) -> list[dict[str, Any]]:
        """Find named functions by a case-insensitive substring of their name, across all
        versions; one entry per stable_id, sorted by name. An empty query returns [].

        Returns [{stable_id, name, provenance, confidence}]."""
        return read(queries.search_symbols, query, limit)

    def get_diff(
        from_version_id: Count("The older (baseline) version id."),
        to_version_id: Count("The newer version id."),
        only: Annotated[list[Literal[DIFF_ONLY]] | None, Field(description=(
            "Only these classifications, the words of `kbtool diff --only`: \"changed\" ="
            " modified, new and deleted (not moved: a move keeps the code); \"review\" ="
            " flagged for review; \"runtime\" = runtime/toolchain code; \"added\"/\"removed\""
            " = new/deleted; \"all\" = everything. Turns the answer into a page."))] = None,
        limit: Limit = None,
        offset: Offset = None,
        order: Annotated[Literal["triage", "index"] | None, Field(description=(
            "Order of `changes`: \"triage\" = modified functions that look like patches first"
            " (new bounds checks, error paths, widened arithmetic; each with `triage`, `reasons`),"
            " then new, deleted, moved, unchanged; \"index\" = by new-side index. Default:"
            " triage for a page (only/limit/offset), index for the full answer."))] = None,
    ) -> dict[str, Any]:
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
        from kbtool.services.diff.triage import order_changes

        report = read(DIFF_CACHE.report, from_version_id, to_version_id)
        if only is None and limit is None and offset is None:
            if order in (None, "index"):
                return report
            return {**report, "order": order,
                    "changes": order_changes(report["changes"], order)}
        changes = order_changes(report["changes"], order or "triage")
        if only:
            from kbtool.render.terminal import keep_change, parse_only

            wanted = parse_only(list(only))
            changes = [c for c in changes if keep_change(c, wanted)]
        call = call_text("get_diff", from_version_id=from_version_id,
                         to_version_id=to_version_id, only=only, limit=limit, order=order)
        budget = MAX_ANSWER_BYTES - 2_000 - len(as_json({**report, "changes": []}))
        paged = page_rows(changes, offset or 0, limit, call=call, budget=budget)
        out = {**report, "changes": paged.pop("items"), "order": order or "triage"}
        out["page"] = paged
        return out

    def export_kb_text(
        version_id: VersionId,
        offset: Offset = None,
        limit: Limit = None,
        knowledge: Annotated[bool, Field(strict=True, description=(
            "Also the '# knowledge' lines after the rows: comments, line comments, prototypes,"
            " local and data names (and types), as `kbtool export` writes them."))] = True,
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

    def propose_symbol(
        stable_id: StableId,
        name: Text("A C-like identifier naming what the function does, optionally qualified"
                   " with ::. Placeholders (sub_1234, func_12), keywords and sentences are"
                   " refused.", MAX_NAME),
        summary: Text("What the function does: purpose, parameters, behaviour (plain text;"
                      " newlines and tabs kept, other control characters removed).", MAX_SUMMARY) = "",
        # a JSON number 0..1 (1 and 0 included); never a boolean or a string
        confidence: Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False,
                                           description="How sure you are, 0.0 to 1.0.")] = 0.5,
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

        conn = open_rw(db_path, create=False)
        try:
            return _propose(conn, stable_id, name, summary, confidence, "propose_symbol", {})
        finally:
            conn.close()

    class Proposal(BaseModel):
        model_config = ConfigDict(extra="forbid")
        stable_id: StableId
        name: Text("A C-like identifier, optionally qualified with ::.", MAX_NAME)
        summary: Text("What the function does (plain text).", MAX_SUMMARY) = ""
        confidence: Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False,
                                           description="How sure you are, 0.0 to 1.0.")] = 0.5

    def propose_symbols(
        proposals: Annotated[list[Proposal], Field(min_length=1, max_length=MAX_BATCH, description=(
            f"1..{MAX_BATCH} proposals {{stable_id, name, summary, confidence}}; split larger"
            " batches."))],
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
        out: list[dict[str, Any]] = []
        names: dict[int, dict[int, str]] = {}  # version -> index -> name, kept up to date
        conn = open_rw(db_path, create=False)
        try:
            for p in proposals:
                try:
                    decision = _propose(conn, p.stable_id, p.name, p.summary, p.confidence,
                                        "propose_symbols", names)
                except (UnknownStableIdError, ValueError) as exc:
                    decision = {"written": False, "reason": _message(exc) if isinstance(
                        exc, KBError) else str(exc).splitlines()[0]}
                out.append({"stable_id": p.stable_id, **decision})
        finally:
            conn.close()
        return out

    return [
        (list_versions, True, as_json),
        (coverage, True, as_json),
        (list_functions, True, as_json),
        (get_function_facts, True, as_json),
        (get_symbol, True, as_json),
        (search_symbols, True, as_json),
        (get_diff, True, as_json),
        (export_kb_text, True, as_text),
        (propose_symbol, False, as_json),
        (propose_symbols, False, as_json),
        *tools_xrefs.tools(db_path),
        *tools_agents.tools(db_path),
        *tools_analysis.tools(db_path),
        *tools_code.tools(db_path),
        *tools_data.tools(db_path),
        *tools_knowledge.tools(db_path),
        *tools_types.tools(db_path),
    ]
