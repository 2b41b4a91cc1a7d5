"""A version's call graph and one function's callers and callees, with the KB's names."""

from __future__ import annotations

import bisect
import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.lift.names import display_name
from kbtool.services import callgraph_store
from kbtool.services.code_prepared import _LOCK, _RESULTS, CodeModule, code_module
from kbtool.wasm import WasmFormatError
from kbtool.wasm.instr import decode_one, read_local_decls
from kbtool.wasm.leb import read_uleb
from kbtool.wasm.opcodes import K_REF_FUNC, KIND


def callgraph(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    """The contract's Call graph object for a version.

    ``nodes``: ``{index, stable_id, name, status, provenance, imported, in_table}`` with
    ``status`` ``named`` (the KB has a name; ``provenance`` says whose), ``unnamed`` or
    ``import``; ``edges``: ``{caller, callee, kind, count}`` with ``kind`` ``direct``,
    ``ref`` (``ref.func``) or ``indirect`` (a ``call_indirect`` candidate, with
    ``candidates`` = the candidate set size); ``indirect`` and ``candidates``: the
    call_indirect sites whose candidate sets are too large to expand (see
    :func:`kbtool.lift.build_callgraph`)."""
    cm = code_module(conn, version_id)
    if cm.graph is None:
        # structure: once per module, whatever the names; the one `kbtool analyze` stored
        # when it was built from these bytes (else every body is decoded: seconds)
        base = cm.parsed.get_graph(lambda: callgraph_store.load(conn, version_id, cm.parsed.digest))
        names = cm.lm.names.functions
        nodes = []
        for node in base["nodes"]:
            i = node["index"]
            r = cm.rows.get(i)
            named = r is not None and bool(r.name)
            status = (
                "import"
                if (r.imported if r is not None else node["imported"])
                else ("named" if named else "unnamed")
            )
            nodes.append(
                dict(
                    node,
                    stable_id=r.stable_id if r is not None else None,
                    name=names.get(i),
                    status=status,
                    provenance=r.provenance if named else None,
                )
            )
        cm.graph = {**base, "nodes": nodes, "version_id": version_id}
    return cm.graph


def neighbours(conn: sqlite3.Connection, version_id: int, func_index: int) -> dict[str, list[dict]]:
    """Direct callers and callees of one function: ``{callers, callees}``, each ``[{index,
    stable_id, name, status, provenance, imported, in_table, kind}]`` in index order.

    Per function, never a whole-module pass: direct calls come from the call edges ingest
    stored; ``ref.func`` edges from this body (callees) and from the bodies holding
    ``ref.func <this index>`` (callers: the code bytes are searched for the instruction's
    encoding, each hit confirmed by decoding its body). Once the whole call graph was built
    in this process (``callgraph``), it answers instead: the same edges."""
    cm = code_module(conn, version_id)
    if cm.graph is not None:
        return _neighbours_from_graph(cm.graph, func_index)
    cm.check(func_index)
    callees = {c["index"]: "direct" for c in queries.callees(conn, version_id, func_index)}
    callers = {c["index"]: "direct" for c in queries.callers(conn, version_id, func_index)}
    for i in sorted(_body_refs(cm, func_index)):
        callees.setdefault(i, "ref")
    for i in sorted(_ref_holders(cm, func_index)):
        callers.setdefault(i, "ref")

    def entries(found: dict[int, str]) -> list[dict]:
        return [dict(_node(cm, i), kind=k) for i, k in sorted(found.items())]

    return {"callers": entries(callers), "callees": entries(callees)}


def _neighbours_from_graph(graph: dict, func_index: int) -> dict[str, list[dict]]:
    nodes = {n["index"]: n for n in graph["nodes"]}
    callers: dict[int, str] = {}
    callees: dict[int, str] = {}
    for e in graph["edges"]:
        if e["kind"] == "indirect":
            continue
        if e["callee"] == func_index:
            callers.setdefault(e["caller"], e["kind"])
        if e["caller"] == func_index:
            callees.setdefault(e["callee"], e["kind"])

    def entries(found: dict[int, str]) -> list[dict]:
        return [dict(nodes.get(i, {"index": i}), kind=k) for i, k in sorted(found.items())]

    return {"callers": entries(callers), "callees": entries(callees)}


def warm(cm: CodeModule) -> None:
    """What :func:`neighbours` builds on its first call for a version, built now: the
    functions in a table and the ``ref.func`` sites (~20-30 ms on ffmpeg; a front-end
    calls it on its preparation thread, so no code screen's first open pays it)."""
    _in_table(cm)
    _ref_sites(cm)
    if cm.parsed.code_starts is None:
        cm.parsed.code_starts = [s for s, _e in cm.lm.module.code]


def _in_table(cm: CodeModule) -> set[int]:
    found = cm.parsed.in_table
    if found is None:
        m = cm.lm.module
        found = {
            fi
            for el in m.elements
            if el.mode != "declarative"
            for fi in el.func_indices
            if fi is not None and 0 <= fi < m.num_functions
        }
        cm.parsed.in_table = found
    return found


def _node(cm: CodeModule, i: int) -> dict[str, Any]:
    """One call-graph node (the shape of :func:`callgraph`'s nodes) from the prepared module."""
    r = cm.rows.get(i)
    m = cm.lm.module
    imported = bool(r.imported) if r is not None else i < m.num_func_imports
    named = r is not None and bool(r.name)
    name = cm.lm.names.functions.get(i)
    return {
        "index": i,
        "stable_id": r.stable_id if r is not None else None,
        "name": display_name(name) if name else None,
        "status": "import" if imported else ("named" if named else "unnamed"),
        "imported": imported,
        "in_table": i in _in_table(cm),
        "provenance": r.provenance if named else None,
    }


def _ref_sites(cm: CodeModule) -> dict[int, list[int]]:
    """Index -> file offsets of the bytes ``0xd2 <LEB128 index>`` in the code section (the
    encoding of ``ref.func index``, or bytes inside other immediates): one pass over the code
    per parsed module (a few thousand ``0xd2`` bytes in 30 MB), then a lookup per function."""
    sites = cm.parsed.ref_sites
    if sites is None:
        m = cm.lm.module
        data = cm.lm.data
        sites = {}
        if m.code:
            lo, hi = m.code[0][0], m.code[-1][1]
            p = data.find(b"\xd2", lo, hi)
            while p >= 0:
                try:
                    v, _n = read_uleb(data, p + 1, hi)
                except WasmFormatError:
                    v = None
                if v is not None:
                    sites.setdefault(v, []).append(p)
                p = data.find(b"\xd2", p + 1, hi)
        cm.parsed.ref_sites = sites
    return sites


def _body_refs(cm: CodeModule, func_index: int) -> set[int]:
    """``ref.func`` targets in one defined body (cached per parsed module): from the
    function's disassembly records when they are at hand, else decoded."""
    cache = cm.parsed.body_refs
    hit = cache.get(func_index)
    if hit is not None:
        return hit
    with _LOCK:
        done = _RESULTS.get_item((id(cm), func_index))
    if done is not None and done[0] is cm and done[2] is not None:
        out = {ins.ref.index for ins in done[2].instrs if KIND[ins.opcode] == K_REF_FUNC}
        cache[func_index] = out
        return out
    m = cm.lm.module
    k = func_index - m.num_func_imports
    out: set[int] = set()
    if 0 <= k < len(m.code) and cm.lm.data.find(b"\xd2", *m.code[k]) >= 0:  # else: no ref.func
        start, end = m.code[k]
        data = cm.lm.data
        try:
            _decls, p = read_local_decls(data, start, end)
            while p < end:
                op, p, imms = decode_one(data, p, end)
                if KIND[op] == K_REF_FUNC:
                    out.add(imms[0])
        except WasmFormatError:
            pass
    cache[func_index] = out
    return out


def _ref_holders(cm: CodeModule, func_index: int) -> set[int]:
    """Defined functions whose body holds ``ref.func func_index``: the places its encoding
    occurs (:func:`_ref_sites`), each candidate body decoded to confirm (a hit inside another
    instruction's immediates is not a reference)."""
    m = cm.lm.module
    starts = cm.parsed.code_starts
    if starts is None:
        starts = cm.parsed.code_starts = [s for s, _e in m.code]
    seen: set[int] = set()
    out: set[int] = set()
    for p in _ref_sites(cm).get(func_index, ()):
        k = bisect.bisect_right(starts, p) - 1
        if k >= 0 and p < m.code[k][1]:
            fi = m.num_func_imports + k
            if fi not in seen:
                seen.add(fi)
                if func_index in _body_refs(cm, fi):
                    out.add(fi)
    return out
