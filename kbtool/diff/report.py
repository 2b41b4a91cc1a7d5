"""The diff report: what changed between two versions, one entry per function.

    get_diff(conn, a, b)      stored report if one was saved, else computed (a pure read)
    compute_diff(conn, a, b)  always computes, never writes
    save_diff(conn, report)   store a report (``kbtool diff A B --save``)

Pairing (shared with carry-over, :mod:`kbtool.diff.carry`):

1. Functions that share a ``stable_id`` on both sides are the same logical function (the
   identity the KB recorded at ingest) and are paired first.
2. The matcher (:func:`kbtool.diff.matcher.match_functions`, fuzzy) runs over both whole
   versions; its pairs between functions not paired in step 1 are added. Those are the
   pairs whose new side did not keep the old identity: the ones carry-over names.
3. What is left is ``deleted`` (old side) or ``new`` (new side).

Classification of a pair: the *code* is the same when the exact body hash is equal, or
when every direct callee maps to the image of the old callee under the pairing and either
the normalised shape hash is equal or the instruction stream (opcodes), the referenced
strings and the small constants (|c| < 1024) are equal. So a body that only differs by
shifted function indices or relocated linear-memory addresses is not "modified", but one
that now calls another function, references other text or computes differently is.
Same code and same index:
``unchanged``; same code at another index: ``moved``; otherwise ``modified``. Imported
functions are paired too (they anchor the callee comparison) but are not listed.

Each change: ``classification, from_index, to_index, from_stable_id, to_stable_id, score,
review, runtime, name, provenance, confidence``. ``score`` is the matcher's score (0..1;
null for ``new``/``deleted``); for an identity pair the matcher did not reproduce, the
content similarity of the two bodies, with ``review`` set. ``review`` is the matcher's flag
(low score, or the best candidate not clearly ahead of the second), also set when the
type signature changed and the score is below 0.8, next to a wrapper split
(:func:`review_wrapper_splits`) and for weak pairs the call graph does not back
(:func:`review_weak_neighbourhoods`); the flag never changes the pairing. ``name``, ``provenance`` and
``confidence`` are the annotation of the **to-side** function when it has one, else the
annotation of the **from-side** function (so a deleted function shows its old name, and a
carried name shows as soon as it was carried). ``runtime``: see :mod:`kbtool.diff.runtime`.

Summary: counts of ``unchanged``, ``moved``, ``modified``, ``added`` (new), ``removed``
(deleted), ``runtime_churn`` (runtime functions modified, new or deleted while the
toolchain version changed between the two versions, both known) and ``review``.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from kbtool.diff.features import FeatureCache
from kbtool.diff.matcher import REVIEW_SCORE, FuncRecord, Match, match_functions
from kbtool.diff.runtime import is_runtime_label, is_runtime_name, runtime_by_signature
from kbtool.kb import queries
from kbtool.kb.db import now, transaction

__all__ = [
    "get_diff",
    "compute_diff",
    "compute_diff_with_pairing",
    "stored_diff",
    "save_diff",
    "delete_diff",
    "pair_versions",
    "Pairing",
    "Pair",
    "CLASSIFICATIONS",
    "CHANGED",
]

CLASSIFICATIONS = ("unchanged", "moved", "modified", "new", "deleted")
CHANGED = frozenset(("modified", "new", "deleted"))  # code changes (moved keeps the code)
# a pair whose type signature changed is flagged for review below this score
REVIEW_SIG_SCORE = 0.8


@dataclass(slots=True)
class Pair:
    old_index: int
    new_index: int
    score: float
    method: str  # matcher method, or "identity" when only the KB identity pairs them
    review: bool
    identity: bool  # both sides share the stable_id


@dataclass
class Pairing:
    """The pairing of two versions plus everything loaded to compute it."""

    from_version_id: int
    to_version_id: int
    old_rows: dict[int, dict[str, Any]]
    new_rows: dict[int, dict[str, Any]]
    old_recs: dict[int, FuncRecord]
    new_recs: dict[int, FuncRecord]
    by_new: dict[int, Pair] = field(default_factory=dict)
    by_old: dict[int, Pair] = field(default_factory=dict)

    def defined_pairs(self) -> list[Pair]:
        return [p for n, p in sorted(self.by_new.items()) if not self.new_rows[n]["imported"]]

    def same_code(self, p: Pair) -> bool:
        """The two bodies are the same code up to relocation (see the module docstring)."""
        o, n = self.old_rows[p.old_index], self.new_rows[p.new_index]
        if o["body_hash"] and o["body_hash"] == n["body_hash"]:
            return True
        if not self._callees_map(o, n):
            return False
        if o["shape_hash"] and o["shape_hash"] == n["shape_hash"]:
            return True
        # same instruction stream, strings and small constants: only addresses moved
        return (
            o["ops"] == n["ops"]
            and o["strings"] == n["strings"]
            and _small(o["consts"]) == _small(n["consts"])
        )

    def _callees_map(self, o: dict[str, Any], n: dict[str, Any]) -> bool:
        co = list(dict.fromkeys(o["calls"]))
        cn = list(dict.fromkeys(n["calls"]))
        if len(co) != len(cn):
            return False
        for a, b in zip(co, cn, strict=True):
            q = self.by_old.get(a)
            if q is None or q.new_index != b:
                return False
        return True


ADDRESS_MIN = 1024  # constants this large may be linear-memory addresses (relocated by a rebuild)


def _small(consts: list[int]) -> set[int]:
    return {c for c in consts if -ADDRESS_MIN < c < ADDRESS_MIN}


def _records(rows: list[dict[str, Any]]) -> list[FuncRecord]:
    from kbtool.diff.records import records_from_rows

    return records_from_rows(rows)


def pair_versions(conn: sqlite3.Connection, a: int, b: int, *, fuzzy: bool = True) -> Pairing:
    """Pair the functions of version ``a`` (older) with those of ``b`` (newer); a pure read."""
    old_list = queries.matching_rows(conn, a)
    new_list = queries.matching_rows(conn, b)
    old_recs = _records(old_list)
    new_recs = _records(new_list)
    pg = Pairing(
        from_version_id=a,
        to_version_id=b,
        old_rows={r["index"]: r for r in old_list},
        new_rows={r["index"]: r for r in new_list},
        old_recs={r.index: r for r in old_recs},
        new_recs={r.index: r for r in new_recs},
    )
    matches: dict[int, Match] = {
        m.new_index: m for m in match_functions(old_recs, new_recs, fuzzy=fuzzy)
    }

    # 1. identity pairs
    old_by_sid: dict[str, int] = {}
    for r in old_list:
        old_by_sid.setdefault(r["stable_id"], r["index"])
    feats: FeatureCache | None = None
    for r in new_list:
        o = old_by_sid.get(r["stable_id"])
        if o is None or o in pg.by_old:
            continue
        if pg.old_rows[o]["imported"] != r["imported"]:
            continue
        n = r["index"]
        m = matches.get(n)
        if m is not None and m.old_index == o:
            p = Pair(o, n, m.score, m.method, m.review, True)
        else:
            if feats is None:
                feats = FeatureCache(old_recs, new_recs)
            ro, rn = pg.old_recs[o], pg.new_recs[n]
            total, wsum = feats.content_similarity(ro, rn)
            s = total / wsum if wsum else 0.0
            if ro.type_sig != rn.type_sig:
                s *= 0.8
            if ro.body_hash and ro.body_hash == rn.body_hash:
                s = 1.0
            # the KB's identity and the matcher disagree (or the matcher found nothing)
            p = Pair(
                o,
                n,
                round(min(1.0, max(0.0, s)), 4),
                "identity",
                m is not None or s < REVIEW_SCORE,
                True,
            )
        pg.by_new[n] = p
        pg.by_old[o] = p
    # 2. matcher pairs among the rest
    for n in sorted(matches):
        m = matches[n]
        if n in pg.by_new or m.old_index in pg.by_old:
            continue
        p = Pair(m.old_index, n, m.score, m.method, m.review, False)
        pg.by_new[n] = p
        pg.by_old[m.old_index] = p
    # a changed signature without a high score is a weak match: have a human look
    for p in pg.by_new.values():
        if not p.review and p.score < REVIEW_SIG_SCORE and \
                pg.old_recs[p.old_index].type_sig != pg.new_recs[p.new_index].type_sig:
            p.review = True
    review_wrapper_splits(pg)
    review_weak_neighbourhoods(pg)
    return pg


# a thin wrapper: few instructions (a call with its arguments passed on, maybe a constant)
WRAPPER_MAX_INSTR = 32
# a pair below this score whose size changed by more than WEAK_SIZE_RATIO and whose matched
# neighbours disagree is flagged for review
REVIEW_WEAK_SCORE = 0.75
WEAK_SIZE_RATIO = 0.75


def review_wrapper_splits(pg: Pairing) -> int:
    """Flag pairs next to a wrapper split (or merge); returns how many were newly flagged.

    A function the other side has no counterpart for (new, or deleted) that is a thin
    wrapper (at most ``WRAPPER_MAX_INSTR`` instructions, fewer than the paired function),
    directly calls one function of a pair and has the type signature of the pair's *other*
    side is the sign of a split: upstream moved the body into a new function and left a
    thin wrapper under the old name (or, read backwards, folded the wrapper into the body).
    The pair follows the body, so the name (the API) may belong to the wrapper instead.
    """
    flagged = 0
    sides = (
        (pg.new_recs, pg.by_new, pg.old_recs, "old_index", "new_index"),
        (pg.old_recs, pg.by_old, pg.new_recs, "new_index", "old_index"),
    )
    for recs, paired, other_recs, other_attr, own_attr in sides:
        for w, rw in recs.items():
            if rw.imported or w in paired or rw.instr_count > WRAPPER_MAX_INSTR:
                continue
            for c in dict.fromkeys(rw.calls):
                p = paired.get(c)
                if p is None or p.review or c == w:
                    continue
                if recs[getattr(p, own_attr)].imported:
                    continue
                if rw.instr_count >= recs[c].instr_count:
                    continue
                if other_recs[getattr(p, other_attr)].type_sig == rw.type_sig:
                    p.review = True
                    flagged += 1
    return flagged


def review_weak_neighbourhoods(pg: Pairing) -> int:
    """Flag weak pairs the call graph does not back; returns how many were newly flagged.

    A pair scoring below ``REVIEW_WEAK_SCORE`` whose sizes differ by more than
    ``WEAK_SIZE_RATIO`` (instruction counts) and where a paired callee or caller of the old
    function maps to a function that is not a callee or caller of the new one: three weak
    signs at once, typical of two sibling functions (create/expand, init/reset) paired
    with each other.
    """
    from kbtool.diff.features import size_ratio

    weak = [
        p for p in pg.by_new.values()
        if not p.review and p.score < REVIEW_WEAK_SCORE
        and not pg.new_recs[p.new_index].imported
        and size_ratio(pg.old_recs[p.old_index].instr_count,
                       pg.new_recs[p.new_index].instr_count) < WEAK_SIZE_RATIO
    ]
    if not weak:
        return 0
    callers_old = _callers(pg.old_recs)
    callers_new = _callers(pg.new_recs)
    flagged = 0
    for p in weak:
        o, n = p.old_index, p.new_index
        hoods = (
            ([c for c in pg.old_recs[o].calls
              if c != o and c in pg.old_recs and not pg.old_recs[c].imported],
             set(pg.new_recs[n].calls)),
            (callers_old.get(o, ()), set(callers_new.get(n, ()))),
        )
        for lo, ln in hoods:
            if any(q is not None and q.new_index not in ln
                   for q in (pg.by_old.get(x) for x in lo)):
                p.review = True
                flagged += 1
                break
    return flagged


def _callers(recs: dict[int, FuncRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, r in recs.items():
        for c in dict.fromkeys(r.calls):
            if c != i:
                out.setdefault(c, []).append(i)
    return out


# --------------------------------------------------------------------------- annotations


def _annotations(conn: sqlite3.Connection, version_id: int) -> dict[int, dict[str, Any]]:
    """index -> {name, provenance, confidence, runtime_oracle} for named functions of a version."""
    out: dict[int, dict[str, Any]] = {}
    for idx, a in queries.annotations_by_index(conn, version_id, with_evidence=True).items():
        rt = a["provenance"] == "oracle" and any(
            isinstance(item, dict) and (item.get("runtime") or is_runtime_label(item.get("oracle")))
            for item in (a["evidence"] if isinstance(a["evidence"], list) else [])
        )
        out[idx] = {"name": a["name"], "provenance": a["provenance"],
                    "confidence": a["confidence"], "runtime_oracle": rt}
    return out


def _is_runtime(
    row: dict[str, Any] | None, ann: dict[str, Any] | None, rows: dict[int, dict[str, Any]]
) -> bool:
    if row is None:
        return False
    if ann is not None and (ann["runtime_oracle"] or is_runtime_name(ann["name"])):
        return True
    if is_runtime_name(row["raw_name"]) or any(is_runtime_name(e) for e in row["export_names"]):
        return True
    imports = [
        rows[c]["import_name"]
        for c in dict.fromkeys(row["calls"])
        if c in rows and rows[c]["imported"]
    ]
    return runtime_by_signature(imports, row["instr_count"])


# --------------------------------------------------------------------------- report


def _label(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    return queries.version_info(conn, version_id)  # raises UnknownVersionError


def compute_diff(conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any]:
    """The diff report of ``a`` (older baseline) -> ``b`` (newer), computed now; never writes.

    Raises :class:`kbtool.kb.errors.UnknownVersionError` for an unknown id.
    """
    return compute_diff_with_pairing(conn, a, b)[0]


def compute_diff_with_pairing(conn: sqlite3.Connection, a: int, b: int) -> tuple[dict[str, Any], Pairing]:
    """:func:`compute_diff` plus the pairing it was built from (its rows serve the changelog)."""
    va = _label(conn, a)
    vb = _label(conn, b)
    pg = pair_versions(conn, a, b)
    return build_report(conn, pg, va, vb), pg


def stored_diff(conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any] | None:
    """The saved report of the pair, or None."""
    report = queries.stored_diff_report(conn, a, b)
    if report is None:
        return None
    report["stored"] = True
    return report


def build_report(
    conn: sqlite3.Connection, pg: Pairing, va: dict[str, Any], vb: dict[str, Any]
) -> dict[str, Any]:
    ann_old = _annotations(conn, pg.from_version_id)
    ann_new = _annotations(conn, pg.to_version_id)
    ta, tb = va.get("toolchain_version"), vb.get("toolchain_version")
    toolchain_changed = bool(ta and tb and ta != tb)

    keyed: list[tuple[tuple[int, int, int], dict[str, Any]]] = []

    def entry(cls: str, o: int | None, n: int | None, p: Pair | None) -> dict[str, Any]:
        orow = pg.old_rows.get(o) if o is not None else None
        nrow = pg.new_rows.get(n) if n is not None else None
        ann = (ann_new.get(n) if n is not None else None) or (
            ann_old.get(o) if o is not None else None
        )
        runtime = _is_runtime(
            nrow, ann_new.get(n) if n is not None else None, pg.new_rows
        ) or _is_runtime(orow, ann_old.get(o) if o is not None else None, pg.old_rows)
        return {
            "classification": cls,
            "from_index": o,
            "to_index": n,
            "from_stable_id": orow["stable_id"] if orow else None,
            "to_stable_id": nrow["stable_id"] if nrow else None,
            "score": p.score if p is not None else None,
            "review": bool(p.review) if p is not None else False,
            "runtime": bool(runtime),
            "name": ann["name"] if ann else None,
            "provenance": ann["provenance"] if ann else None,
            "confidence": ann["confidence"] if ann else None,
        }

    # old index -> new index of paired defined functions, to place deleted ones in order
    anchors: list[tuple[int, int]] = []
    for p in pg.defined_pairs():
        if p.new_index == p.old_index and pg.same_code(p):
            cls = "unchanged"
        elif pg.same_code(p):
            cls = "moved"
        else:
            cls = "modified"
        anchors.append((p.old_index, p.new_index))
        keyed.append(((p.new_index, 0, p.old_index), entry(cls, p.old_index, p.new_index, p)))
    for n, row in sorted(pg.new_rows.items()):
        if row["imported"] or n in pg.by_new:
            continue
        keyed.append(((n, 0, -1), entry("new", None, n, None)))
    anchors.sort()
    anchor_old = [o for o, _ in anchors]
    for o, row in sorted(pg.old_rows.items()):
        if row["imported"] or o in pg.by_old:
            continue
        k = bisect.bisect_left(anchor_old, o)
        at = anchors[k - 1][1] if k else -1
        keyed.append(((at, 1, o), entry("deleted", o, None, None)))
    keyed.sort(key=lambda kv: kv[0])
    changes = [c for _, c in keyed]

    counts = dict.fromkeys(CLASSIFICATIONS, 0)
    churn = review = 0
    for c in changes:
        counts[c["classification"]] += 1
        review += c["review"]
        if toolchain_changed and c["runtime"] and c["classification"] in CHANGED:
            churn += 1
    return {
        "from": va["label"],
        "to": vb["label"],
        "from_version_id": pg.from_version_id,
        "to_version_id": pg.to_version_id,
        "stored": False,
        "summary": {
            "unchanged": counts["unchanged"],
            "moved": counts["moved"],
            "modified": counts["modified"],
            "added": counts["new"],
            "removed": counts["deleted"],
            "runtime_churn": churn,
            "review": review,
        },
        "changes": changes,
    }


def get_diff(conn: sqlite3.Connection, from_version_id: int, to_version_id: int) -> dict[str, Any]:
    """The stored report of the pair when one was saved, else :func:`compute_diff` (a pure read)."""
    _label(conn, from_version_id)
    _label(conn, to_version_id)
    report = stored_diff(conn, from_version_id, to_version_id)
    if report is not None:
        return report
    return compute_diff(conn, from_version_id, to_version_id)


def save_diff(conn: sqlite3.Connection, report: dict[str, Any]) -> None:
    """Store ``report`` as the diff of its pair (replacing an older one)."""
    a, b = int(report["from_version_id"]), int(report["to_version_id"])
    _label(conn, a)
    _label(conn, b)
    body = dict(report, stored=True)
    with transaction(conn):
        conn.execute(
            "INSERT OR REPLACE INTO diffs (from_version_id, to_version_id, report, created_at)"
            " VALUES (?, ?, ?, ?)",
            (a, b, json.dumps(body, ensure_ascii=False, sort_keys=False), now()),
        )


def delete_diff(conn: sqlite3.Connection, a: int, b: int) -> bool:
    """Forget the stored report of a pair; True when there was one."""
    with transaction(conn):
        cur = conn.execute(
            "DELETE FROM diffs WHERE from_version_id = ? AND to_version_id = ?", (a, b)
        )
        return cur.rowcount > 0
