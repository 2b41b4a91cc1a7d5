"""The annotation-dependent fields of a kept diff answer, joined again at read time.

A computed diff answer (report + changelog) depends on two kinds of input: the two modules'
immutable content (the pairing, scores, classification, relocation, explanations, triage:
seconds of CPU) and the annotations of the two versions (a change's ``name``,
``provenance``, ``confidence``, the annotation part of ``runtime``; the callee labels the
changelog's explanations and triage read). The matcher reads no annotation (only the
binary's own names: ``raw_name``, exports, imports), so the pairing never depends on them.

An answer is kept with the :func:`snapshot` of the annotations it was built from and the
function indices whose annotation its changelog read (``touched``, recorded by
:func:`kbtool.services.diff.changelog.changelog`). When the annotations moved on (a rename,
a carried or agent name), :func:`rename_changes` sets the report's annotation fields of the
changes at the changed indices (and the ``runtime_churn`` count) exactly as
:func:`kbtool.services.diff.report.build_report` sets them (a change that loses a
runtime-looking name asks its code: one function's facts); when the changelog read a changed
index (:func:`rejoinable` says no), the entries that read it are built again
(:mod:`kbtool.services.diff.relabel`). Pure: no DB access.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from kbtool.analysis.runtime import is_runtime_label, is_runtime_name
from kbtool.kb import queries

__all__ = [
    "version_annotations",
    "snapshot",
    "fingerprint",
    "rejoinable",
    "rename_changes",
    "changed_indices",
    "CHANGED",
]

CHANGED = frozenset(("modified", "new", "deleted"))


def version_annotations(conn: sqlite3.Connection, version_id: int) -> dict[int, dict[str, Any]]:
    """index -> {name, provenance, confidence, runtime_oracle} for named functions of a version."""
    out: dict[int, dict[str, Any]] = {}
    # (the evidence is read only where it is looked at: an oracle's)
    for idx, name, prov, conf, ev in queries.diff_annotation_rows(conn, version_id):
        rt = False
        if prov == "oracle":
            try:
                evidence = json.loads(ev or "[]")
            except ValueError:
                evidence = []
            rt = any(
                isinstance(item, dict)
                and (item.get("runtime") or is_runtime_label(item.get("oracle")))
                for item in (evidence if isinstance(evidence, list) else [])
            )
        out[idx] = {"name": name, "provenance": prov, "confidence": conf, "runtime_oracle": rt}
    return out


Snapshot = dict[str, dict[str, list[Any]]]  # "a"/"b" -> str(index) -> [name, prov, conf, rt]


def snapshot(ann_a: dict[int, dict[str, Any]], ann_b: dict[int, dict[str, Any]]) -> Snapshot:
    """The annotation fields an answer reads, of both versions, as JSON-ready lists (the
    output of :func:`kbtool.services.diff.report.version_annotations`)."""

    def one(ann: dict[int, dict[str, Any]]) -> dict[str, list[Any]]:
        return {
            str(i): [a["name"], a["provenance"], a["confidence"], bool(a["runtime_oracle"])]
            for i, a in sorted(ann.items())
        }

    return {"a": one(ann_a), "b": one(ann_b)}


def fingerprint(snap: Snapshot) -> str:
    """A short digest of a snapshot (part of an in-memory key)."""
    text = json.dumps(snap, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _changed(old: dict[str, list[Any]], new: dict[str, list[Any]]) -> set[int]:
    return {int(k) for k in old.keys() | new.keys() if old.get(k) != new.get(k)}


def changed_indices(was: Snapshot, now: Snapshot) -> tuple[set[int], set[int]]:
    """The function indices (old side, new side) whose annotation differs."""
    return _changed(was["a"], now["a"]), _changed(was["b"], now["b"])


def _ann_runtime(rec: list[Any] | None) -> bool:
    return bool(rec is not None and (rec[3] or is_runtime_name(rec[0])))


def _side(snap: Snapshot, c: dict[str, Any]) -> tuple[list[Any] | None, bool]:
    """The annotation a change shows (to-side first) and the annotation part of its runtime."""
    o, n = c["from_index"], c["to_index"]
    to_rec = snap["b"].get(str(n)) if n is not None else None
    from_rec = snap["a"].get(str(o)) if o is not None else None
    return to_rec or from_rec, _ann_runtime(to_rec) or _ann_runtime(from_rec)


def rejoinable(meta: dict[str, Any], now: Snapshot) -> bool:
    """A kept answer's ``meta`` (``snapshot``, ``touched``) can be brought to ``now``
    without computing (a runtime flag that only the facts tell aside)."""
    try:
        was, touched = meta["snapshot"], meta["touched"]
        return not (
            _changed(was["a"], now["a"]) & set(touched["old"])
            or _changed(was["b"], now["b"]) & set(touched["new"])
        )
    except (KeyError, TypeError, AttributeError):
        return False


def rename_changes(
    report: dict[str, Any],
    was: Snapshot,
    now: Snapshot,
    toolchain_changed: bool,
    code_runtime: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any] | None:
    """The report's annotation fields (``name``, ``provenance``, ``confidence``,
    ``runtime``, ``summary.runtime_churn``) under ``now``, in place; the changelog and the
    triage are left as they are (the caller builds them again when they read a changed
    annotation). A change that loses a runtime-looking name is runtime only if its code says
    so: ``code_runtime(change)`` tells (the facts of that one function); without it, None."""
    changed_a, changed_b = _changed(was["a"], now["a"]), _changed(was["b"], now["b"])
    if not changed_a and not changed_b:
        return report
    churn_delta = 0
    for c in report["changes"]:
        if not (
            (c["from_index"] is not None and c["from_index"] in changed_a)
            or (c["to_index"] is not None and c["to_index"] in changed_b)
        ):
            continue
        _old_rec, old_rt = _side(was, c)
        rec, new_rt = _side(now, c)
        runtime = bool(c["runtime"])
        if new_rt and not runtime:
            runtime = True
        elif old_rt and not new_rt:
            if code_runtime is None:
                return None  # was it runtime by its code too? only the facts tell
            runtime = bool(code_runtime(c))
        if runtime != c["runtime"] and toolchain_changed and c["classification"] in CHANGED:
            churn_delta += 1 if runtime else -1
        c["runtime"] = runtime
        c["name"] = rec[0] if rec else None
        c["provenance"] = rec[1] if rec else None
        c["confidence"] = rec[2] if rec else None
    report["summary"]["runtime_churn"] += churn_delta
    return report
