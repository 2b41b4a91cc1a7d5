"""The order of a diff's entries (``index`` or ``triage``) and the layout changes many
functions share, read off the triage's fields (:mod:`kbtool.services.diff.triage`); the
order of a report's changes as it is built (:func:`report_order`). Pure."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from operator import attrgetter, itemgetter, lt
from typing import Any

__all__ = ["KINDS", "layout_groups", "order_changes", "report_order"]

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


def report_order(
    pg: Any,
    defined: list[Any],
    paired: list[dict[str, Any]],
    entry: Callable[[str, int | None, int | None, Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """A diff report's changes (:func:`kbtool.services.diff.report.build_report`; ``pg``:
    its :class:`~kbtool.identity.pairing.Pairing`): ``paired`` (the changes of ``defined``,
    in its order) with the new functions' and the deleted ones' (made by ``entry``), every
    change in the order of ``(new index, 0, old index)``, a new function's ``(new index,
    0, -1)``, a deleted one's ``(the new index of the defined pair of the greatest old index
    below it, else -1, 1, old index)``. The pairs come by new index
    (:meth:`~kbtool.identity.pairing.Pairing.defined_pairs`): only the unpaired few are
    sorted and merged in (else every change is sorted)."""
    old_rows, new_rows, by_new, by_old = pg.old_rows, pg.new_rows, pg.by_new, pg.by_old
    # (the unpaired indices first: no row of a paired function read again)
    extra: list[tuple[tuple[int, int, int], dict[str, Any]]] = [
        ((n, 0, -1), entry("new", None, n, None))
        for n in sorted([n for n in new_rows if n not in by_new])
        if not new_rows[n]["imported"]
    ]
    gone = [
        o for o in sorted([o for o in old_rows if o not in by_old]) if not old_rows[o]["imported"]
    ]
    if gone:
        anchors = sorted([(p.old_index, p.new_index) for p in defined])
        anchor_old = [o for o, _ in anchors]
        for o in gone:
            k = bisect_left(anchor_old, o)
            at = anchors[k - 1][1] if k else -1
            extra.append(((at, 1, o), entry("deleted", o, None, None)))
    news = list(map(_NEW_INDEX, defined))
    if not all(map(lt, news, news[1:])):  # (not by new index: every change sorted)
        keyed = [((n, 0, p.old_index), e) for n, p, e in zip(news, defined, paired, strict=True)]
        keyed += extra
        keyed.sort(key=itemgetter(0))
        return [c for _, c in keyed]
    if not extra:
        return paired
    extra.sort(key=itemgetter(0))
    out: list[dict[str, Any]] = []
    i = 0
    for (x, _t, _o), e in extra:
        # the pairs before it: a new function's index is no pair's; a deleted one follows
        # the pair at its anchor
        j = bisect_right(news, x, i)
        out += paired[i:j]
        i = j
        out.append(e)
    out += paired[i:]
    return out


_NEW_INDEX = attrgetter("new_index")
