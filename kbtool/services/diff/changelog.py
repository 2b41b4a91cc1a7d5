"""The semantic changelog of a diff: what changed in the code, in words a reverse engineer reads.

For a diff report (:mod:`kbtool.services.diff.report`, stored or computed) and the KB's facts:

- ``modified``: every modified function, named or not (name of the to-side annotation, else
  the from-side one; an unnamed one carries a ``hint`` of its strings and callees), ranked by
  how much changed, with the explanation of :func:`kbtool.services.diff.explain.explain_pair`:
  calls added/removed (by callee name, import ``module.field`` or ``func[index]``), strings,
  constants changed (old -> new), memory offsets changed, signature, loops, callers, size,
  and ``items``, the same as short lines; ``modified_unnamed`` counts the unnamed ones;
- ``new``: every new function with its strings, size and callees;
- ``deleted``: every deleted function with its strings and size;
- ``imports_added`` / ``imports_removed``: function imports by ``module.field``;
- ``from_program`` / ``to_program``, and ``warning`` when they differ (see
  :mod:`kbtool.services.diff.programs`).

A callee counts as the same call when the old callee is paired (by the report) with the new
callee, or both are the same import. Pure read; nothing is written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from kbtool.kb import queries
from kbtool.services.diff.explain import explain_pair
from kbtool.services.diff.programs import program_fields
from kbtool.services.diff.relocation import body_tokens, module_view
from kbtool.services.diff.triage import (
    KINDS,
    PRIVATE,
    body_grams,
    finish_kept,
    layout_groups,
    moved_counts,
    triage_pair,
)
from kbtool.wasm.errors import WasmFormatError

__all__ = [
    "changelog",
    "modified_entry",
    "entry_hint",
    "new_entry",
    "deleted_entry",
    "index_map",
    "group_entries",
    "layout_of",
    "sort_modified",
    "split_triage",
    "set_entry_triage",
    "plain_triage",
    "Reads",
    "MAX_STRINGS",
    "ORDERS",
    "CHANGED",
    "STATE_FORMAT",
]

CHANGED = ("modified", "new", "deleted")  # the classifications the changelog lists
STATE_FORMAT = 1  # bump when what ``changelog(state=...)`` keeps changes shape

ORDERS = ("triage", "index", "weight")  # the modified list: patch-likeness, index, size

MAX_STRINGS = 12  # strings listed per function (the count stays exact)
MAX_STRING_LEN = 160  # characters of one string


def _names(conn: sqlite3.Connection, version_id: int) -> dict[int, str]:
    return {i: a["name"] for i, a in queries.annotations_by_index(conn, version_id).items()}


def _label_of(rows: dict[int, dict[str, Any]], names: dict[int, str], idx: int) -> str:
    r = rows.get(idx)
    if r is not None and r["imported"]:
        return r["import_name"] or f"func[{idx}]"
    if idx in names:
        return names[idx]
    if r is not None and r["raw_name"]:
        return r["raw_name"]
    return f"func[{idx}]"


def _imported(rows: Mapping[int, dict[str, Any]], i: int) -> bool:
    r = rows.get(i)
    return r is not None and bool(r["imported"])


def _callers(rows: dict[int, dict[str, Any]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, r in rows.items():
        for c in dict.fromkeys(r["calls"]):
            if c != i:
                out.setdefault(c, []).append(i)
    return out


def _hint(row: dict[str, Any], label: Callable[[int], str]) -> str:
    """A few strings and callees that tell an unnamed function apart."""
    parts = [repr(_clip(s)) for s in list(dict.fromkeys(row["strings"]))[:2]]
    parts += [label(c) for c in list(dict.fromkeys(row["calls"]))[:3]]
    return ", ".join(parts) if parts else f"{row['type_sig']}, {row['instr_count']} instr"


def _clip(s: str) -> str:
    return s if len(s) <= MAX_STRING_LEN else s[: MAX_STRING_LEN - 1] + "…"


def _strings(values: list[str]) -> list[str]:
    return [_clip(s) for s in list(dict.fromkeys(values))[:MAX_STRINGS]]


def index_map(
    report: dict[str, Any], old_imports: dict[str, int], new_imports: dict[str, int]
) -> dict[int, int]:
    """old index -> new index: the report's pairs, and an import of the same name on both
    sides."""
    o2n: dict[int, int] = {}
    for c in report["changes"]:
        if c["from_index"] is not None and c["to_index"] is not None:
            o2n[c["from_index"]] = c["to_index"]
    for name, i in old_imports.items():
        if name in new_imports:
            o2n.setdefault(i, new_imports[name])
    return o2n


def _imports(rows: Mapping[int, dict[str, Any]]) -> dict[str, int]:
    return {r["import_name"]: i for i, r in rows.items() if r["imported"]}


def new_entry(c: dict[str, Any], n: dict[str, Any], label: Callable[[int], str]) -> dict[str, Any]:
    """The changelog entry of a new function (its strings and callees)."""
    return {
        "name": c.get("name"),
        "to_index": c["to_index"],
        "stable_id": c["to_stable_id"],
        "runtime": bool(c.get("runtime")),
        "strings": _strings(n["strings"]),
        "string_count": len(set(n["strings"])),
        "calls": [label(y) for y in dict.fromkeys(n["calls"])],
        "instr": n["instr_count"],
        "size": n["body_size"],
    }


def deleted_entry(c: dict[str, Any], o: dict[str, Any]) -> dict[str, Any]:
    """The changelog entry of a deleted function (its strings)."""
    return {
        "name": c.get("name"),
        "from_index": c["from_index"],
        "stable_id": c["from_stable_id"],
        "runtime": bool(c.get("runtime")),
        "strings": _strings(o["strings"]),
        "string_count": len(set(o["strings"])),
        "instr": o["instr_count"],
        "size": o["body_size"],
    }


class Reads:
    """What building one changelog entry reads: both sides' rows (every function, or a lazy
    few: :mod:`kbtool.services.diff.relabel`), the annotation names, the pairing's index
    map, callers, memory accesses and decoded bodies (``tokens_*`` None: no bodies)."""

    def __init__(
        self,
        old: Mapping[int, dict[str, Any]],
        new: Mapping[int, dict[str, Any]],
        names: tuple[dict[int, str], dict[int, str]],
        o2n: dict[int, int],
        callers: tuple[Callable[[int], list[int]], Callable[[int], list[int]]],
        mem: tuple[dict[int, Any], dict[int, Any]],
        tokens: tuple[Callable[[int], list], Callable[[int], list]] | None,
    ) -> None:
        self.old, self.new = old, new
        self.names_old, self.names_new = names
        self.o2n = o2n
        self.n2o = {v: k for k, v in o2n.items()}
        self.callers_old, self.callers_new = callers
        self.mem_old, self.mem_new = mem
        self.tokens = tokens
        self.grams: dict[int, frozenset] = {}  # n-grams of old-side callee bodies, once each

    def labels(
        self, t_old: set[int], t_new: set[int]
    ) -> tuple[Callable[[int], str], Callable[[int], str]]:
        """Label functions of the new and the old side that record what they read."""

        def new_label(i: int) -> str:
            r = self.new.get(i)
            if r is None or not r["imported"]:  # an import's label is its name, never read
                t_new.add(i)
            return _label_of(self.new, self.names_new, i)

        def old_label(i: int) -> str:
            r = self.old.get(i)
            n = self.o2n.get(i)
            if r is not None and r["imported"] and (n is None or _imported(self.new, n)):
                return new_label(n) if n is not None else _label_of(self.old, {}, i)
            t_old.add(i)
            if n is not None:
                t_new.add(n)
            if n is not None and (n in self.names_new or (self.new.get(n) or {}).get("imported")):
                return new_label(n)
            return _label_of(self.old, self.names_old, i)

        return new_label, old_label


def modified_entry(
    r: Reads, c: dict[str, Any], t_old: set[int], t_new: set[int], t_hint: set[int]
) -> dict[str, Any] | None:
    """The changelog entry of a modified pair with its triage's private fields (for
    :func:`kbtool.services.diff.triage.finish`); ``t_old``/``t_new`` receive the indices whose
    annotation it reads, ``t_hint`` those its ``hint`` alone reads (:func:`entry_hint`).
    None when a side has no row."""
    o, n = r.old.get(c["from_index"]), r.new.get(c["to_index"])
    if o is None or n is None:
        return None
    callee_label_new, callee_label_old = r.labels(t_old, t_new)
    o2n, n2o = r.o2n, r.n2o
    co = list(dict.fromkeys(o["calls"]))
    cn = list(dict.fromkeys(n["calls"]))
    mapped = {o2n.get(x) for x in co}
    kept_new = set(cn)
    calls_added = [callee_label_new(y) for y in cn if y not in mapped]
    calls_removed = [callee_label_old(x) for x in co if o2n.get(x) not in kept_new]
    ko = r.callers_old(c["from_index"])
    kn = r.callers_new(c["to_index"])
    mapped_callers = {o2n.get(x) for x in ko}
    ex = explain_pair(
        o,
        n,
        calls_added=calls_added,
        calls_removed=calls_removed,
        callers_added=[
            callee_label_new(y) for y in kn if y not in mapped_callers and n2o.get(y) is not None
        ][:8],
        callers_removed=[
            callee_label_old(x) for x in ko if o2n.get(x) not in set(kn) and o2n.get(x) is not None
        ][:8],
        mem_old=r.mem_old.get(c["from_index"]),
        mem_new=r.mem_new.get(c["to_index"]),
    )
    tri = _triage(r, c, ex, callee_label_new)
    return {
        "name": c["name"],
        "from_index": c["from_index"],
        "to_index": c["to_index"],
        "stable_id": c["to_stable_id"],
        "runtime": bool(c.get("runtime")),
        "review": bool(c.get("review")),
        "score": c.get("score"),
        # an unnamed function is told apart by what it references
        "hint": entry_hint(r, c, n, t_hint),
        **{k: v for k, v in ex.items() if k not in ("instr_from", "instr_to")},
        "strings_added": _strings(ex["strings_added"]),
        "strings_removed": _strings(ex["strings_removed"]),
        "instr_from": o["instr_count"],
        "instr_to": n["instr_count"],
        "size_from": o["body_size"],
        "size_to": n["body_size"],
        **tri,
    }


def entry_hint(r: Reads, c: dict[str, Any], n: dict[str, Any], t_hint: set[int]) -> str | None:
    """An unnamed entry's ``hint`` (its first strings and callees); ``t_hint`` receives the
    callees whose label it shows (a rename of one rebuilds the hint, not the entry)."""
    return None if c["name"] else _hint(n, r.labels(set(), t_hint)[0])


def split_triage(entry: dict[str, Any]) -> dict[str, Any]:
    """The triage's private fields of an entry (popped) and its triage as it stands: what
    :func:`kbtool.services.diff.triage.finish_kept` reads across functions."""
    pre = {k: entry.pop(k) for k in PRIVATE if k in entry}
    pre.update((k, entry[k]) for k in ("triage_kind", "triage", "reasons"))
    return pre


def set_entry_triage(entry: dict[str, Any], pre: dict[str, Any]) -> None:
    """An entry's triage fields from its finished private fields."""
    for k in ("triage_kind", "triage", "reasons"):
        entry[k] = pre[k]


def plain_triage(pre: dict[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of :func:`split_triage`'s fields (kept by :mod:`.relabel`)."""
    out = dict(pre)
    out["_signals"] = [[w, t, list(k) if k is not None else None] for w, t, k in pre["_signals"]]
    if out.get("_solo") is not None:
        out["_solo"] = list(out["_solo"])
    out["reasons"] = list(pre["reasons"])
    return out


def changelog(
    conn: sqlite3.Connection,
    report: dict[str, Any],
    *,
    pairing=None,
    order: str = "triage",
    touched: tuple[set[int], set[int]] | None = None,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The semantic changelog of ``report`` (see the module docstring); a pure read.

    ``pairing``: the :class:`kbtool.services.diff.report.Pairing` the report was computed from, when
    at hand (saves loading the facts of both versions again). ``order``: how ``modified`` is
    sorted: ``triage`` (patch-likeness first, see :mod:`kbtool.services.diff.triage`),
    ``index`` (new-side index) or ``weight`` (most changed first). ``touched``: two sets
    (old side, new side) that receive every function index whose annotation the answer
    reads (a label, an entry's own name): a rename elsewhere leaves the changelog as it is.
    ``state``: a dict that receives what each entry read and its triage before the
    cross-function rules, so that :func:`kbtool.services.diff.relabel.relabel` rebuilds
    only the entries a rename reaches."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: use one of {', '.join(ORDERS)}")
    a, b = int(report["from_version_id"]), int(report["to_version_id"])
    if pairing is not None and (pairing.from_version_id, pairing.to_version_id) == (a, b):
        old, new = pairing.old_rows, pairing.new_rows
    else:
        old = {r["index"]: r for r in queries.matching_rows(conn, a)}
        new = {r["index"]: r for r in queries.matching_rows(conn, b)}
    old_imports, new_imports = _imports(old), _imports(new)
    callers_old = _callers(old)
    callers_new = _callers(new)
    pairs = [
        c
        for c in report["changes"]
        if c["classification"] == "modified" and c["from_index"] in old and c["to_index"] in new
    ]
    views = _views(conn, a, b) if pairs else None
    r = Reads(
        old,
        new,
        (_names(conn, a), _names(conn, b)),
        index_map(report, old_imports, new_imports),
        (lambda i: callers_old.get(i, []), lambda i: callers_new.get(i, [])),
        (
            queries.mem_ops_for(conn, a, [c["from_index"] for c in pairs]),
            queries.mem_ops_for(conn, b, [c["to_index"] for c in pairs]),
        ),
        None if views is None else (partial(body_tokens, views[0]), partial(body_tokens, views[1])),
    )
    t_old, t_new = touched if touched is not None else (set(), set())
    kept_mod: dict[str, Any] = {}
    kept_new: dict[str, Any] = {}
    modified: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    deleted: list[dict[str, Any]] = []
    for c in report["changes"]:
        cls = c["classification"]
        if cls not in CHANGED:
            continue
        eo = {c["from_index"]} if c["from_index"] is not None else set()
        en = {c["to_index"]} if c["to_index"] is not None else set()
        if cls == "modified":
            eh: set[int] = set()
            e = modified_entry(r, c, eo, en, eh)
            if e is not None:
                modified.append(e)
                fo, tn = c["from_index"], c["to_index"]
                kept_mod[str(tn)] = {"old": eo, "new": en, "hint": eh, "ko": r.callers_old(fo)}
                kept_mod[str(tn)]["kn"] = r.callers_new(tn)
            t_new |= eh  # read by the hint: part of what the changelog read
        elif cls == "new":
            n = new.get(c["to_index"])
            if n is not None:
                added.append(new_entry(c, n, r.labels(eo, en)[0]))
                kept_new[str(c["to_index"])] = {"new": en}
        else:
            o = old.get(c["from_index"])
            if o is not None:
                deleted.append(deleted_entry(c, o))
        t_old |= eo
        t_new |= en
    moved_counts(modified)  # code moved between functions (bodies only)
    pres = [split_triage(e) for e in modified]
    if state is not None:
        for e, pre in zip(modified, pres, strict=True):
            k = kept_mod[str(e["to_index"])]
            k.update(
                old=sorted(k["old"]),
                new=sorted(k["new"]),
                hint=sorted(k["hint"]),
                pre=plain_triage(pre),
            )
        for k in kept_new.values():
            k["new"] = sorted(k["new"])
        state.update(
            format=STATE_FORMAT,
            views=views is not None,
            modified=kept_mod,
            new=kept_new,
            layout=layout_of(modified),
        )
    finish_kept(pres)  # cross-function rules (constants renumbered in many functions)
    for e, pre in zip(modified, pres, strict=True):
        set_entry_triage(e, pre)
    return {
        "from": report["from"],
        "to": report["to"],
        "from_version_id": a,
        "to_version_id": b,
        **program_fields(conn, a, b),  # from_program, to_program, warning when they differ
        "order": order,
        "modified": sort_modified(modified, order),
        "groups": group_entries(report, modified),
        "modified_unnamed": sum(1 for m in modified if not m["name"]),
        "new": added,
        "deleted": deleted,
        "imports_added": sorted(n for n in new_imports if n not in old_imports),
        "imports_removed": sorted(n for n in old_imports if n not in new_imports),
    }


def _views(conn: sqlite3.Connection, a: int, b: int):
    """The two modules, parsed (None when the KB holds no bytes or they do not decode)."""
    try:
        va = module_view(queries.module_bytes(conn, a))
        vb = module_view(queries.module_bytes(conn, b))
    except WasmFormatError:
        return None
    return (va, vb) if va is not None and vb is not None else None


MAX_INLINED = 8  # callee bodies read per function for recognising inlining
MAX_INLINED_SIZE = 4000  # instructions of one such body


def _triage(
    r: Reads, c: dict[str, Any], ex: dict[str, Any], label: Callable[[int], str]
) -> dict[str, Any]:
    ta: list = []
    tb: list = []
    inlined: list = []
    if r.tokens is not None:
        try:
            ta = r.tokens[0](c["from_index"])
            tb = r.tokens[1](c["to_index"])
            inlined = _inlined(r, c["from_index"], c["to_index"])
        except WasmFormatError:
            ta, tb, inlined = [], [], []
    return triage_pair(
        ex,
        ta,
        tb,
        label,
        lambda i: (r.new.get(i) or {}).get("strings") or (),
        inlined,
        private=True,
    )


def _inlined(r: Reads, fo: int, tn: int) -> list[frozenset]:
    """n-grams of the old body's callees' bodies, those the new body calls fewer times first
    (code of theirs inserted into the new body is inlining, not a change of its own)."""
    old, o2n, grams = r.old, r.o2n, r.grams
    ro, rn = old.get(fo), r.new.get(tn)
    if ro is None or rn is None or r.tokens is None:
        return []
    cn: dict[int, int] = {}
    for y in rn["calls"]:
        cn[y] = cn.get(y, 0) + 1
    co: dict[int, int] = {}
    for x in ro["calls"]:
        co[x] = co.get(x, 0) + 1
    # callees called fewer times first (their code may now be inlined), then the others
    # (a callee's own inlined callees may move into the caller with it)
    order = sorted(
        (x for x in co if x != fo and x in old and not old[x]["imported"]),
        key=lambda x: (co[x] <= cn.get(o2n.get(x, -1), 0), x),
    )
    out = []
    for x in order:
        if old[x]["instr_count"] <= MAX_INLINED_SIZE:
            if x not in grams:
                grams[x] = body_grams(r.tokens[0](x))
            out.append(grams[x])
        if len(out) >= MAX_INLINED:
            break
    return out


_KIND_RANK = {k: i for i, k in enumerate(KINDS)}


def sort_modified(modified: list[dict[str, Any]], order: str) -> list[dict[str, Any]]:
    if order == "index":
        return sorted(modified, key=lambda m: m["to_index"])
    if order == "weight":
        return sorted(modified, key=lambda m: (-m["weight"], m["to_index"]))
    return sorted(
        modified, key=lambda m: (_KIND_RANK.get(m["triage_kind"], 9), -m["triage"], m["to_index"])
    )


def group_entries(
    report: dict[str, Any],
    modified: list[dict[str, Any]],
    layout: list | None = None,
    relocated: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """What the short views fold into one line each: layout changes (one struct offset
    shift seen in many functions, listed once with its functions), relocations (same code,
    data moved: moved/unchanged with ``relocated``), churn (refactors, inlining).

    ``layout`` (``[[delta, offsets, [to_index...]]]``, :func:`layout_of`) and ``relocated``
    (``(relocated, relocated_moved)``): as kept with an answer (they read no annotation)."""
    if layout is None:
        found = [(g["delta"], g["offsets"], g["functions"]) for g in layout_groups(modified)]
    else:
        by = {m["to_index"]: m for m in modified}
        found = [(d, offsets, [by[t] for t in fns]) for d, offsets, fns in layout]
    layouts = []
    for delta, offsets, fns in found:
        layouts.append(
            {
                "delta": delta,
                "offsets": offsets,
                "count": len(fns),
                "layout_only": sum(1 for m in fns if m["triage_kind"] == "layout"),
                "functions": [
                    {"name": m["name"], "to_index": m["to_index"], "stable_id": m["stable_id"]}
                    for m in fns[:200]
                ],
            }
        )
        for m in fns:  # the shift is the layout change's, not each function's
            m["layout_delta"] = delta
    if relocated is None:
        moved = [
            c["classification"]
            for c in report["changes"]
            if c.get("relocated") and c["classification"] in ("moved", "unchanged")
        ]
        relocated = (len(moved), moved.count("moved"))
    counts = {k: 0 for k in KINDS}
    for m in modified:
        counts[m["triage_kind"]] += 1
    return {
        "layout": layouts,
        "relocated": relocated[0],
        "relocated_moved": relocated[1],
        "kinds": counts,
    }


def layout_of(modified: list[dict[str, Any]]) -> list:
    """The layout groups of :func:`group_entries` by to-side index (kept with an answer)."""
    return [
        [g["delta"], g["offsets"], [m["to_index"] for m in g["functions"]]]
        for g in layout_groups(modified)
    ]


def reorder(cl: dict[str, Any], order: str) -> dict[str, Any]:
    """A changelog with ``modified`` in another order (a shallow copy; the cached one is
    shared and stays as it is)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: use one of {', '.join(ORDERS)}")
    if cl.get("order") == order:
        return cl
    return {**cl, "order": order, "modified": sort_modified(list(cl["modified"]), order)}
