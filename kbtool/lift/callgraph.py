"""Call graph of one module version (pure builder, near-linear in module size).

Built from per-function facts (:class:`kbtool.wasm.FuncFacts`: ``calls``, ``ref_funcs``,
``call_indirect``) plus the element segments. ``call_indirect`` sites are resolved to their
candidate targets: functions placed in the same table by an active or passive element
segment whose signature matches. Candidates are grouped once per (table, signature), so the
cost is O(sites + table), never O(sites x table): a site with a small candidate set
(``<= expand_limit``) becomes concrete ``indirect`` edges, a larger one a summary in
``indirect`` that points at ``candidates[key]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kbtool.wasm.facts import ModuleAnalysis
from kbtool.wasm.instr import decode_one, skip_local_decls

from .names import Names, display_name


def indirect_types(data: bytes, analysis: ModuleAnalysis) -> dict[int, dict[tuple[int, int], int]]:
    """Per function with ``call_indirect``: {(table, type index): site count}.

    Decodes only the bodies the facts flag as containing ``call_indirect``.
    """
    m = analysis.module
    out: dict[int, dict[tuple[int, int], int]] = {}
    nimp = m.num_func_imports
    for f in analysis.functions:
        if f.imported or not f.call_indirect:
            continue
        start, end = m.code[f.index - nimp]
        p = skip_local_decls(data, start, end)
        sites: dict[tuple[int, int], int] = {}
        while p < end:
            op, p, imms = decode_one(data, p, end)
            if op == 0x11 or op == 0x13:
                key = (imms[1], imms[0])
                sites[key] = sites.get(key, 0) + 1
        out[f.index] = sites
    return out


def build_callgraph(
    analysis: ModuleAnalysis,
    data: bytes,
    names: Mapping[int, str] | None = None,
    stable_ids: Mapping[int, str] | None = None,
    statuses: Mapping[int, str] | None = None,
    expand_limit: int = 8,
    sites: dict[int, dict[tuple[int, int], int]] | None = None,
) -> dict:
    """The call graph object: ``{"nodes", "edges", "indirect", "candidates"}``.

    * ``nodes``: ``{"index", "stable_id", "name", "status", "imported", "in_table"}``
      (``status`` from ``statuses``, else ``"import"``/``"named"``/``"unnamed"``;
      ``in_table``: the function can be reached through ``call_indirect``);
    * ``edges``: ``{"caller", "callee", "kind", "count"}`` with ``kind`` ``"direct"``
      (call/return_call; ``count`` = sites), ``"ref"`` (``ref.func``) or ``"indirect"``
      (a call_indirect candidate; ``count`` = sites, plus ``"candidates"`` = set size);
    * ``indirect``: one entry per (caller, table, signature) whose candidate set is larger
      than ``expand_limit``: ``{"caller", "table", "type", "count", "candidates", "key"}``;
    * ``candidates``: ``key -> sorted function indices`` (``key`` = ``"<table>:<sig>"``).

    ``names`` (index -> untrusted name) default to the module's own names. ``sites`` may
    pass a precomputed :func:`indirect_types` result.
    """
    m = analysis.module
    nfunc = m.num_functions
    if names is None:
        names = Names.from_module(m).functions
    stable_ids = stable_ids or {}
    statuses = statuses or {}
    type_text = [t.text() for t in m.types]

    def sig(func_index: int) -> str:
        ti = m.func_type_index(func_index)
        return type_text[ti] if 0 <= ti < len(type_text) else f"type[{ti}]"

    # table contents grouped by (table, signature text)
    groups: dict[str, set[int]] = {}
    in_table: set[int] = set()
    for el in m.elements:
        if el.mode == "declarative":
            continue
        for fi in el.func_indices:
            if fi is None or fi < 0 or fi >= nfunc:
                continue
            in_table.add(fi)
            groups.setdefault(f"{el.table_index}:{sig(fi)}", set()).add(fi)
    candidates = {k: sorted(v) for k, v in sorted(groups.items())}

    nodes = []
    for f in analysis.functions:
        i = f.index
        name = names.get(i)
        status = statuses.get(i) or ("import" if f.imported else ("named" if name else "unnamed"))
        nodes.append(
            {
                "index": i,
                "stable_id": stable_ids.get(i),
                "name": display_name(name) if name else None,
                "status": status,
                "imported": f.imported,
                "in_table": i in in_table,
            }
        )

    edges = []
    for f in analysis.functions:
        if f.imported:
            continue
        counts: dict[int, int] = {}
        for c in f.calls:
            if 0 <= c < nfunc:
                counts[c] = counts.get(c, 0) + 1
        for c in sorted(counts):
            edges.append({"caller": f.index, "callee": c, "kind": "direct", "count": counts[c]})
        for r in sorted(set(f.ref_funcs)):
            if 0 <= r < nfunc:
                edges.append({"caller": f.index, "callee": r, "kind": "ref", "count": 1})

    if sites is None:
        sites = indirect_types(data, analysis)
    indirect = []
    for caller in sorted(sites):
        for (table, ti), count in sorted(sites[caller].items()):
            t = type_text[ti] if 0 <= ti < len(type_text) else f"type[{ti}]"
            key = f"{table}:{t}"
            cands = candidates.get(key, [])
            if len(cands) <= expand_limit:
                for c in cands:
                    edges.append(
                        {
                            "caller": caller,
                            "callee": c,
                            "kind": "indirect",
                            "count": count,
                            "candidates": len(cands),
                        }
                    )
                if cands:
                    continue
            indirect.append(
                {
                    "caller": caller,
                    "table": table,
                    "type": t,
                    "count": count,
                    "candidates": len(cands),
                    "key": key,
                }
            )
    return {"nodes": nodes, "edges": edges, "indirect": indirect, "candidates": candidates}
