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
from .context import refresh_names
from .order import bottom_up_levels
from .proposal import Proposal, Verdict
from .summary import UNCONFIDENT_BELOW, PassSummary
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
    cancelled: Callable[[], bool] | None = None,
) -> list[Reviewed]:
    """Propose for every context, then verify in context order.

    ``taken`` holds the names of the version's functions at the start of the round; names
    accepted earlier in the round count as taken for later ones. Contexts without a proposal
    are left out of the result. Deterministic when the backend is. ``cancelled()`` is asked
    before every backend call; once it is true no further call is made (the answers already
    received are still verified and returned).
    """
    frozen = frozenset(taken)

    def propose(ctx: Mapping[str, Any]) -> Any:
        if cancelled is not None and cancelled():
            return None
        # a function's own current name is not "taken" from its point of view
        own = (ctx.get("existing") or {}).get("name")
        return backend.propose(ctx, frozen - {own} if own else frozen)

    proposals = map_bounded(propose, contexts, concurrency)
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


def run_rounds(
    backend: Backend,
    contexts: Sequence[Mapping[str, Any]],
    taken: Iterable[str],
    write: Callable[[Proposal], tuple[bool, str]],
    *,
    rounds: int = 1,
    concurrency: int = DEFAULT_CONCURRENCY,
    summary: PassSummary | None = None,
    on_result: Callable[[int, Reviewed, str, str], None] | None = None,
    floor: float = 0.0,
    suggest: Callable[[Proposal], tuple[bool, str]] | None = None,
    cancelled: Callable[[], bool] | None = None,
    bottom_up: bool = True,
) -> PassSummary:
    """Propose, verify and write for ``contexts`` over up to ``rounds`` rounds.

    ``write(proposal) -> (written, reason)`` is the caller's gate (the only side effect).
    Round 1 covers every context, callees first (``bottom_up``: level by level of
    :func:`~.order.bottom_up_levels`, strongly connected components together, each level's
    contexts refreshed with the names written so far); a later round re-proposes only for functions whose context
    changed (a callee or caller got a name in the previous round) and that do not yet hold a
    name at confidence 0.5 or more from this pass. It stops early at a fixpoint (a round that
    writes nothing). ``considered`` counts functions once; the caller adds ``skipped_existing``.
    ``on_result(round, reviewed, outcome, reason)`` (outcome ``write``, ``verifier_reject`` or
    ``economy_reject``, ``suggest``) is called in the calling thread after each decision, e.g.
    to emit events for a live feed.

    The write floor: a verified proposal below ``floor`` is not written; ``suggest(proposal)
    -> (kept, reason)`` keeps it for a person (counted in ``suggested``; not kept: an economy
    reject with the reason). ``cancelled()`` is asked before every backend call; once true,
    the answers already received are decided and the pass stops (``summary.cancelled``).

    Name conflicts: a calibrated model name (source ``llm``) at or above the floor is decided at the
    end of its round; until then later waves see it as written. When another function's model
    answer claims the same name in that round, the claims contradict each other (at most one
    is right) and :func:`split_conflict` shares the confidence among them, so two agreed
    answers become suggestions instead of one wrong name and one refused right one.
    """
    out = summary or PassSummary(backend.name)
    out.considered += len(contexts)
    used = set(taken)
    names: dict[int, str] = {}
    current = {int(c["index"]): dict(c) for c in contexts}
    judge = _Judge(out, used, names, current, write, suggest, on_result, floor)
    pending = list(current)
    asked_with: dict[int, tuple] = {}  # the callee names each function was last asked with
    for r in range(max(1, rounds)):
        if not pending:
            break
        if bottom_up and r == 0:
            waves = [
                [pending[k] for k in level]
                for level in bottom_up_levels([current[i] for i in pending])
            ]
        else:
            waves = [pending]
        out.rounds_run = r + 1
        start = getattr(backend, "start_round", None)
        if callable(start):  # progress reporters count per round, not per wave
            start(r + 1, len(pending))
        wrote: dict[int, Proposal] = {}
        # model names at or above the floor wait for the end of the round (later waves see
        # them, as if written): a second function claiming the same name contradicts them
        claims: dict[str, list[Reviewed]] = {}
        for wave in waves:
            if cancelled is not None and cancelled():
                break
            if names:  # callees named in an earlier wave (or round) show their new names
                for i in wave:
                    current[i] = refresh_names(current[i], names)
            batch = [current[i] for i in wave]
            for i in wave:
                asked_with[i] = _callee_names(current[i], names)
            reviewed = run_round(backend, batch, used, concurrency=concurrency, cancelled=cancelled)
            for rv in reviewed:
                out.record_proposal(rv.proposal)
                judge.review(rv, r + 1, claims, wrote)
        judge.settle(claims, r + 1, wrote)
        if cancelled is not None and cancelled():
            out.cancelled = True
            break
        if not wrote:
            break
        for i, p in wrote.items():
            current[i]["existing"] = {"name": p.name, "confidence": p.confidence,
                                      "provenance": "agent"}  # fmt: skip
        for i, ctx in current.items():
            links = (ctx.get("callees") or []) + (ctx.get("callers") or [])
            if any(e.get("index") in wrote for e in links):
                current[i] = refresh_names(ctx, names)
        # revisit callers whose callees got a name after they were asked
        pending = [
            i for i in current
            if i in asked_with and _callee_names(current[i], names) != asked_with[i]
            and float((current[i].get("existing") or {}).get("confidence") or 0)
            < UNCONFIDENT_BELOW
        ]  # fmt: skip
    return out


class _Judge:
    """The decisions of :func:`run_rounds` on reviewed proposals: verifier rejects, the write
    floor (suggestions), the caller's gate, and the name conflicts of a round. ``used``,
    ``names`` and ``current`` are the pass's state, shared with :func:`run_rounds`."""

    def __init__(
        self,
        out: PassSummary,
        used: set[str],
        names: dict[int, str],
        current: dict[int, dict[str, Any]],
        write: Callable[[Proposal], tuple[bool, str]],
        suggest: Callable[[Proposal], tuple[bool, str]] | None,
        on_result: Callable[[int, Reviewed, str, str], None] | None,
        floor: float,
    ) -> None:
        self.out, self.used, self.names, self.current = out, used, names, current
        self.write, self.suggest, self.on_result, self.floor = write, suggest, on_result, floor

    def _own(self, p: Proposal) -> str | None:
        return (self.current[p.index].get("existing") or {}).get("name")

    def _reverify(self, p: Proposal) -> Reviewed:
        own = self._own(p)
        return Reviewed(
            p, verify(p, self.current[p.index], self.used - {own} if own else self.used)
        )

    def _tell(self, round_no: int, rv: Reviewed, outcome: str, reason: str) -> None:
        if self.on_result:
            self.on_result(round_no, rv, outcome, reason)

    def review(
        self,
        rv: Reviewed,
        round_no: int,
        claims: dict[str, list[Reviewed]],
        wrote: dict[int, Proposal],
    ) -> None:
        """One verified proposal: rejected, claimed (a model name, decided at the end of the
        round), or decided now."""
        p = rv.proposal
        if rv.verdict.code == "taken" and p.name in claims and _claims(p, self.floor):
            own = self._own(p)
            again = verify(p, self.current[p.index], self.used - {p.name, own or p.name})
            if again.ok:  # two readings claim one name: decided at the end of the round
                claims[p.name].append(Reviewed(p, again))
                return
        if rv.verdict.code == "taken" and p.name not in self.used:
            # reserved by an earlier proposal of this round that the gate then refused:
            # the name is free, judge the proposal again against the names really written
            rv = self._reverify(p)
        if not rv.verdict.ok:
            self.out.record_verifier_reject(p, rv.verdict)
            self._tell(round_no, rv, "verifier_reject", rv.verdict.reason)
            return
        if _claims(p, self.floor) and p.name and p.name not in claims:
            claims[p.name] = [rv]
            self.used.add(p.name)
            self.names[p.index] = p.name
            return
        self.decide(rv, round_no, wrote)

    def settle(
        self, claims: dict[str, list[Reviewed]], round_no: int, wrote: dict[int, Proposal]
    ) -> None:
        """Decide the round's claimed model names; several claims of one name share its
        confidence (:func:`split_conflict`)."""
        for name, group in claims.items():
            if len(group) > 1:
                split_conflict([g.proposal for g in group])
            holder = group[0].proposal
            if self.names.get(holder.index) == name:  # decide() names it again if written
                prev = self._own(holder)
                if prev:
                    self.names[holder.index] = prev
                else:
                    del self.names[holder.index]
            self.used.discard(name)
            for rv in group:
                if name in self.used:  # an earlier claimant was written (a floor below its share)
                    rv = self._reverify(rv.proposal)
                    if not rv.verdict.ok:
                        self.out.record_verifier_reject(rv.proposal, rv.verdict)
                        self._tell(round_no, rv, "verifier_reject", rv.verdict.reason)
                        continue
                self.decide(rv, round_no, wrote)

    def decide(self, rv: Reviewed, round_no: int, wrote: dict[int, Proposal]) -> None:
        """The write floor (a suggestion below it), else the caller's gate."""
        p = rv.proposal
        if (p.confidence or 0.0) < self.floor:
            kept, reason = self.suggest(p) if self.suggest else (False, "below the write floor")
            if kept:
                self.out.record_suggestion(p, reason)
                self._tell(round_no, rv, "suggest", reason)
            else:
                self.out.record_economy_reject(p, reason)
                self._tell(round_no, rv, "economy_reject", reason)
            return
        ok, reason = self.write(p)
        if not ok:
            self.out.record_economy_reject(p, reason)
            self._tell(round_no, rv, "economy_reject", reason)
            return
        self.out.record_write(p, reason)
        self._tell(round_no, rv, "write", reason)
        old = self._own(p)
        if old and old != p.name:
            self.used.discard(old)
        self.used.add(p.name or "")
        self.names[p.index] = p.name or ""
        wrote[p.index] = p


def _claims(p: Proposal, floor: float) -> bool:
    """A calibrated model name (source ``llm``, confidence from its checks) at or above the
    floor: what the conflict check covers (deep's replayed, uncalibrated names are not)."""
    return (
        p.source == "llm"
        and bool(p.calibration)
        and bool(p.name)
        and (p.confidence or 0.0) >= floor
    )


def split_conflict(group: Sequence[Proposal]) -> None:
    """Model answers that give one name to several functions contradict each other: a
    program's functions have distinct names, so at most one is right. Each keeps its name
    at its confidence divided by the number of claimants (two agreed, evidenced answers:
    0.4, below the 0.5 write floor: suggestions a person decides), rule ``llm_name_conflict``."""
    k = len(group)
    for p in group:
        others = [q.index for q in group if q is not p]
        p.calibration = {
            **p.calibration,
            "name_conflict": others[:8],
            "before_conflict": p.confidence,
        }
        p.confidence = round((p.confidence or 0.0) / k, 3)
        p.rule = "llm_name_conflict"
        p.reasons.append(
            f"the same name was proposed for function(s) "
            f"{', '.join(map(str, others[:8]))}: at most one of them is right"
        )


def _callee_names(ctx: Mapping[str, Any], names: Mapping[int, str]) -> tuple:
    return tuple(names.get(e.get("index"), e.get("name")) for e in ctx.get("callees") or [])
