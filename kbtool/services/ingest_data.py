"""A later ingest's data model built while the matcher runs in its child (issue #30).

The data model's labels read the new version's function names (errno, the malloc family's
state, function tables: :func:`kbtool.analysis.datalabels.role_labels`), which the KB has
only once the function rows and the binary's names are written, after the matcher's
answer. The model is built and written during the matcher with the names expected then
(:func:`kbtool.services.ingest_rows.expected_names`); after the answer the names are read
(:func:`built`): the same names, that model stands (the same rows a build then writes);
other names, the model is built again from the walk, replacing those rows (the same rows,
rowids included: they are the tables' last). Everything stays in the ingest's transaction.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from itertools import starmap
from operator import attrgetter
from typing import Any

from kbtool.kb import queries
from kbtool.services import data as data_model
from kbtool.services.ingest_end import keep_also
from kbtool.services.ingest_rows import expected_names

#: a data item's fields in its constructor's order
_ITEM_FIELDS = attrgetter("address", "size", "kind", "segment", "text", "label", "targets", "refs")


def build_ahead(
    conn, vid: int, parent: int, analysis, data: bytes, walked, old_rows, proposals
) -> tuple[dict[int, str], dict[str, Any]]:
    """The data model of version ``vid`` built and written now with the names it is
    expected to have (``proposals``: the binary's names; ``old_rows``: the parent's
    matching rows): ``(names, counts)`` for :func:`built`. ``walked`` stays as the walk
    made it (the labels change a copy of its items), for a build with other names."""
    names = expected_names(
        analysis.functions, proposals, old_rows, queries.function_names(conn, parent)
    )
    model = copy.copy(walked.model)
    items = model.items
    model.items = list(starmap(type(items[0]), map(_ITEM_FIELDS, items))) if items else []
    model._starts = []  # noqa: SLF001 - (the copy's own, made on use)
    w = data_model.Walked(
        model, walked.passive, walked.base, walked.image, walked.seconds, walked.cpu_seconds
    )
    w.refs_written = walked.refs_written
    return names, data_model.build(conn, vid, analysis, data, walked=w, names=names)


def built(
    conn,
    vid: int,
    analysis,
    data: bytes,
    progress: Callable[[int, int], None] | None,
    walked: list,
    ahead: list,
) -> dict[str, Any]:
    """The data model of version ``vid``, its function rows and names written: the one
    :func:`build_ahead` made (``ahead``: its answer) when the names are the ones it
    expected, else built now (from ``walked``'s walk when done during the matcher). Both
    lists are emptied (their memory back)."""
    try:
        if ahead:
            names = queries.function_names(conn, vid)
            if names == ahead[0][0]:
                return ahead[0][1]
            return data_model.build(conn, vid, analysis, data, walked=walked[0], names=names)
        return data_model.build(
            conn, vid, analysis, data, progress=progress, walked=walked[0] if walked else None
        )
    finally:
        keep_also(walked[:], ahead[:])  # (a process ending after: never freed)
        walked.clear()
        ahead.clear()
