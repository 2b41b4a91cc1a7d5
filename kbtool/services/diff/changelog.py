"""The semantic changelog of a diff: what changed in the code, in words a reverse engineer reads.

For a diff report (:mod:`kbtool.services.diff.report`, stored or computed) and the KB's facts:

- ``modified``: every *named* modified function (name of the to-side annotation, else the
  from-side one) with the direct calls added and removed (by callee name, or import
  ``module.field``, or ``func[index]``), the referenced strings added and removed, and the
  size change (instructions and body bytes); unnamed modified functions are counted
  (``modified_unnamed``);
- ``new``: every new function with its strings, size and callees;
- ``deleted``: every deleted function with its strings and size;
- ``imports_added`` / ``imports_removed``: function imports by ``module.field``.

A callee counts as the same call when the old callee is paired (by the report) with the new
callee, or both are the same import. Pure read; nothing is written.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries

__all__ = ["changelog", "MAX_STRINGS"]

MAX_STRINGS = 12       # strings listed per function (the count stays exact)
MAX_STRING_LEN = 160   # characters of one string


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


def _clip(s: str) -> str:
    return s if len(s) <= MAX_STRING_LEN else s[: MAX_STRING_LEN - 1] + "…"


def _strings(values: list[str]) -> list[str]:
    return [_clip(s) for s in list(dict.fromkeys(values))[:MAX_STRINGS]]


def changelog(conn: sqlite3.Connection, report: dict[str, Any], *, pairing=None) -> dict[str, Any]:
    """The semantic changelog of ``report`` (see the module docstring); a pure read.

    ``pairing``: the :class:`kbtool.services.diff.report.Pairing` the report was computed from, when
    at hand (saves loading the facts of both versions again)."""
    a, b = int(report["from_version_id"]), int(report["to_version_id"])
    if pairing is not None and (pairing.from_version_id, pairing.to_version_id) == (a, b):
        old, new = pairing.old_rows, pairing.new_rows
    else:
        old = {r["index"]: r for r in queries.matching_rows(conn, a)}
        new = {r["index"]: r for r in queries.matching_rows(conn, b)}
    names_old = _names(conn, a)
    names_new = _names(conn, b)

    o2n: dict[int, int] = {}
    for c in report["changes"]:
        if c["from_index"] is not None and c["to_index"] is not None:
            o2n[c["from_index"]] = c["to_index"]
    new_imports = {r["import_name"]: i for i, r in new.items() if r["imported"]}
    old_imports = {r["import_name"]: i for i, r in old.items() if r["imported"]}
    for name, i in old_imports.items():
        if name in new_imports:
            o2n.setdefault(i, new_imports[name])

    def callee_label_new(i: int) -> str:
        return _label_of(new, names_new, i)

    def callee_label_old(i: int) -> str:
        n = o2n.get(i)
        if n is not None and (n in names_new or new.get(n, {}).get("imported")):
            return callee_label_new(n)
        return _label_of(old, names_old, i)

    modified: list[dict[str, Any]] = []
    modified_unnamed = 0
    added: list[dict[str, Any]] = []
    deleted: list[dict[str, Any]] = []
    for c in report["changes"]:
        cls = c["classification"]
        if cls == "modified":
            if not c.get("name"):
                modified_unnamed += 1
                continue
            o, n = old.get(c["from_index"]), new.get(c["to_index"])
            if o is None or n is None:
                continue
            co = list(dict.fromkeys(o["calls"]))
            cn = list(dict.fromkeys(n["calls"]))
            mapped = {o2n.get(x) for x in co}
            kept_new = set(cn)
            calls_added = [callee_label_new(y) for y in cn if y not in mapped]
            calls_removed = [callee_label_old(x) for x in co if o2n.get(x) not in kept_new]
            so, sn = set(o["strings"]), set(n["strings"])
            modified.append({
                "name": c["name"],
                "from_index": c["from_index"],
                "to_index": c["to_index"],
                "stable_id": c["to_stable_id"],
                "runtime": bool(c.get("runtime")),
                "review": bool(c.get("review")),
                "score": c.get("score"),
                "calls_added": calls_added,
                "calls_removed": calls_removed,
                "strings_added": _strings([s for s in n["strings"] if s not in so]),
                "strings_removed": _strings([s for s in o["strings"] if s not in sn]),
                "instr_from": o["instr_count"],
                "instr_to": n["instr_count"],
                "size_from": o["body_size"],
                "size_to": n["body_size"],
            })
        elif cls == "new":
            n = new.get(c["to_index"])
            if n is None:
                continue
            added.append({
                "name": c.get("name"),
                "to_index": c["to_index"],
                "stable_id": c["to_stable_id"],
                "runtime": bool(c.get("runtime")),
                "strings": _strings(n["strings"]),
                "string_count": len(set(n["strings"])),
                "calls": [callee_label_new(y) for y in dict.fromkeys(n["calls"])],
                "instr": n["instr_count"],
                "size": n["body_size"],
            })
        elif cls == "deleted":
            o = old.get(c["from_index"])
            if o is None:
                continue
            deleted.append({
                "name": c.get("name"),
                "from_index": c["from_index"],
                "stable_id": c["from_stable_id"],
                "runtime": bool(c.get("runtime")),
                "strings": _strings(o["strings"]),
                "string_count": len(set(o["strings"])),
                "instr": o["instr_count"],
                "size": o["body_size"],
            })
    return {
        "from": report["from"],
        "to": report["to"],
        "from_version_id": a,
        "to_version_id": b,
        "modified": modified,
        "modified_unnamed": modified_unnamed,
        "new": added,
        "deleted": deleted,
        "imports_added": sorted(n for n in new_imports if n not in old_imports),
        "imports_removed": sorted(n for n in old_imports if n not in new_imports),
    }
