"""Code of a version's functions, with the KB's names: disassembly, lifted C, call graph, diff.

Every surface (CLI ``kbtool code``, the TUI code screen, ``/api/disasm`` and
``/api/callgraph``, the MCP ``get_disassembly``/``get_lifted_c`` tools) calls here::

    disassembly(conn, version_id, func_index)   # the contract's Disassembly object
    listing(conn, version_id, func_index)       # its disassembly as instruction records
    module_c(conn, version_id)                  # the whole module's C, one chunk per function
    module_listing(conn, version_id)            # the whole module's disassembly, likewise
    callgraph(conn, version_id)                 # the contract's Call graph object
    function_diff(conn, stable_id, from_version_id, to_version_id)

The work is split by concern: :mod:`.code_prepared` (versions prepared for code views, the
caches), :mod:`.code_structs` (struct members for the C), :mod:`.code_function` (one
function's code, windows, the whole module's), :mod:`.code_graph` (call graph, neighbours)
and :mod:`.code_diff` (the per-function diff); this module is their one entry point.

The module bytes come from the KB (``queries.module_bytes``); function names are the KB's
(any provenance) over the module's own (name section, exports, import fields); global and
local names are the module's. A prepared module (:func:`kbtool.lift.prepare`) is kept in an
in-process LRU per (KB file, version id, change token), so on-demand calls after the first
cost one small query plus the function's own work; a rename changes the token and the next
call sees the new name. Errors are KB errors with one-line messages: unknown version
(``UnknownVersionError``), index out of range (``UnknownFunctionError``), an import
(``ImportedFunctionError``), bytes not stored (``ModuleBytesMissingError``).
"""

from __future__ import annotations

import sqlite3

from kbtool.services import code_graph, code_kept_c
from kbtool.services.code_diff import callee_pairing, diff_lines, function_diff, function_diff_at
from kbtool.services.code_function import (
    FIRST_SCREEN,
    HUGE_INSTRUCTIONS,
    body_instructions,
    code_window,
    disassembly,
    function_code,
    instr_targets,
    lifted_c,
    listing,
    listing_calls,
    module_c,
    module_listing,
)
from kbtool.services.code_graph import callgraph, neighbours
from kbtool.services.code_prepared import (
    _LOCK,
    _RESULTS,
    MAX_DATA_LABELS,
    PARSED_CACHE,
    PREPARED_CACHE,
    RESULT_CACHE,
    CodeModule,
    CodeUnavailableError,
    clear_cache,
    code_module,
    is_cached,
    prepare_latest_soon,
    prepare_soon,
)
from kbtool.services.code_structs import StructFields

__all__ = [
    "FIRST_SCREEN",
    "HUGE_INSTRUCTIONS",
    "MAX_DATA_LABELS",
    "PARSED_CACHE",
    "PREPARED_CACHE",
    "RESULT_CACHE",
    "CodeModule",
    "CodeUnavailableError",
    "StructFields",
    "answer_held",
    "body_instructions",
    "callee_pairing",
    "callgraph",
    "clear_cache",
    "code_module",
    "code_window",
    "diff_lines",
    "disassembly",
    "function_code",
    "function_diff",
    "function_diff_at",
    "instr_targets",
    "is_cached",
    "prepare_latest_soon",
    "prepare_soon",
    "lifted_c",
    "listing",
    "listing_calls",
    "module_c",
    "module_listing",
    "neighbours",
    "warm_views",
]


def warm_views(conn: sqlite3.Connection, version_id: int) -> None:
    """Prepare ``version_id`` (:func:`code_module`) and build what a code view's first open
    would build on it: the neighbours' tables (:func:`kbtool.services.code_graph.warm`) and
    the structs' layouts the lifted C reads (laid out on first use: ~40 ms on ffmpeg). For a
    front-end's preparation thread (the TUI's): no code screen's first open pays them."""
    cm = code_module(conn, version_id)
    code_graph.warm(cm)
    code_kept_c.warm(cm)  # a huge function's kept C is read at its first open
    if cm.fields:  # a hook at all (a lazy one says so without laying out)
        _ = cm.fields.layouts  # laid out now


def answer_held(conn: sqlite3.Connection, version_id: int, func_index: int) -> bool:
    """Whether this process holds a function's whole answer (a prepared version's, as
    :func:`function_code` keeps it): asked again, it decodes, renders and lifts nothing
    (~1 ms: its few queries), whatever the function's size. (Here, not in
    :mod:`.code_function`: the kept C's digest covers that file.)"""
    cm = code_module(conn, version_id)
    with _LOCK:
        hit = _RESULTS.get((id(cm), func_index))
    return hit is not None and hit[0] is cm
