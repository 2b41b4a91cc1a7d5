"""The matcher's staged run with its matcher handed back instead of freed (issue #30).

A process that leaves without a teardown (a later ingest's match child exits by
``os._exit``: :mod:`kbtool.services.ingest_match`) need not free the matcher's heap, ~0.09 s
of CPU on ffmpeg on the path to its answer. :func:`match_staged_kept` is
:func:`kbtool.identity.matcher.match_functions_staged` (the same calls in the same order,
the compiled twin's when it runs) with the matcher appended to ``keep``: the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .records import FuncRecord, Match


def match_staged_kept(
    old: Sequence[FuncRecord],
    new: Sequence[FuncRecord],
    keep: list[Any],
    *,
    stats: list[Any] | None = None,
) -> tuple[list[Match], list[Match]]:
    """``match_functions_staged(old, new, stats=stats)``, the matcher kept in ``keep`` (its
    memory freed only when the caller drops the list, or never: the process exits)."""
    from .matcher.driver import _Matcher, _one_store  # (the twin's parts when it runs)

    m = _Matcher(old, new)
    keep.append(m)
    with _one_store(m):
        out = m.run_staged(True)
    if stats is not None:
        stats.append(m.finish_stats())
    return out
