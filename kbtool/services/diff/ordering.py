"""The order of a diff's entries (``index`` or ``triage``) and the layout changes many
functions share, read off the triage's fields (:mod:`kbtool.services.diff.triage`). Pure."""

from __future__ import annotations

from typing import Any

__all__ = ["KINDS", "layout_groups", "order_changes"]

KINDS = ("fix", "change", "churn", "layout")


def layout_groups(entries: list[dict[str, Any]], min_functions: int = 3) -> list[dict[str, Any]]:
    """Struct offset shifts shared by many functions: ``[{delta, offsets, functions}]``.

    A delta (new - old field offset) that at least ``min_functions`` modified functions show
    is one layout change (a field inserted into or removed from a struct), reported once."""
    by_delta: dict[int, dict[str, Any]] = {}
    for e in entries:
        deltas = {int(b) - int(a) for _m, a, b in e.get("offsets_changed", [])}
        for d in deltas:
            g = by_delta.setdefault(d, {"delta": d, "offsets": set(), "functions": []})
            g["functions"].append(e)
            g["offsets"].update(
                f"{a} -> {b}" for _m, a, b in e["offsets_changed"] if int(b) - int(a) == d
            )
    out = []
    for d, g in sorted(by_delta.items(), key=lambda kv: -len(kv[1]["functions"])):
        if len(g["functions"]) >= min_functions:
            out.append(
                {
                    "delta": d,
                    "offsets": sorted(g["offsets"], key=lambda s: int(s.split()[0]))[:12],
                    "functions": g["functions"],
                }
            )
    return out


_KIND_RANK = {k: i for i, k in enumerate(KINDS)}
_CLASS_RANK = {"modified": 0, "new": 1, "deleted": 2, "moved": 3, "unchanged": 4}


def order_changes(changes: list[dict[str, Any]], order: str = "triage") -> list[dict[str, Any]]:
    """Diff report entries in ``order``: ``index`` (as the report lists them: by new-side
    index) or ``triage`` (modified functions patch-like first, by ``triage_kind`` then
    ``triage``; then new, deleted, moved, unchanged, each by index)."""
    if order == "index":
        return list(changes)
    if order != "triage":
        raise ValueError(f"unknown order {order!r}: use triage or index")
    return sorted(
        changes,
        key=lambda c: (
            _CLASS_RANK.get(c["classification"], 9),
            _KIND_RANK.get(c.get("triage_kind", "change"), 9)
            if c["classification"] == "modified"
            else 0,
            -(c.get("triage") or 0.0) if c["classification"] == "modified" else 0.0,
        ),
    )
