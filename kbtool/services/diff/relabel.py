"""A kept changelog brought to today's annotations by rebuilding only what a rename reaches.

A kept diff answer (:mod:`kbtool.services.diff.cache`) carries a ``state`` beside its report
and changelog (:func:`kbtool.services.diff.changelog.changelog` ``state=``): for each
modified and new entry, the function indices whose annotation it read (its own, the labels of
its callees and callers), its callers, and its triage before the cross-function rules (the
weighed reasons, with the moved-code count, which reads bodies only). After annotation writes
that an entry read, :func:`relabel` builds only those entries again, from the facts of the
few functions they read (:mod:`kbtool.kb.queries.diff_rows`: rows by index, bodies read from
the stored module at their offsets), then re-runs the cross-function rules
(:func:`kbtool.services.diff.triage.finish_kept`) over every entry's kept reasons, and sorts
and groups as the full build does. The result is the changelog a full build gives, byte for
byte (tests/unit/services/test_diff_relabel.py); ffmpeg: tens of ms instead of 9 CPU s.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kbtool.kb import queries
from kbtool.kb.queries.diff_rows import function_bodies, import_indices, matching_rows_for
from kbtool.services.diff.changelog import (
    Reads,
    deleted_entry,
    entry_hint,
    group_entries,
    index_map,
    modified_entry,
    new_entry,
    plain_triage,
    set_entry_triage,
    sort_modified,
    split_triage,
)
from kbtool.services.diff.relocation import body_tokens, module_view, tokens_of
from kbtool.services.diff.report import code_runtime, set_triage
from kbtool.services.diff.triage import KINDS, finish_kept

KIND_RANK = {k: i for i, k in enumerate(KINDS)}

__all__ = ["relabel", "LazyRows", "runtime_by_code"]


class LazyRows(Mapping[int, dict[str, Any]]):
    """The matcher's rows of one version, read by index on first use (a few functions)."""

    def __init__(self, conn: sqlite3.Connection, version_id: int) -> None:
        self.conn, self.version_id = conn, version_id
        self.rows: dict[int, dict[str, Any]] = {}
        self.absent: set[int] = set()

    def fetch(self, indices: Iterable[int]) -> None:
        todo = {i for i in indices if i not in self.rows and i not in self.absent}
        if todo:
            got = matching_rows_for(self.conn, self.version_id, todo)
            self.rows.update(got)
            self.absent |= todo - got.keys()

    def __getitem__(self, i: int) -> dict[str, Any]:
        self.fetch((i,))
        return self.rows[i]

    def __contains__(self, i: object) -> bool:
        if not isinstance(i, int):
            return False
        self.fetch((i,))
        return i in self.rows

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


class _Bodies:
    """Decoded bodies of one version, read at their stored offsets and decoded on first use
    (the module is parsed only when the KB kept no offsets)."""

    def __init__(self, conn: sqlite3.Connection, version_id: int) -> None:
        self.conn, self.version_id = conn, version_id
        self.raw: dict[int, bytes | None] = {}
        self.tokens: dict[int, list] = {}
        self.view = None

    def fetch(self, indices: Iterable[int]) -> None:
        todo = [i for i in indices if i not in self.raw]
        if not todo or self.view is not None:
            return
        bodies = function_bodies(self.conn, self.version_id, todo)
        if bodies is None:
            self.view = module_view(queries.module_bytes(self.conn, self.version_id))
            return
        for i in todo:
            self.raw[i] = bodies.get(i)

    def __call__(self, i: int) -> list:
        got = self.tokens.get(i)
        if got is not None:
            return got
        self.fetch((i,))
        if self.view is not None:
            return body_tokens(self.view, i)
        body = self.raw[i]
        got = tokens_of(body) if body is not None else []
        self.tokens[i] = got
        return got


def runtime_by_code(conn: sqlite3.Connection, a: int, b: int):
    """``code_runtime(change)`` for :func:`kbtool.services.diff.rejoin.rename_changes`: a
    change looks like runtime by either side's code (the facts of that function only)."""
    old, new = LazyRows(conn, a), LazyRows(conn, b)

    def check(c: dict[str, Any]) -> bool:
        o, n = c["from_index"], c["to_index"]
        return code_runtime(new.get(n) if n is not None else None, new) or code_runtime(
            old.get(o) if o is not None else None, old
        )

    return check


def _pre(kept: dict[str, Any]) -> dict[str, Any]:
    """A kept entry's triage fields as :func:`split_triage` gave them (keys are tuples)."""
    pre = dict(kept)
    pre["_signals"] = [(w, t, tuple(k) if k is not None else None) for w, t, k in kept["_signals"]]
    pre["reasons"] = list(kept["reasons"])
    return pre


def _keys(pre: dict[str, Any]) -> set[tuple]:
    """The cross-function keys of one entry's weighed reasons (kept or built)."""
    return {tuple(k) for _w, _t, k in pre["_signals"] if k is not None}


def _pairs(report: dict[str, Any]) -> tuple[dict, dict, dict[int, int]]:
    """One pass over the report: modified/new changes by to-side index, deleted ones by
    from-side index, and the pairing (old index -> new index)."""
    by_to: dict[int, dict[str, Any]] = {}
    by_from: dict[int, dict[str, Any]] = {}
    o2n: dict[int, int] = {}
    for c in report["changes"]:
        f, t = c["from_index"], c["to_index"]
        if f is not None and t is not None:
            o2n[f] = t
        cls = c["classification"]
        if cls == "modified" or cls == "new":
            by_to[t] = c
        elif cls == "deleted":
            by_from[f] = c
    return by_to, by_from, o2n


def relabel(
    conn: sqlite3.Connection,
    report: dict[str, Any],
    cl: dict[str, Any],
    state: dict[str, Any],
    changed: tuple[set[int], set[int]],
    names: tuple[dict[int, str], dict[int, str]],
    *,
    triage: bool = True,
) -> tuple[dict[str, Any], dict[str, Any], tuple[set[int], set[int]]]:
    """The changelog of ``report`` (its annotation fields already today's) from the kept
    ``cl`` and ``state``, rebuilding the entries that read an index of ``changed`` (old
    side, new side); ``names``: today's annotation names of both versions. Returns the
    changelog, its state and the indices its rebuilt entries read; ``cl``'s entries are
    updated in place (a kept answer read from disk for this call), ``state`` is not.
    ``triage``: set the triage of the report's changes whose triage moved (a computed
    report's; a stored report keeps its own). KeyError/TypeError/ValueError on a state of
    another shape."""
    a, b = int(report["from_version_id"]), int(report["to_version_id"])
    ch_old, ch_new = changed
    mods: dict[str, Any] = state["modified"]
    news: dict[str, Any] = state["new"]
    dirty_m = {
        int(k)
        for k, s in mods.items()
        if ch_old.intersection(s["old"]) or ch_new.intersection(s["new"])
    }
    dirty_n = {int(k) for k, s in news.items() if ch_new.intersection(s["new"])}
    dirty_h = {  # only the hint (a callee's label) changed: no triage to redo
        int(k) for k, s in mods.items() if ch_new.intersection(s["hint"])
    } - dirty_m
    by_to, by_from, pairs = _pairs(report)
    old, new = LazyRows(conn, a), LazyRows(conn, b)
    o2n = index_map({"changes": ()}, import_indices(conn, a), import_indices(conn, b))
    o2n = {**pairs, **{k: v for k, v in o2n.items() if k not in pairs}}
    new.fetch(dirty_h)
    new.fetch({y for t in dirty_h if t in new for y in list(dict.fromkeys(new[t]["calls"]))[:3]})
    r = _reads(conn, (a, b), (old, new), names, o2n, state, by_to, dirty_m, dirty_n)
    t_old: set[int] = set()
    t_new: set[int] = set()
    new_mods = dict(mods)
    rebuilt: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    seen: dict[tuple, int] = {}
    for s in mods.values():
        for k in _keys(s["pre"]):
            seen[k] = seen.get(k, 0) + 1
    before = dict(seen)
    for t in sorted(dirty_m):
        c, kept = by_to[t], mods[str(t)]
        eo, en = {c["from_index"]}, {t}
        eh: set[int] = set()
        e = modified_entry(r, c, eo, en, eh)
        if e is None:
            raise ValueError(f"function {t} has no row any more")
        e.pop("_ins_grams", None)
        e.pop("_del_keys", None)
        if "_deleted" in e:
            e["_moved"] = kept["pre"]["_moved"]  # moved code: bodies only, kept as counted
        pre = split_triage(e)
        for k in _keys(kept["pre"]):
            seen[k] -= 1
        for k in _keys(pre):
            seen[k] = seen.get(k, 0) + 1
        new_mods[str(t)] = {
            "old": sorted(eo),
            "new": sorted(en),
            "hint": sorted(eh),
            "ko": kept["ko"],
            "kn": kept["kn"],
            "pre": plain_triage(pre),
        }
        rebuilt[t] = (e, pre)
        t_old |= eo
        t_new |= en | eh
    entries = {m["to_index"]: m for m in cl["modified"]}
    for t in dirty_h:
        eh = set()
        entries[t]["hint"] = entry_hint(r, by_to[t], new[t], eh)  # in place: ours
        new_mods[str(t)] = {**mods[str(t)], "hint": sorted(eh)}
        t_new |= eh
    same_keys = {k: n for k, n in seen.items() if n} == before
    modified = _finished(report, cl, mods, rebuilt, seen if same_keys else None)
    if same_keys:  # only the rebuilt entries' triage moved: they take their place in order
        ordered = [m for m in cl["modified"] if m["to_index"] not in rebuilt]
        keyed = [_order_key(m, cl["order"]) for m in ordered]
        for e, _p in rebuilt.values():
            at = bisect.bisect_left(keyed, _order_key(e, cl["order"]))
            ordered.insert(at, e)
            keyed.insert(at, _order_key(e, cl["order"]))
        if triage:
            changes = [by_to[t] for t in rebuilt]
            set_triage(changes, {"modified": [e for e, _p in rebuilt.values()]})
    else:
        ordered = sort_modified(modified, cl["order"])
        if triage:
            set_triage(report["changes"], {"modified": modified})
    new_news = dict(news)
    added = []
    for e in cl["new"]:
        t = e["to_index"]
        if t in dirty_n:
            en = {t}
            e = new_entry(by_to[t], new[t], r.labels(t_old, en)[0])
            new_news[str(t)] = {"new": sorted(en)}
            t_new |= en
        added.append(e)
    deleted = [
        deleted_entry(by_from[e["from_index"]], old[e["from_index"]])
        if e["from_index"] in ch_old
        else e
        for e in cl["deleted"]
    ]
    groups = cl["groups"]
    out = {
        **cl,
        "modified": ordered,
        "groups": group_entries(
            report,
            modified,
            state["layout"],
            (groups["relocated"], groups["relocated_moved"]),
        ),
        "modified_unnamed": sum(1 for m in modified if not m["name"]),
        "new": added,
        "deleted": deleted,
    }
    return out, {**state, "modified": new_mods, "new": new_news}, (t_old, t_new)


def _order_key(m: dict[str, Any], order: str) -> tuple:
    """The sort key of :func:`kbtool.services.diff.changelog.sort_modified` (a total order:
    the to-side index ends it)."""
    if order == "index":
        return (m["to_index"],)
    if order == "weight":
        return (-m["weight"], m["to_index"])
    return (KIND_RANK.get(m["triage_kind"], 9), -m["triage"], m["to_index"])


def _finished(
    report: dict[str, Any],
    cl: dict[str, Any],
    mods: dict[str, Any],
    rebuilt: dict[int, tuple[dict[str, Any], dict[str, Any]]],
    seen: dict[tuple, int] | None,
) -> list[dict[str, Any]]:
    """The modified entries in report order with their final triage: with ``seen`` (no
    cross-function key count moved) only the rebuilt entries are finished, else every
    entry's kept reasons are finished again."""
    entries = {m["to_index"]: m for m in cl["modified"]}
    modified: list[dict[str, Any]] = []
    pres: list[dict[str, Any]] = []
    for c in report["changes"]:
        t = c["to_index"]
        if c["classification"] != "modified" or str(t) not in mods:
            continue
        got = rebuilt.get(t)
        if got is not None:
            modified.append(got[0])
            pres.append(got[1])
        else:
            modified.append(entries[t])
            if seen is None:
                pres.append(_pre(mods[str(t)]["pre"]))
    if seen is not None:
        finish_kept([p for _e, p in rebuilt.values()], seen=seen)
        for e, pre in rebuilt.values():
            set_entry_triage(e, pre)
        return modified
    finish_kept(pres)
    for e, pre in zip(modified, pres, strict=True):
        set_entry_triage(e, pre)
    return modified


def _reads(
    conn: sqlite3.Connection,
    versions: tuple[int, int],
    rows: tuple[LazyRows, LazyRows],
    names: tuple[dict[int, str], dict[int, str]],
    o2n: dict[int, int],
    state: dict[str, Any],
    by_to: dict[int, dict[str, Any]],
    dirty_m: set[int],
    dirty_n: set[int],
) -> Reads:
    """What rebuilding the dirty entries reads, fetched in a few statements: their rows,
    their callees' and callers' rows (labels, strings, sizes), memory accesses, bodies."""
    (a, b), (old, new) = versions, rows
    mods = state["modified"]
    froms = [by_to[t]["from_index"] for t in dirty_m]
    old.fetch(froms)
    new.fetch(dirty_m | dirty_n)
    ko = {by_to[t]["from_index"]: mods[str(t)]["ko"] for t in dirty_m}
    kn = {t: mods[str(t)]["kn"] for t in dirty_m}
    callees_old = {x for f in froms if f in old for x in old[f]["calls"]}
    reach_old = callees_old | {x for v in ko.values() for x in v}
    reach_new = {y for t in dirty_m | dirty_n if t in new for y in new[t]["calls"]}
    reach_new |= {y for v in kn.values() for y in v} | {o2n[x] for x in reach_old if x in o2n}
    old.fetch(reach_old)
    new.fetch(reach_new)
    tokens = None
    if state["views"] and dirty_m:
        tokens = (_Bodies(conn, a), _Bodies(conn, b))
        tokens[0].fetch([*froms, *callees_old])
        tokens[1].fetch(dirty_m)
    return Reads(
        old,
        new,
        names,
        o2n,
        (lambda i: ko[i], lambda i: kn[i]),
        (queries.mem_ops_for(conn, a, froms), queries.mem_ops_for(conn, b, sorted(dirty_m))),
        tokens,
    )
