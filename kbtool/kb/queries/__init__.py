"""The shared read-query layer: every surface (CLI, TUI, web, MCP, terminal views) reads here.

Functions take an open connection (read-only or not) and return plain dicts/lists shaped like
the resources of docs/interface.md (Version, Function list entry, Coverage, Annotation record,
Search result, Function facts, History). Unknown ids raise the KB errors of
:mod:`kbtool.kb.errors`, each with a message that says how to find valid ids.

One module per resource; this package re-exports every public name, so callers write
``from kbtool.kb import queries`` and ``queries.list_versions(conn)``:

- :mod:`.versions`: Versions, their coverage, lineages (programs) and the oracle modules.
- :mod:`.symbols`: Annotation records (symbols) of logical functions, and the rows of an export.
- :mod:`.functions`: The functions of a version: list entries, pages, facts, callers and callees.
- :mod:`.search`: Search and navigation: names, strings, constants, cross-references.
- :mod:`.events`: Annotation events: a function's history and renames, the live feed, the change token.
- :mod:`.diffs`: Stored diff reports and the input of the matcher (identities, hashes, memory ops).
- :mod:`.analysis`: Stored analysis: deep-analysis results, threads, recovered structs, analysis runs.
- :mod:`.agents`: Agent pass input, suggestions and the agents' answers.

The package's own import is light: the ``_base`` names (and the KB errors) are loaded with it;
each other module is imported on the first use of one of its names (PEP 562 ``__getattr__``),
so a run that reads only versions (``kbtool ingest``) does not import agents, analysis, events,
search, symbols or their dependencies. ``queries.name`` and ``from kbtool.kb.queries import
name`` both work as before; after the first use the name is a plain attribute.
"""

import importlib
from typing import TYPE_CHECKING, Any

# the KB errors the reads raise, reachable as queries.UnknownVersionError (as before the split)
from kbtool.kb.errors import (  # noqa: F401
    UnknownFunctionError,
    UnknownStableIdError,
    UnknownVersionError,
)
from kbtool.kb.queries._base import (
    LEGACY_PROGRAM,
    SEARCH_CAP,
    Version,
)

# each lazily loaded name -> its module (the names the package re-exports, as before)
_SUBMODULE_NAMES: dict[str, tuple[str, ...]] = {
    "agents": (
        "SUGGESTION_PAGE",
        "agent_answer",
        "agent_answer_counts",
        "agent_model_usage",
        "agent_rows",
        "open_suggestion",
        "suggestions",
    ),
    "analysis": (
        "analysis_result",
        "deep_done",
        "get_analysis",
        "last_analysis_run",
        "module_bytes",
        "structs",
        "structs_for_function",
        "thread_facts",
    ),
    "diffs": (
        "function_identities",
        "matching_rows",
        "mem_offsets_for",
        "mem_ops_for",
        "mem_ops_json_all",
        "mem_ops_json_for",
        "parse_mem_ops",
        "stored_diff_report",
        "stored_diff_stamp",
    ),
    "events": (
        "EVENT_DEFAULT_LATEST",
        "EVENT_PAGE",
        "annotation_events",
        "change_token",
        "events_since",
        "history",
        "last_annotation_event",
        "renames",
    ),
    "functions": (
        "FunctionEntry",
        "callees",
        "callers",
        "function_list_window",
        "function_names",
        "functions_by_stable_id",
        "get_function",
        "get_function_facts",
        "heatmap_cells",
        "heatmap_row",
        "heatmap_rows",
        "list_functions",
    ),
    "search": (
        "call_target_counts",
        "find_functions",
        "function_at_index",
        "function_entries",
        "functions_matching_facts",
        "functions_referencing_string",
        "functions_with_const",
        "functions_with_string",
        "globals_usage",
        "search_symbols",
        "version_strings",
    ),
    "symbols": (
        "annotations_by_index",
        "diff_annotation_rows",
        "export_rows",
        "get_symbol",
        "require_stable_id",
        "stable_id_exists",
    ),
    "versions": (
        "Coverage",
        "coverage",
        "database_file",
        "get_version",
        "has_versions_without_program",
        "hash_rows",
        "label_exists",
        "latest_version_id",
        "lineage_hash_rows",
        "lineage_records",
        "lineage_versions",
        "list_oracles",
        "list_versions",
        "oracle_label_exists",
        "oracle_modules",
        "program_names",
        "stable_id_taken",
        "taken_stable_ids",
        "version_exists",
        "version_info",
        "versions_with_sha256",
    ),
}
_WHERE = {name: mod for mod, names in _SUBMODULE_NAMES.items() for name in names}

if TYPE_CHECKING:  # (the same names, typed, for the checkers; loaded by __getattr__ at run time)
    from kbtool.kb.queries.agents import (
        SUGGESTION_PAGE,
        agent_answer,
        agent_answer_counts,
        agent_model_usage,
        agent_rows,
        open_suggestion,
        suggestions,
    )
    from kbtool.kb.queries.analysis import (
        analysis_result,
        deep_done,
        get_analysis,
        last_analysis_run,
        module_bytes,
        structs,
        structs_for_function,
        thread_facts,
    )
    from kbtool.kb.queries.diffs import (
        function_identities,
        matching_rows,
        mem_offsets_for,
        mem_ops_for,
        mem_ops_json_all,
        mem_ops_json_for,
        parse_mem_ops,
        stored_diff_report,
        stored_diff_stamp,
    )
    from kbtool.kb.queries.events import (
        EVENT_DEFAULT_LATEST,
        EVENT_PAGE,
        annotation_events,
        change_token,
        events_since,
        history,
        last_annotation_event,
        renames,
    )
    from kbtool.kb.queries.functions import (
        FunctionEntry,
        callees,
        callers,
        function_list_window,
        function_names,
        functions_by_stable_id,
        get_function,
        get_function_facts,
        heatmap_cells,
        heatmap_row,
        heatmap_rows,
        list_functions,
    )
    from kbtool.kb.queries.search import (
        call_target_counts,
        find_functions,
        function_at_index,
        function_entries,
        functions_matching_facts,
        functions_referencing_string,
        functions_with_const,
        functions_with_string,
        globals_usage,
        search_symbols,
        version_strings,
    )
    from kbtool.kb.queries.symbols import (
        annotations_by_index,
        diff_annotation_rows,
        export_rows,
        get_symbol,
        require_stable_id,
        stable_id_exists,
    )
    from kbtool.kb.queries.versions import (
        Coverage,
        coverage,
        database_file,
        get_version,
        has_versions_without_program,
        hash_rows,
        label_exists,
        latest_version_id,
        lineage_hash_rows,
        lineage_records,
        lineage_versions,
        list_oracles,
        list_versions,
        oracle_label_exists,
        oracle_modules,
        program_names,
        stable_id_taken,
        taken_stable_ids,
        version_exists,
        version_info,
        versions_with_sha256,
    )


def __getattr__(name: str) -> Any:
    """The first use of a re-exported name: import its module, keep the name here."""
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Coverage",
    "EVENT_DEFAULT_LATEST",
    "EVENT_PAGE",
    "FunctionEntry",
    "LEGACY_PROGRAM",
    "SEARCH_CAP",
    "SUGGESTION_PAGE",
    "Version",
    "agent_answer",
    "agent_answer_counts",
    "agent_model_usage",
    "agent_rows",
    "analysis_result",
    "annotation_events",
    "annotations_by_index",
    "diff_annotation_rows",
    "call_target_counts",
    "callees",
    "callers",
    "change_token",
    "coverage",
    "database_file",
    "deep_done",
    "events_since",
    "export_rows",
    "find_functions",
    "function_at_index",
    "function_entries",
    "function_identities",
    "function_list_window",
    "function_names",
    "functions_by_stable_id",
    "functions_matching_facts",
    "functions_referencing_string",
    "functions_with_const",
    "functions_with_string",
    "get_analysis",
    "get_function",
    "get_function_facts",
    "get_symbol",
    "get_version",
    "globals_usage",
    "has_versions_without_program",
    "hash_rows",
    "heatmap_cells",
    "heatmap_row",
    "heatmap_rows",
    "history",
    "label_exists",
    "last_analysis_run",
    "last_annotation_event",
    "latest_version_id",
    "lineage_hash_rows",
    "lineage_records",
    "lineage_versions",
    "list_functions",
    "list_oracles",
    "list_versions",
    "matching_rows",
    "mem_offsets_for",
    "mem_ops_for",
    "mem_ops_json_all",
    "mem_ops_json_for",
    "module_bytes",
    "open_suggestion",
    "oracle_label_exists",
    "oracle_modules",
    "parse_mem_ops",
    "program_names",
    "renames",
    "require_stable_id",
    "search_symbols",
    "stable_id_exists",
    "stored_diff_report",
    "stored_diff_stamp",
    "structs",
    "structs_for_function",
    "suggestions",
    "stable_id_taken",
    "taken_stable_ids",
    "thread_facts",
    "version_exists",
    "version_info",
    "version_strings",
    "versions_with_sha256",
]
