"""What one round of a pass needs: propose for many contexts with bounded concurrency, then
verify in index order so two functions of one round never get the same name.

The caller (the pass service) selects candidates, builds contexts, writes accepted proposals
through the gate, and for a later round rebuilds contexts with
:func:`~.context.refresh_names` so new names inform callers; it stops at a fixpoint (a round
that writes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from .backends import Backend
from .proposal import Proposal, Verdict
from .verifier import verify

T = TypeVar("T")
R = TypeVar("R")
DEFAULT_CONCURRENCY = 4


@dataclass(slots=True)
class Reviewed:
    """A proposal and the verifier's verdict on it."""

    proposal: Proposal
    verdict: Verdict


def map_bounded(
    fn: Callable[[T], R], items: Iterable[T], limit: int = DEFAULT_CONCURRENCY
) -> list[R]:
    """``[fn(x) for x in items]`` with at most ``limit`` calls in flight; order preserved."""
    seq = list(items)
    if limit <= 1 or len(seq) <= 1:
        return [fn(x) for x in seq]
    with ThreadPoolExecutor(max_workers=min(limit, len(seq))) as pool:
        return list(pool.map(fn, seq))


def run_round(
    backend: Backend,
    contexts: Sequence[Mapping[str, Any]],
    taken: Iterable[str],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> list[Reviewed]:
    """Propose for every context, then verify in context order.

    ``taken`` holds the names of the version's functions at the start of the round; names
    accepted earlier in the round count as taken for later ones. Contexts without a proposal
    are left out of the result. Deterministic when the backend is.
    """
    frozen = frozenset(taken)
    proposals = map_bounded(lambda c: backend.propose(c, frozen), contexts, concurrency)
    used = set(frozen)
    out: list[Reviewed] = []
    for ctx, p in zip(contexts, proposals, strict=True):
        if p is None:
            continue
        own = (ctx.get("existing") or {}).get("name")
        verdict = verify(p, ctx, used - {own} if own else used)
        if p.error and p.rule in ("malformed", "provider_error"):
            verdict = Verdict.reject(p.rule, p.error)
        if verdict.ok and p.name:
            used.add(p.name)
        out.append(Reviewed(p, verdict))
    return out
