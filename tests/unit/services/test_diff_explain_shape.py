"""Every explanation :func:`explain_pair` builds has exactly the keys of its ``Explanation``
TypedDict, and the stored report's ``explain`` lines are that explanation's ``items``: checked
on every modified function of the demo KB (zstd 1.0 -> 1.1), on the real rows and memory
accesses of the KB."""

from __future__ import annotations

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.queries.shapes import MemOp
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.explain import Explanation, explain_pair, offset_changes
from kbtool.services.diff.report import stored_diff
from kbtool.wasm.opcodes import MNEMONICS
from tests.support.shapes import check_shape, declared_keys


def test_every_explanation_of_the_demo_diff_has_its_declared_keys(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        report = stored_diff(conn, 1, 2)  # stored by ingest, triaged on read
        assert report is not None
        old = {r["index"]: r for r in queries.matching_rows(conn, 1)}
        new = {r["index"]: r for r in queries.matching_rows(conn, 2)}
        modified = [c for c in report["changes"] if c["classification"] == "modified"]
        mem_old = queries.mem_ops_for(conn, 1, [c["from_index"] for c in modified])
        mem_new = queries.mem_ops_for(conn, 2, [c["to_index"] for c in modified])
        cl = changelog(conn, report)
    finally:
        conn.close()
    assert modified and all(isinstance(m, MemOp) for ms in mem_old.values() for m in ms)
    keys: dict[str, set[str]] = {}
    for c in modified:
        ex = explain_pair(
            old[c["from_index"]],
            new[c["to_index"]],
            calls_added=[],
            calls_removed=[],
            mem_old=mem_old.get(c["from_index"]),
            mem_new=mem_new.get(c["to_index"]),
        )
        check_shape(ex, Explanation, f"func[{c['to_index']}]", [], scalars=True, keys=keys)
    # the demo's changes include offsets, constants and instruction changes
    assert keys["Explanation"] == declared_keys(Explanation)
    # what the report stores as ``explain`` is the changelog's explanation, in lines
    by_index = {m["to_index"]: m for m in cl["modified"]}
    for c in modified:
        m = by_index[c["to_index"]]
        assert declared_keys(Explanation) <= set(m)
        check_shape(
            {k: m[k] for k in declared_keys(Explanation)},
            Explanation,
            "changelog",
            [],
            scalars=True,
        )
        assert c["explain"] == m["items"]


def test_memory_accesses_as_records_or_stored_triples_explain_alike() -> None:
    load = MNEMONICS.index("i32.load")
    old = [[load, 8, 4], [load, 348, 4]]
    new = [[load, 8, 4], [load, 356, 4]]
    as_records = offset_changes([MemOp(*m) for m in old], [MemOp(*m) for m in new])
    assert as_records == offset_changes(old, new) == [("i32.load", 348, 356)]
