"""kbtool's MCP server: the registered tools (:mod:`kbtool.mcp.registry`) served by the MCP
SDK's server over stdio (what ``kbtool mcp`` runs).

:func:`build_server` checks the KB, loads the SDK (:mod:`kbtool.mcp.compat`: 1.2 and later,
2.x), registers every tool of the registry bound to the KB, and returns a server whose
``run()`` serves stdio behind the line bounds of :mod:`kbtool.mcp.linebound`.

Results: each tool answers with exactly one text block, the JSON of its shape (``null``
included), except the plain-text tools (``export_kb_text``, the code tools). Errors: one
line each (:mod:`kbtool.mcp.errors`). The tools, their inputs and answers:
docs/interface.md. The SDK (``mcp``) is imported in :func:`build_server` only, so the rest
of kbtool works without it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.kb.db import open_ro
from kbtool.kb.errors import KBMissingError
from kbtool.mcp import compat
from kbtool.mcp.errors import as_tool
from kbtool.mcp.registry import MAX_INT, as_json, as_text

__all__ = [
    "INSTRUCTIONS",
    "MAX_INT",
    "SERVER_NAME",
    "ToolSpec",
    "as_json",
    "as_text",
    "build_server",
    "check_kb",
    "tool_specs",
]

log = logging.getLogger("kbtool.mcp")

SERVER_NAME = "kbtool"
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
    """One registered tool bound to a KB: ``fn`` takes the validated arguments and returns
    the answer's text, raising only the given tool error (one line)."""

    fn: Callable[..., str]
    read_only: bool
    title: str | None
    idempotent: bool

    @property
    def name(self) -> str:
        return self.fn.__name__


def tool_specs(db_path: str | Path, tool_error: type[Exception]) -> list[ToolSpec]:
    """Every registered tool bound to the KB at ``db_path`` (already checked), in order."""
    from kbtool.mcp import registry

    path = str(Path(db_path).resolve())
    return [
        ToolSpec(as_tool(t.fn, t.render, tool_error, path), t.read_only, t.title, t.idempotent)
        for t in registry.load()
    ]


def __getattr__(name: str) -> Any:
    """``TOOL_NAMES``: the registered tools' names, in order (loads the tool modules)."""
    if name == "TOOL_NAMES":
        from kbtool.mcp import registry

        return tuple(t.name for t in registry.load())
    if name == "MAX_BATCH":
        from kbtool.mcp.tools_core import MAX_BATCH

        return MAX_BATCH
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_server(db_path: str | Path, *, log_level: str = "WARNING") -> Any:
    """The MCP SDK's server for the KB at ``db_path``; ``server.run()`` blocks serving stdio.

    Raises ``FileNotFoundError`` (a :class:`KBMissingError`) when the file does not exist,
    another :class:`KBError` when it is not a readable KB, and ``RuntimeError`` with an
    install hint when the ``mcp`` package is absent or unusable.
    """
    path = check_kb(db_path)
    sdk = compat.load()
    server = sdk.new_server(SERVER_NAME, instructions=INSTRUCTIONS, log_level=log_level)
    for spec in tool_specs(path, sdk.tool_error):
        fn = _with_progress(spec.fn, server) if spec.fn.__name__ in PROGRESS_TOOLS else spec.fn
        if spec.fn.__name__ in PREPARE_AHEAD_TOOLS:
            fn = _prepares_ahead(fn, path)
        if spec.fn.__name__ == "get_diff":
            fn = _reads_report_after(fn, path)
        fn = _spliced(fn)
        sdk.add_tool(
            server, fn, read_only=spec.read_only, title=spec.title, idempotent=spec.idempotent
        )
    _stdio_only(server)
    log.info("kbtool MCP server on %s (mcp SDK %s)", path, sdk.version)
    return server


PROGRESS_TOOLS = ("run_agent_pass",)
#: a version's function list is how an agent opens it: its code is what it reads next
PREPARE_AHEAD_TOOLS = ("list_functions",)


def _prepares_ahead(fn: Callable[..., str], path: Path) -> Callable[..., str]:
    """``fn`` that, once answered, prepares its ``version_id`` for the code tools on a
    background thread (:func:`kbtool.services.code.prepare_soon`) when the server is next
    quiet (:mod:`kbtool.mcp.idle`: never while a request is served): the first
    get_disassembly / get_lifted_c of that version does not parse the module then."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> str:
        answer = fn(*args, **kwargs)
        vid = kwargs.get("version_id")
        if isinstance(vid, int) and not isinstance(vid, bool):
            from kbtool.mcp import idle

            idle.when_quiet(("prepare", str(path), vid), functools.partial(_prepare, path, vid))
        return answer

    return tool


def _reads_report_after(fn: Callable[..., str], path: Path) -> Callable[..., str]:
    """``get_diff`` that, once a whole answer is out (served from the text kept encoded:
    :mod:`kbtool.services.diff.answer`, without the report), reads the report behind it on
    the background thread when the server is next quiet (:mod:`kbtool.mcp.idle`), so that
    a page of that diff asked after the agent has read the answer comes from memory, as
    when the whole answer was made from the report (~50-100 ms on ffmpeg otherwise)."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> str:
        answer = fn(*args, **kwargs)
        a, b = kwargs.get("from_version_id"), kwargs.get("to_version_id")
        whole = all(kwargs.get(k) is None for k in ("only", "limit", "offset"))
        if whole and kwargs.get("order") in (None, "index") and _ints(a, b):
            from kbtool.mcp import idle

            job = functools.partial(_read_report, path, a, b)
            idle.when_quiet(("diff", str(path), a, b), job)
        return answer

    return tool


def _spliced(fn: Callable[..., str]) -> Callable[..., str]:
    """``fn`` whose big ASCII answer goes to the SDK as a stand-in the stdio guard replaces
    by the answer as it writes the line (:mod:`kbtool.mcp.splice`): the SDK does not
    serialize several MB again before the first byte leaves."""
    from kbtool.mcp.splice import stand_in

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> str:
        return stand_in(fn(*args, **kwargs))

    return tool


def _ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _read_report(path: Path, a: int, b: int) -> None:
    """The report of ``a`` -> ``b`` into the diff cache's memory (a hit when it is there)."""
    from kbtool.mcp import reads
    from kbtool.services.diff.cache import DIFF_CACHE

    reads.pool_for(str(path)).read(DIFF_CACHE.report, a, b)


def _prepare(path: Path, version_id: int) -> None:
    """Prepare ``version_id`` for the code tools (on the services' one background thread)."""
    from kbtool.services import code as code_service

    code_service.prepare_soon(str(path), version_id).result()


def _import_diff() -> None:
    """The modules a first ``get_diff`` imports (~17-20 ms of its CPU on a fresh server),
    imported on a thread of their own as the server starts: an agent's first diff then
    reads its kept answer at once."""
    import importlib

    for name in ("kbtool.services.diff.cache", "kbtool.services.diff.answer"):
        importlib.import_module(name)
    importlib.import_module("kbtool.services.json_answer")
    importlib.import_module("kbtool.mcp.splice")
    # the queries a first diff's key reads (the KB's queries load lazily: ~11 ms in the call)
    for name in ("diffs", "events", "functions", "symbols"):
        importlib.import_module(f"kbtool.kb.queries.{name}")


def _with_progress(fn: Callable[..., str], server: Any) -> Callable[..., str]:
    """``fn`` taking the SDK's request context too, so its :mod:`kbtool.mcp.progress` reports
    become the SDK's ``notifications/progress`` (from any thread of the call; the SDK runs a
    sync tool in a worker thread and sends nothing when the client gave no progressToken)."""
    import asyncio
    import importlib

    import anyio.from_thread

    from kbtool.mcp import progress

    context_cls = getattr(
        importlib.import_module(type(server).__module__.rsplit(".", 1)[0]), "Context", None
    )
    if context_cls is None:  # an SDK without request contexts: no progress, same tool
        return fn

    @functools.wraps(fn)
    def tool(**kwargs: Any) -> str:
        ctx = kwargs.pop("kbtool_ctx")
        try:
            loop = anyio.from_thread.run_sync(asyncio.get_running_loop)
        except RuntimeError:  # an SDK that runs sync tools on its event loop (1.2): no progress
            return fn(**kwargs)

        def sink(done: float, total: float | None, message: str | None) -> None:
            asyncio.run_coroutine_threadsafe(ctx.report_progress(done, total, message), loop)

        token = progress.bind(sink)
        try:
            return fn(**kwargs)
        finally:
            progress.unbind(token)

    sig = inspect.signature(fn)
    ctx_param = inspect.Parameter(
        "kbtool_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=context_cls
    )
    tool.__signature__ = sig.replace(parameters=[*sig.parameters.values(), ctx_param])
    tool.__annotations__ = {**fn.__annotations__, "kbtool_ctx": context_cls}
    return tool


def _stdio_only(server: Any) -> None:
    """The transport is stdio only (docs/interface.md): ``run()`` refuses any other, and serves
    behind :func:`kbtool.mcp.linebound.guarded_stdio` (line length and nesting bounds)."""
    sdk_run = server.run

    def run(transport: str = "stdio") -> None:
        if transport != "stdio":
            raise ValueError(f"kbtool's MCP server speaks stdio only, not {transport!r}")
        from kbtool.mcp.linebound import guarded_stdio
        from kbtool.services import heap

        heap.enable()  # a long-lived process: no full collection walks its caches
        # at once, beside the SDK's own start (a client calls back to back: the server may
        # never be quiet before its first get_diff)
        threading.Thread(target=_import_diff, name="kbtool-mcp-imports", daemon=True).start()
        with guarded_stdio():  # the SDK reads lines unbounded: the bounds stand in front
            sdk_run("stdio")

    server.run = run
