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

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kbtool.kb import queries
from kbtool.kb.queries.diff_rows import function_bodies, import_indices, matching_rows_for
from kbtool.services.diff.changelog import (
    Reads,
    deleted_entry,
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
from kbtool.services.diff.report import code_runtime
from kbtool.services.diff.triage import finish_kept

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


def relabel(
    conn: sqlite3.Connection,
    report: dict[str, Any],
    cl: dict[str, Any],
    state: dict[str, Any],
    changed: tuple[set[int], set[int]],
    names: tuple[dict[int, str], dict[int, str]],
) -> tuple[dict[str, Any], dict[str, Any], tuple[set[int], set[int]]]:
    """The changelog of ``report`` (its annotation fields already today's) from the kept
    ``cl`` and ``state``, rebuilding the entries that read an index of ``changed`` (old
    side, new side); ``names``: today's annotation names of both versions. Returns the
    changelog, its state and the indices its rebuilt entries read (neither input is
    changed). KeyError/TypeError/ValueError on a state of another shape."""
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
    by_to = {
        c["to_index"]: c for c in report["changes"] if c["classification"] in ("modified", "new")
    }
    old, new = LazyRows(conn, a), LazyRows(conn, b)
    o2n = index_map(report, import_indices(conn, a), import_indices(conn, b))
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
    r = Reads(
        old,
        new,
        names,
        o2n,
        (lambda i: ko[i], lambda i: kn[i]),
        (queries.mem_ops_for(conn, a, froms), queries.mem_ops_for(conn, b, sorted(dirty_m))),
        tokens,
    )
    t_old: set[int] = set()
    t_new: set[int] = set()
    new_mods = dict(mods)
    rebuilt: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for t in sorted(dirty_m):
        c, kept = by_to[t], mods[str(t)]
        eo, en = {c["from_index"]}, {t}
        e = modified_entry(r, c, eo, en)
        if e is None:
            raise ValueError(f"function {t} has no row any more")
        e.pop("_ins_grams", None)
        e.pop("_del_keys", None)
        if "_deleted" in e:
            e["_moved"] = kept["pre"]["_moved"]  # moved code: bodies only, kept as counted
        pre = split_triage(e)
        new_mods[str(t)] = {
            "old": sorted(eo),
            "new": sorted(en),
            "ko": kept["ko"],
            "kn": kept["kn"],
            "pre": plain_triage(pre),
        }
        rebuilt[t] = (e, pre)
        t_old |= eo
        t_new |= en
    entries = {m["to_index"]: m for m in cl["modified"]}
    modified: list[dict[str, Any]] = []
    pres: list[dict[str, Any]] = []
    for c in report["changes"]:
        if c["classification"] != "modified" or str(c["to_index"]) not in mods:
            continue
        got = rebuilt.get(c["to_index"])
        if got is None:
            e = dict(entries[c["to_index"]])
            e.pop("layout_delta", None)  # set again by the grouping
            got = (e, _pre(mods[str(c["to_index"])]["pre"]))
        modified.append(got[0])
        pres.append(got[1])
    finish_kept(pres)
    for e, pre in zip(modified, pres, strict=True):
        set_entry_triage(e, pre)
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
    by_from = {c["from_index"]: c for c in report["changes"] if c["classification"] == "deleted"}
    deleted = [
        deleted_entry(by_from[e["from_index"]], old[e["from_index"]])
        if e["from_index"] in ch_old
        else e
        for e in cl["deleted"]
    ]
    out = {
        **cl,
        "modified": sort_modified(modified, cl["order"]),
        "groups": group_entries(report, modified),
        "modified_unnamed": sum(1 for m in modified if not m["name"]),
        "new": added,
        "deleted": deleted,
    }
    return out, {**state, "modified": new_mods, "new": new_news}, (t_old, t_new)
