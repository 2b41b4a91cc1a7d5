"""Bottom-up order of a pass: callees before callers (pure).

The candidates' call graph is condensed into strongly connected components (Tarjan,
iterative); each component gets a level one above the highest level of the components it
calls, so level 0 holds leaves and a function's callees are all in earlier levels, except the
members of its own component (mutual recursion), which share its level. A pass proposes level
by level: each prompt sees the names its callees got a moment before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def sccs(graph: Mapping[int, Sequence[int]]) -> list[list[int]]:
    """Strongly connected components of ``graph`` (node -> successors), each sorted, in
    reverse topological order (a component comes after every component it reaches)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def bottom_up_levels(contexts: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Positions into ``contexts`` grouped by level, callees first (see the module doc).
    Only calls between candidates count; order inside a level follows ``contexts``."""
    pos = {int(c["index"]): i for i, c in enumerate(contexts)}
    graph = {
        int(c["index"]): [
            int(e["index"])
            for e in (c.get("callees") or [])
            if e.get("index") in pos and e.get("index") != c["index"]
        ]
        for c in contexts
    }
    comp_of: dict[int, int] = {}
    comps = sccs(graph)
    level: dict[int, int] = {}
    for k, comp in enumerate(comps):  # reverse topological: callees' components come first
        for v in comp:
            comp_of[v] = k
        lv = 0
        for v in comp:
            for w in graph[v]:
                if comp_of.get(w, k) != k:
                    lv = max(lv, level[comp_of[w]] + 1)
        level[k] = lv
    groups: dict[int, list[int]] = {}
    for idx, i in sorted(pos.items(), key=lambda kv: kv[1]):
        groups.setdefault(level[comp_of[idx]], []).append(i)
    return [groups[k] for k in sorted(groups)]
