"""Every query of kbtool.kb.queries returns exactly the shape its TypedDict annotation declares.

The expected keys come from ``typing.get_type_hints(fn)["return"]`` (required keys present, no
undeclared key), nested TypedDicts, lists, dict values and optionals included, so a shape that
drifts from its annotation fails here. Runs on the real demo KB (two zstd releases).
"""

from __future__ import annotations

import sqlite3
import typing
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.queries import shapes as _shapes
from tests.support.shapes import check_shape


def _hints(fn: Any) -> dict[str, Any]:
    """``fn``'s annotations resolved: the query modules import the shapes for type checking
    only (a plain ingest does not load them), so the names are looked up in the shapes module
    too; a name that is neither there nor in the query's module still fails."""
    return get_type_hints(fn, localns=vars(_shapes))


def _shaped(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Call a query and check its result against its return annotation."""
    value = fn(*args, **kwargs)
    seen: list[str] = []
    check_shape(value, _hints(fn)["return"], fn.__name__, seen)
    return value, seen


@pytest.fixture(scope="module")
def kb(demo_kb_master) -> typing.Iterator[sqlite3.Connection]:
    conn = open_ro(demo_kb_master)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def ids(kb: sqlite3.Connection) -> dict[str, Any]:
    """Real ids of the demo KB: the newest version, a named function with callers and callees,
    one of its strings."""
    versions = queries.list_versions(kb)
    vid = versions[-1]["id"]
    named = [f for f in queries.list_functions(kb, vid) if f["name"]]
    best = max(
        named,
        key=lambda f: (
            bool(queries.callers(kb, vid, f["index"]))
            and bool(queries.callees(kb, vid, f["index"])),
            len(
                (queries.get_function_facts(kb, vid, f["index"]) or {}).get(
                    "referenced_strings", []
                )
            ),
        ),
    )
    facts = queries.get_function_facts(kb, vid, best["index"])
    assert facts is not None
    return {
        "first": versions[0]["id"],
        "vid": vid,
        "index": best["index"],
        "sid": best["stable_id"],
        "name": best["name"],
        "string": (facts["referenced_strings"] or [""])[0],
        "const": (facts["constants"] or [0])[0],
    }


def test_the_shapes_of_every_module_match_their_annotations(kb, ids) -> None:
    vid, idx, sid = ids["vid"], ids["index"], ids["sid"]
    sha = queries.version_info(kb, vid)["sha256"]
    calls = [
        # versions
        (queries.list_versions, (kb,), {"with_coverage": True}),
        (queries.get_version, (kb, vid), {}),
        (queries.version_info, (kb, vid), {}),
        (queries.coverage, (kb, vid), {}),
        (queries.lineage_versions, (kb,), {}),
        (queries.versions_with_sha256, (kb, sha), {}),
        (queries.list_oracles, (kb,), {}),
        (queries.lineage_records, (kb,), {}),
        # functions
        (queries.list_functions, (kb, vid), {"include_imports": True}),
        (queries.function_list_window, (kb, vid, True, 0, 20), {}),
        (queries.get_function, (kb, vid, idx), {}),
        (queries.functions_by_stable_id, (kb, sid), {}),
        (queries.callers, (kb, vid, idx), {}),
        (queries.callees, (kb, vid, idx), {}),
        (queries.get_function_facts, (kb, vid, idx), {}),
        # symbols
        (queries.get_symbol, (kb, sid), {}),
        (queries.export_rows, (kb, vid), {}),
        (queries.annotations_by_index, (kb, vid), {}),
        (queries.annotations_by_index, (kb, vid), {"with_evidence": True}),
        # search
        (queries.search_symbols, (kb, ids["name"][:3]), {}),
        (queries.find_functions, (kb, ids["name"][:3]), {}),
        (queries.call_target_counts, (kb, vid, idx), {}),
        (queries.function_entries, (kb, vid, [0, 1, idx]), {}),
        (queries.function_at_index, (kb, vid, idx), {}),
        (queries.functions_with_string, (kb, vid, ids["string"][:4]), {}),
        (queries.functions_with_const, (kb, vid, [ids["const"]]), {}),
        (queries.functions_referencing_string, (kb, vid, ids["string"]), {}),
        # events
        (queries.annotation_events, (kb, sid), {}),
        (queries.history, (kb, sid), {}),
        (queries.renames, (kb, sid), {}),
        (queries.events_since, (kb,), {}),
        (queries.last_annotation_event, (kb, sid), {}),
        # diffs
        (queries.matching_rows, (kb, vid), {}),
        (queries.function_identities, (kb, vid), {}),
        (queries.mem_ops_for, (kb, vid, [f["index"] for f in queries.list_functions(kb, vid)]), {}),
        (queries.stored_diff_report, (kb, ids["first"], vid), {}),  # ingest stored it
        # analysis
        (queries.get_analysis, (kb, sid), {}),
        (queries.structs, (kb, vid), {}),
        (queries.structs_for_function, (kb, vid, idx), {}),
        (queries.last_analysis_run, (kb, vid), {}),
        (queries.analysis_result, (kb, vid), {}),
        (queries.thread_facts, (kb, vid), {}),
        # agents
        (queries.agent_rows, (kb, vid), {}),
        (queries.suggestions, (kb, vid), {"status": None}),
        (queries.open_suggestion, (kb, sid), {}),
        (queries.agent_answer_counts, (kb, vid), {}),
    ]
    checked: dict[str, list[str]] = {}
    for fn, args, kwargs in calls:
        _value, seen = _shaped(fn, *args, **kwargs)
        checked.setdefault(fn.__module__, []).extend(seen)
    modules = {
        f"kbtool.kb.queries.{m}"
        for m in (
            "versions",
            "functions",
            "symbols",
            "search",
            "events",
            "diffs",
            "analysis",
            "agents",
        )
    }
    assert set(checked) == modules
    # the demo KB holds rows for these, so each was checked on real data (not just None or [])
    shapes = {name for seen in checked.values() for name in seen}
    assert shapes >= {
        "AgentRow", "AnalysisResult", "AnnotationEvent", "CallTargetCount", "Coverage",
        "CurrentAnnotation", "DiffChange", "DiffSummary", "EventFeed", "ExportRow", "FirstSeen",
        "FunctionAppearance", "FunctionEntry", "FunctionFacts", "FunctionName", "FunctionRecord",
        "History", "IdentityRow", "IndexAnnotation", "JumpTarget", "LineageCandidate",
        "LineageRecord", "LineageVersion", "MatchingRow", "MemOp", "MemoryAccess", "NavRow",
        "NavStringRow", "Rename", "SearchResult", "StoredDiffReport", "SuggestionPage", "Symbol",
        "Version", "VersionInfo", "VersionName", "VersionRef",
    }  # fmt: skip


def _loose_dicts(tp: Any) -> bool:
    """Whether ``tp`` contains a ``dict[str, Any]`` (a dict row with no declared shape)."""
    if get_origin(tp) is dict and get_args(tp) == (str, Any):
        return True
    return any(_loose_dicts(a) for a in get_args(tp))


def test_no_public_query_returns_an_undeclared_dict() -> None:
    loose = [
        name
        for name in queries.__all__
        if callable(fn := getattr(queries, name))
        and not isinstance(fn, type)
        and _loose_dicts(_hints(fn).get("return"))
    ]
    assert loose == []


def test_the_shapes_of_stored_analysis_suggestions_events_and_oracles(demo_kb) -> None:
    """The rows only a pass writes: run the real analyze, deep (offline), agent (offline) and
    oracle services on a copy of the demo KB, then check what the queries read back."""
    from kbtool.kb.db import open_rw
    from kbtool.services.agent_pass import run_agent_pass
    from kbtool.services.analyze import analyze_version
    from kbtool.services.deep import run_deep
    from kbtool.services.oracle import add_oracle
    from tests.support.paths import DEMO_WASM

    offline = {"PATH": ""}  # no provider key: the offline backends
    conn = open_rw(demo_kb)
    try:
        vid = queries.list_versions(conn)[-1]["id"]
        analyze_version(conn, vid)
        run_deep(conn, vid, max_functions=3, env=offline)
        run_agent_pass(conn, vid, "offline", env=offline)
        add_oracle(conn, DEMO_WASM)
    finally:
        conn.close()
    kb = open_ro(demo_kb)
    try:
        deep_sid = kb.execute("SELECT stable_id FROM analyses LIMIT 1").fetchone()[0]
        member = queries.structs(kb, vid)[0]["members"][0]["func_index"]
        seen: list[str] = []
        for fn, args in [
            (queries.structs, (kb, vid)),
            (queries.structs_for_function, (kb, vid, member)),
            (queries.last_analysis_run, (kb, vid)),
            (queries.analysis_result, (kb, vid)),
            (queries.get_analysis, (kb, deep_sid)),
            (queries.suggestions, (kb, vid)),
            (queries.events_since, (kb,)),
            (queries.list_oracles, (kb,)),
            (queries.oracle_modules, (kb,)),
        ]:
            seen += _shaped(fn, *args)[1]
        open_sid = queries.suggestions(kb, vid)["items"][0]["stable_id"]
        seen += _shaped(queries.open_suggestion, kb, open_sid)[1]
    finally:
        kb.close()
    assert set(seen) >= {
        "Analysis", "AnalysisResult", "AnalysisRun", "EventFeed", "FeedEvent", "OracleBytes",
        "OracleModule",
        "Struct", "Suggestion", "SuggestionPage",
    }  # fmt: skip
