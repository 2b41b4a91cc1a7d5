"""The entries of a diff report's pairs (:func:`kbtool.services.diff.report.build_report`):
one dict per defined pair, its flags, names and runtime flag. Pure: the rows and
annotations in, the entries out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kbtool.analysis.runtime import RUNTIME_WRAPPER_MAX_INSTR, is_runtime_import, is_runtime_name

__all__ = ["pair_changes", "runtime_imports"]


def runtime_imports(rows: Mapping[int, dict[str, Any]]) -> set[int]:
    """The indices of a version's imports that the runtime provides."""
    return {i for i, r in rows.items() if r["imported"] and is_runtime_import(r["import_name"])}


class _Verdicts(dict):
    """:func:`is_runtime_name` of each name asked, once (a report asks of every pair's names
    on both sides: mostly the same names; a hit is a dict read, no call)."""

    def __missing__(self, name: str | None) -> bool:
        v = self[name] = is_runtime_name(name)
        return v


def pair_changes(
    pg: Any,
    defined: list[Any],
    known: Any,
    classify: Callable[[Any], tuple[bool, bool]],
    flags: Sequence[tuple[bool, bool]],
    ann_old: Mapping[int, dict[str, Any]],
    ann_new: Mapping[int, dict[str, Any]],
    rti_old: set[int],
    rti_new: set[int],
) -> list[dict[str, Any]]:
    """The changes of the defined pairs of ``pg`` (a :class:`~kbtool.identity.pairing.
    Pairing`; :func:`kbtool.services.diff.report.build_report`'s entries, in the order of
    ``defined``): ``known``, their flags codes (indices into ``flags``, ``(same,
    relocated)``) when computed elsewhere, else ``classify(pair)``'s. ``runtime``:
    ``report._runtime_check`` of either side, inline (asked of every pair: 22k on ffmpeg),
    ``rti_old``/``rti_new``: each version's :func:`runtime_imports`."""
    old_rows, new_rows = pg.old_rows, pg.new_rows
    old_get, new_get, ann_old_get, ann_new_get = (
        old_rows.get,
        new_rows.get,
        ann_old.get,
        ann_new.get,
    )
    by_name, small = _Verdicts().__getitem__, RUNTIME_WRAPPER_MAX_INSTR  # (once a name)
    paired: list[dict[str, Any]] = []
    for k, p in enumerate(defined):
        if known is not None:  # (computed elsewhere for this very pairing: the same flags)
            same, relocated = flags[known[k]]
        else:
            same, relocated = classify(p)
        o, n = p.old_index, p.new_index
        orow, nrow = old_get(o), new_get(n)
        an, ao = ann_new_get(n), ann_old_get(o)
        ann = an or ao
        # (_runtime_check's answer for (nrow, an) or (orow, ao): by the annotation, a raw
        # or an export name, a wrapper of a runtime import)
        runtime = (
            nrow is not None
            and (
                (an is not None and (an["runtime_oracle"] or by_name(an["name"])))
                or ((raw := nrow["raw_name"]) and by_name(raw))
                or ((ex := nrow["export_names"]) and any(map(by_name, ex)))
                or (
                    rti_new
                    and nrow["instr_count"] <= small
                    and not rti_new.isdisjoint(nrow["calls"])
                )
            )
        ) or (
            orow is not None
            and (
                (ao is not None and (ao["runtime_oracle"] or by_name(ao["name"])))
                or ((raw := orow["raw_name"]) and by_name(raw))
                or ((ex := orow["export_names"]) and any(map(by_name, ex)))
                or (
                    rti_old
                    and orow["instr_count"] <= small
                    and not rti_old.isdisjoint(orow["calls"])
                )
            )
        )
        e = {
            "classification": ("unchanged" if n == o else "moved") if same else "modified",
            "from_index": o,
            "to_index": n,
            "from_stable_id": orow["stable_id"] if orow else None,
            "to_stable_id": nrow["stable_id"] if nrow else None,
            "score": p.score,
            "review": bool(p.review),
            "runtime": bool(runtime),
            "name": ann["name"] if ann else None,
            "provenance": ann["provenance"] if ann else None,
            "confidence": ann["confidence"] if ann else None,
        }
        if relocated:
            e["relocated"] = True  # same code; only data addresses (or call targets) moved
        paired.append(e)
    return paired
