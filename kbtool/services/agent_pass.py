"""The agent pass (contract ``run_agent_pass``): select candidates from the KB, build contexts
from stored facts, run the pure agent rounds (:mod:`kbtool.agents`) and write accepted names
through the gate as provenance ``agent``.

Candidates are the version's defined functions; with ``only_unconfident`` a locked symbol or
one named at confidence 0.5 or more is skipped before any backend call (``skipped_existing``).

Cost guard: ``max_functions`` caps how many candidates (in index order) one pass sends to the
backend. ``None`` means the default: unbounded for ``offline`` (local, deterministic, about a
millisecond per function) and :data:`DEFAULT_PROVIDER_MAX_FUNCTIONS` for a provider backend
(at most one model call per candidate and round; specialist hits make none); ``0`` lifts the
cap. Before a provider pass the estimate of model calls goes to ``notice`` (and the
``agent-pass-started`` event). Candidates beyond the cap stay for a later pass.

Feed events (``kbtool.kb.store.append_event``): ``agent-pass-started`` and
``agent-pass-done`` (``version_id``; payload: run parameters / the summary without details),
``named`` and ``rejected`` per decision (``stable_id``, ``version_id``; payload: name,
confidence, round, source, rule, backend, model, and for ``rejected`` ``by`` = verifier or
economy, ``code`` and ``reason``; the gate's "no change" on a re-run is not an event).
Write floor: a verified proposal below ``min_confidence`` (default :data:`DEFAULT_MIN_CONFIDENCE`,
0.5) is not written as a name; it is kept as a suggestion (``kbtool.kb.store.save_suggestion``,
table ``suggestions``) that a person lists and accepts or dismisses (``kbtool suggestions``,
the TUI's suggestions screen, MCP ``list_suggestions``), counted in the extra summary field
``suggested`` and announced by a ``suggested`` event. A proposal the gate would refuse anyway
(a human name, the same name stored) is an economy reject as before.

Cancellation: ``cancelled`` (a callable or a ``threading.Event``) is checked before every
backend call; once set, the pass decides the answers already received, stops, records the
run and returns with ``cancelled: true`` (the MCP tool sets it when its client goes away).

A dry run proposes and verifies, decides as the gate would (same table, nothing stored) and
writes nothing at all: no symbol, no event, no run record.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from array import array
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbtool.agents import (
    Backend,
    LLMBackend,
    PassSummary,
    Proposal,
    callers_of,
    context_from_facts,
    resolve_backend,
    run_rounds,
    should_consider,
    string_sharing,
)
from kbtool.agents.backends import (
    CONCURRENCY_ENV,
    DEFAULT_CONCURRENCY,
    int_setting,
)
from kbtool.agents.prompts import DEFAULT_PROMPT_TOKENS
from kbtool.kb import queries, store
from kbtool.services.agent_estimate import estimate_round, estimate_text
from kbtool.services.agent_suggestions import (  # the suggestions' API, importable here too
    NoSuggestion,
    accept_suggestion,
    accept_suggestions_above,
    dismiss_suggestion,
)
from kbtool.services.agent_writes import PROVENANCE, Decisions, Feed, KBAnswers, would_write
from kbtool.wasm.opcodes import MNEMONICS

log = logging.getLogger("kbtool.agent_pass")

DEFAULT_MIN_CONFIDENCE = 0.5  # the write floor: below it a proposal becomes a suggestion
DEFAULT_PROVIDER_MAX_FUNCTIONS = 500
PROVIDER_CONCURRENCY = DEFAULT_CONCURRENCY
#: progress(stage, done, total): stage ``round N``; total is None once later rounds start
#: (their size is decided by the rounds themselves)
Progress = Callable[[str, int, "int | None"], None]


@dataclass(slots=True)
class StoredFacts:
    """A function's stored facts with the attributes :func:`context_from_facts` reads
    (the subset of ``kbtool.wasm.FuncFacts`` an agent context needs)."""

    index: int
    imported: bool
    import_module: str | None
    import_field: str | None
    type_sig: str
    export_names: list[str]
    instr_count: int
    ops: bytes
    calls: list[int]
    call_indirect: int
    consts: list[int]
    strings: list[str]
    globals_used: list[int]
    mem_ops: list[tuple[int, int, int]]
    loops: int
    stable_id: str = ""
    symbol: dict[str, Any] | None = field(default=None)

    @property
    def import_name(self) -> str | None:
        return f"{self.import_module}.{self.import_field}" if self.imported else None

    def mnemonics(self) -> list[str]:
        a = array("H")
        a.frombytes(self.ops)
        return [MNEMONICS[i] for i in a]

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> StoredFacts:
        return cls(
            index=r["index"],
            imported=r["imported"],
            import_module=r["import_module"],
            import_field=r["import_field"],
            type_sig=r["type_sig"],
            export_names=r["export_names"],
            instr_count=r["instr_count"],
            ops=bytes(r["ops"]),
            calls=r["calls"],
            call_indirect=r["call_indirect"],
            consts=r["consts"],
            strings=r["strings"],
            globals_used=r["globals_used"],
            mem_ops=r["mem_ops"],
            loops=r["loops"],
            stable_id=r["stable_id"],
            symbol=r["symbol"],
        )


@dataclass(slots=True)
class PassPlan:
    """What a pass will do before it calls the backend."""

    backend: Backend
    facts: list[StoredFacts]
    names: dict[int, str]
    candidates: list[StoredFacts]
    skipped_existing: int
    limit: int | None
    left_for_later: int
    replayed: bool = False  # answers already bought (``kbtool deep``): no model call at all
    concurrency: int = PROVIDER_CONCURRENCY

    @property
    def estimated_calls(self) -> int:
        """Upper bound of model calls for round 1 (0 offline or replayed); each later round
        re-asks at most the functions whose neighbours got names."""
        if self.replayed or self.backend.name == "offline":
            return 0
        return len(self.candidates) * int(getattr(self.backend, "opinions", 1) or 1)


def default_limit(backend_name: str, max_functions: int | None) -> int | None:
    """The cost guard: ``max_functions`` if given (0 = no cap), else the backend's default."""
    if max_functions is not None:
        if max_functions < 0:
            raise ValueError(f"max_functions must be 0 (no cap) or more, not {max_functions}")
        return max_functions or None
    return None if backend_name == "offline" else DEFAULT_PROVIDER_MAX_FUNCTIONS


def plan_agent_pass(
    conn: sqlite3.Connection,
    version_id: int,
    backend: str = "auto",
    only_unconfident: bool = True,
    max_functions: int | None = None,
    *,
    env: Mapping[str, str] | None = None,
    functions: Collection[int] | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    concurrency: int | None = None,
    opinions: int | None = None,
    price: tuple[float, float] | None = None,
    budget: int = DEFAULT_PROMPT_TOKENS,
) -> PassPlan:
    """Resolve the backend and select the candidates (no backend call, no write).

    ``retries`` (None: ``KBTOOL_AGENT_RETRIES`` or 3), ``concurrency`` (calls in flight; None:
    ``KBTOOL_AGENT_CONCURRENCY`` or 4), ``opinions`` (2: a second prompt checks agreement; None:
    ``KBTOOL_AGENT_OPINIONS`` or 2), ``price`` (US$ per million tokens in, out; None: the
    price table) and ``budget`` (prompt tokens) configure a provider backend.

    ``timeout`` is the total deadline of one provider call (None: ``KBTOOL_AGENT_TIMEOUT``
    or 120 s). Raises ``UnknownVersionError``, ``ValueError`` (unknown selector, bad
    ``max_functions`` or timeout) or ``kbtool.agents.BackendUnavailable`` naming the missing
    package or variable.
    """
    queries.get_version(conn, version_id)
    if timeout is not None and not timeout > 0:
        raise ValueError(
            f"the provider timeout must be a positive number of seconds, not {timeout:g}"
        )
    if retries is not None and retries < 0:
        raise ValueError(f"retries must be 0 or more, not {retries}")
    if concurrency is None:
        concurrency = int_setting(
            env if env is not None else _environ(), CONCURRENCY_ENV, DEFAULT_CONCURRENCY, 1, 64
        )
    if not 1 <= concurrency <= 64:
        raise ValueError(f"concurrency must be from 1 to 64, not {concurrency}")
    if budget < 200:
        raise ValueError(f"the prompt budget must be 200 tokens or more, not {budget}")
    chosen = resolve_backend(
        backend,
        env,
        timeout=timeout,
        max_retries=retries,
        opinions=opinions,
        price=price,
        budget=budget,
    )
    limit = default_limit(chosen.name, max_functions)
    facts = [StoredFacts.from_row(r) for r in queries.agent_rows(conn, version_id)]
    if any(f.index != i for i, f in enumerate(facts)):
        raise ValueError(f"version {version_id}: stored function indices are not contiguous")
    names: dict[int, str] = {}
    for f in facts:
        if f.symbol and f.symbol["name"]:
            names[f.index] = f.symbol["name"]
        elif f.imported and f.import_field:
            names[f.index] = f.import_field
    candidates, skipped = [], 0
    only = set(functions) if functions is not None else None
    for f in facts:
        if f.imported or (only is not None and f.index not in only):
            continue
        if should_consider(f.symbol, only_unconfident):
            candidates.append(f)
        else:
            skipped += 1
    later = 0
    if limit is not None and len(candidates) > limit:
        later = len(candidates) - limit
        candidates = candidates[:limit]
    return PassPlan(
        chosen, facts, names, candidates, skipped, limit, later, concurrency=concurrency
    )


def _environ() -> Mapping[str, str]:
    import os

    return os.environ


def run_agent_pass(
    conn: sqlite3.Connection,
    version_id: int,
    backend: str = "auto",
    only_unconfident: bool = True,
    rounds: int = 1,
    max_functions: int | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    *,
    env: Mapping[str, str] | None = None,
    notice: Callable[[str], None] | None = None,
    plan: PassPlan | None = None,
    functions: Collection[int] | None = None,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    cancelled: Callable[[], bool] | threading.Event | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    concurrency: int | None = None,
    opinions: int | None = None,
    price: tuple[float, float] | None = None,
    knowledge: bool = True,
    reuse_answers: bool = True,
) -> dict[str, Any]:
    """Name the version's functions with an agent backend; return the contract's summary.

    A provider pass proposes callees first (bottom-up), keeps every answer in the KB as it
    arrives (a re-run sends only prompts without a stored answer), stops calling after
    repeated failures (``circuit_open`` in the summary) and reports what it spent (``calls``,
    ``cached_answers``, ``tokens_in``, ``tokens_out``, ``estimated_cost_usd``; ``progress``
    can read ``plan.backend.meter`` as it goes). With ``knowledge`` a written name also
    writes the answer's summary as the function comment, its local names and its prototype
    (each through the gate, provenance agent). ``retries``, ``concurrency`` and ``opinions``:
    see :func:`plan_agent_pass`. ``reuse_answers`` (default) lets round 1 reuse a stored
    answer to the same question asked when the function's callees/callers had other names
    (:func:`kbtool.agents.prompts.base_key`: a resumed pass sends exactly the prompts the
    interrupted one left unanswered); False asks again wherever the prompt text changed.

    ``rounds`` > 1 re-enriches contexts with the names written so far and stops early at a
    fixpoint. ``env`` replaces ``os.environ`` for backend selection (keys, base URLs).
    ``notice`` receives one-line messages for a person (the call estimate, the cap).
    ``plan`` reuses a :func:`plan_agent_pass` result (the CLI shows it first).
    ``functions`` limits the candidates to these indices (``kbtool deep`` names what it read).
    ``min_confidence`` is the write floor (lower proposals become suggestions); ``cancelled``
    (callable or ``threading.Event``) is checked before every backend call; ``timeout`` is
    the total deadline of one provider call (see :func:`plan_agent_pass`).
    """
    _check_pass_args(rounds, min_confidence)
    is_cancelled = _cancel_check(cancelled)
    if plan is None:
        plan = plan_agent_pass(
            conn,
            version_id,
            backend,
            only_unconfident,
            max_functions,
            env=env,
            functions=functions,
            timeout=timeout,
            retries=retries,
            concurrency=concurrency,
            opinions=opinions,
            price=price,
        )
    chosen = plan.backend
    say = notice or (lambda _msg: None)
    _announce(plan, version_id, say)
    contexts = pass_contexts(plan)
    estimate = _prepare_provider(conn, version_id, plan, contexts, rounds, reuse_answers, say)
    run = {
        "selector": backend,
        **_run_record(plan, only_unconfident, rounds, estimate),
        "dry_run": dry_run,
        "min_confidence": min_confidence,
    }
    emit = Feed(conn, version_id, enabled=not dry_run)
    emit("agent-pass-started", payload=run)
    decide = Decisions(
        conn,
        version_id,
        plan.candidates,
        contexts,
        emit,
        actor=f"agent:{chosen.name}",
        backend=chosen.backend,
        dry_run=dry_run,
        knowledge=knowledge,
        min_confidence=min_confidence,
    )
    summary = _rounds(plan, contexts, decide, rounds, min_confidence, progress, is_cancelled)
    if is_cancelled():
        summary.cancelled = True
        log.info("agent pass on version %s cancelled by its caller", version_id)
    llm = chosen if isinstance(chosen, LLMBackend) else None
    out = _summary_out(summary, llm, estimate, say)
    if not dry_run:
        _record_run(conn, version_id, emit, out, run)
    return out


def _check_pass_args(rounds: int, min_confidence: float) -> None:
    """ValueError in one line for a round count or a write floor out of range."""
    if rounds < 1:
        raise ValueError(f"rounds must be 1 or more, not {rounds}")
    if not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"min_confidence must be between 0 and 1, not {min_confidence:g}")


def _run_record(
    plan: PassPlan, only_unconfident: bool, rounds: int, estimate: dict[str, Any]
) -> dict[str, Any]:
    """What the pass is about to do (the ``agent-pass-started`` event and the run record):
    backend, model, caps, candidates, estimated calls and the cost estimate."""
    return {
        "backend": plan.backend.name,
        "model": plan.backend.model,
        "only_unconfident": only_unconfident,
        "rounds": rounds,
        "max_functions": plan.limit,
        "candidates": len(plan.candidates),
        "left_for_later": plan.left_for_later,
        "estimated_calls": plan.estimated_calls,
        "estimate": estimate,
        "concurrency": plan.concurrency,
    }


def _record_run(
    conn: sqlite3.Connection,
    version_id: int,
    emit: Feed,
    out: dict[str, Any],
    run: dict[str, Any],
) -> None:
    """Keep the pass's summary as an analysis run and tell the feed it is done."""
    run_id = store.record_run(conn, version_id, "agent", {**out, "run": run})
    brief = {k: v for k, v in out.items() if k != "details"}
    emit("agent-pass-done", payload={**brief, "run_id": run_id})


def _announce(plan: PassPlan, version_id: int, say: Callable[[str], None]) -> None:
    """Tell a person what the cost guard left for later; log the pass's size."""
    if plan.left_for_later:
        say(
            f"cost guard: {plan.left_for_later} more candidates left for a later pass "
            f"(--max-functions {plan.limit}; 0 lifts the cap)"
        )
    log.info(
        "agent pass on version %s: backend %s, %d candidates, %d skipped",
        version_id,
        plan.backend.name,
        len(plan.candidates),
        plan.skipped_existing,
    )


def _prepare_provider(
    conn: sqlite3.Connection,
    version_id: int,
    plan: PassPlan,
    contexts: list[dict[str, Any]],
    rounds: int,
    reuse_answers: bool,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """For a provider backend (not replayed): enrich ``contexts`` from the KB, attach the
    stored answers, estimate round 1 and tell a person; the estimate ({} offline)."""
    llm = plan.backend
    if not isinstance(llm, LLMBackend) or plan.replayed:
        return {}
    from kbtool.services.agent_prompts import enrich_contexts

    enrich_contexts(conn, version_id, contexts)
    llm.store = KBAnswers(conn, version_id, llm)
    llm.reuse, llm.round = reuse_answers, 1
    estimate = estimate_round(conn, llm, contexts)
    if contexts:
        say(estimate_text(plan, rounds, estimate))
    return estimate


def _rounds(
    plan: PassPlan,
    contexts: list[dict[str, Any]],
    decide: Decisions,
    rounds: int,
    min_confidence: float,
    progress: Progress | None,
    is_cancelled: Callable[[], bool],
) -> PassSummary:
    """Run the pure agent rounds over ``contexts``, deciding each answer through ``decide``;
    stop early when cancelled or when the provider's circuit breaker opens."""
    chosen = plan.backend
    llm = chosen if isinstance(chosen, LLMBackend) else None
    summary = PassSummary(chosen.name)
    summary.skipped_existing = plan.skipped_existing
    counted = _Counting(chosen, len(contexts), progress)
    workers = 1 if chosen.name == "offline" else plan.concurrency

    def stop() -> bool:
        return is_cancelled() or bool(llm is not None and llm.circuit_open)

    run_rounds(
        counted,
        contexts,
        set(plan.names.values()),
        decide.write,
        rounds=rounds,
        concurrency=workers,
        summary=summary,
        on_result=decide.on_result,
        floor=min_confidence,
        suggest=decide.suggest,
        cancelled=stop,
    )
    return summary


def _summary_out(
    summary: PassSummary,
    llm: LLMBackend | None,
    estimate: dict[str, Any],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The contract's summary, with a provider's spending and circuit breaker state."""
    out = summary.to_dict()
    if llm is not None:
        out.update(llm.meter.to_dict())
        out["estimate"] = estimate
        out["circuit_open"] = llm.circuit_open
        if llm.circuit_open:
            out["cancelled"] = False
            say(
                f"circuit breaker: {llm.breaker} provider calls in a row failed; the pass "
                "stopped calling (answers so far are kept; re-run to resume)"
            )
    return out


def pass_contexts(plan: PassPlan) -> list[dict[str, Any]]:
    """The agent context of every candidate of ``plan``, from its stored facts."""
    callers = callers_of(plan.facts)
    sharing = string_sharing(plan.facts)
    return [
        context_from_facts(
            plan.facts,
            f.index,
            plan.names,
            callers,
            stable_id=f.stable_id,
            existing=_existing(f.symbol),
            sharing=sharing,
        )
        for f in plan.candidates
    ]


def _cancel_check(cancelled: Callable[[], bool] | threading.Event | None) -> Callable[[], bool]:
    if cancelled is None:
        return lambda: False
    if isinstance(cancelled, threading.Event):
        return cancelled.is_set
    return cancelled


def _existing(symbol: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not symbol or symbol.get("name") is None:
        return None
    return {k: symbol[k] for k in ("name", "confidence", "provenance")}


class _Counting:
    """The backend, reporting each proposal to ``progress`` (thread-safe)."""

    def __init__(self, inner: Backend, first_round: int, progress: Progress | None) -> None:
        self.inner, self.progress = inner, progress
        self.name, self.backend, self.model = inner.name, inner.backend, inner.model
        self._lock = threading.Lock()
        self._round, self._done, self._first = 0, 0, first_round

    def start_round(self, round_no: int, size: int) -> None:
        with self._lock:
            self._round, self._done = round_no, 0
        start = getattr(self.inner, "start_round", None)
        if callable(start):
            start(round_no, size)

    def propose(self, ctx: Mapping[str, Any], taken: frozenset[str] | set[str]) -> Proposal | None:
        try:
            return self.inner.propose(ctx, taken)
        finally:
            if self.progress is not None:
                with self._lock:
                    self._done += 1
                    total = self._first if self._round <= 1 else None
                    self.progress(f"round {max(1, self._round)}", self._done, total)


__all__ = [
    "DEFAULT_MIN_CONFIDENCE",
    "DEFAULT_PROVIDER_MAX_FUNCTIONS",
    "PROVENANCE",
    "PROVIDER_CONCURRENCY",
    "NoSuggestion",
    "PassPlan",
    "Progress",
    "StoredFacts",
    "accept_suggestion",
    "accept_suggestions_above",
    "default_limit",
    "dismiss_suggestion",
    "plan_agent_pass",
    "run_agent_pass",
    "would_write",
]
