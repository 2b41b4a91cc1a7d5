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
import re
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
    Reviewed,
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
from kbtool.agents.costs import EXPECTED_OUTPUT_TOKENS, cost, estimate_tokens
from kbtool.agents.prompts import DEFAULT_PROMPT_TOKENS, SYSTEM_PROMPT, cleaned_c
from kbtool.kb import queries, store
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbol, validate_name
from kbtool.kb.provenance import AUTHORITY
from kbtool.wasm.opcodes import MNEMONICS

log = logging.getLogger("kbtool.agent_pass")

PROVENANCE = "agent"
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
        raise ValueError(f"the provider timeout must be a positive number of seconds, not {timeout:g}")
    if retries is not None and retries < 0:
        raise ValueError(f"retries must be 0 or more, not {retries}")
    if concurrency is None:
        concurrency = int_setting(env if env is not None else _environ(), CONCURRENCY_ENV,
                                  DEFAULT_CONCURRENCY, 1, 64)
    if not 1 <= concurrency <= 64:
        raise ValueError(f"concurrency must be from 1 to 64, not {concurrency}")
    if budget < 200:
        raise ValueError(f"the prompt budget must be 200 tokens or more, not {budget}")
    chosen = resolve_backend(backend, env, timeout=timeout, max_retries=retries,
                             opinions=opinions, price=price, budget=budget)
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
    return PassPlan(chosen, facts, names, candidates, skipped, limit, later,
                    concurrency=concurrency)


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
    if rounds < 1:
        raise ValueError(f"rounds must be 1 or more, not {rounds}")
    if not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"min_confidence must be between 0 and 1, not {min_confidence:g}")
    is_cancelled = _cancel_check(cancelled)
    if plan is None:
        plan = plan_agent_pass(conn, version_id, backend, only_unconfident, max_functions, env=env,
                               functions=functions, timeout=timeout, retries=retries,
                               concurrency=concurrency, opinions=opinions, price=price)
    chosen = plan.backend
    say = notice or (lambda _msg: None)
    if plan.left_for_later:
        say(
            f"cost guard: {plan.left_for_later} more candidates left for a later pass "
            f"(--max-functions {plan.limit}; 0 lifts the cap)"
        )
    log.info(
        "agent pass on version %s: backend %s, %d candidates, %d skipped",
        version_id,
        chosen.name,
        len(plan.candidates),
        plan.skipped_existing,
    )

    summary = PassSummary(chosen.name)
    summary.skipped_existing = plan.skipped_existing
    callers = callers_of(plan.facts)
    sharing = string_sharing(plan.facts)
    contexts = [
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
    llm = chosen if isinstance(chosen, LLMBackend) else None
    estimate: dict[str, Any] = {}
    if llm is not None and not plan.replayed:
        from kbtool.services.agent_prompts import enrich_contexts

        enrich_contexts(conn, version_id, contexts)
        llm.store = _KBAnswers(conn, version_id, llm)
        llm.reuse, llm.round = reuse_answers, 1
        estimate = _estimate(conn, llm, contexts)
        if contexts:
            say(_estimate_text(plan, rounds, estimate))
    taken = set(plan.names.values())
    run = dict(
        selector=backend,
        backend=chosen.name,
        model=chosen.model,
        only_unconfident=only_unconfident,
        rounds=rounds,
        max_functions=plan.limit,
        candidates=len(plan.candidates),
        left_for_later=plan.left_for_later,
        estimated_calls=plan.estimated_calls,
        estimate=estimate,
        concurrency=plan.concurrency,
        dry_run=dry_run,
        min_confidence=min_confidence,
    )
    emit = _Feed(conn, version_id, enabled=not dry_run)
    emit("agent-pass-started", payload=run)

    symbols = {f.index: f.symbol for f in plan.candidates}
    contexts_by_index = {int(c["index"]): c for c in contexts}
    by_index = {f.index: f for f in plan.candidates}
    actor = f"agent:{chosen.name}"

    def write(p: Proposal) -> tuple[bool, str]:
        if dry_run:
            ok, reason = would_write(symbols.get(p.index), p.name or "", p.confidence)
            if ok:
                symbols[p.index] = {
                    "name": p.name,
                    "provenance": PROVENANCE,
                    "confidence": p.confidence,
                    "locked": False,
                }
            return ok, reason
        sid = p.stable_id or by_index[p.index].stable_id
        d = upsert_symbol(
            conn,
            sid,
            p.name or "",
            provenance=PROVENANCE,
            confidence=p.confidence,
            actor=actor,
            summary=p.summary or None,
            evidence=p.evidence(),
            version_id=version_id,
        )
        if d["written"] and knowledge and p.source == "llm":
            _write_knowledge(conn, sid, version_id, p, contexts_by_index.get(p.index), actor)
        return d["written"], d["reason"]

    def suggest(p: Proposal) -> tuple[bool, str]:
        ok, reason = would_write(symbols.get(p.index), p.name or "", p.confidence)
        if not ok:
            return False, reason
        why = f"confidence {p.confidence:g} below the write floor {min_confidence:g}"
        if dry_run:
            return True, why
        f = by_index[p.index]
        store.save_suggestion(conn, {
            "version_id": version_id, "stable_id": p.stable_id or f.stable_id,
            "func_index": p.index, "name": p.name, "confidence": p.confidence,
            "backend": p.backend or chosen.backend, "model": p.model, "rule": p.rule,
            "source": p.source,
            "evidence": {**p.evidence(), "actor": actor, "summary": p.summary or None},
        })
        return True, why

    def on_result(round_no: int, rv: Reviewed, outcome: str, reason: str) -> None:
        p = rv.proposal
        payload = {
            "name": p.name,
            "confidence": p.confidence,
            "round": round_no,
            "source": p.source,
            "rule": p.rule,
            "backend": p.backend,
            "model": p.model,
            "reason": reason,
        }
        if outcome == "write":
            emit("named", stable_id=p.stable_id, payload=payload)
        elif outcome == "suggest":
            emit("suggested", stable_id=p.stable_id, payload=payload)
        elif reason != "no change":  # a re-run re-proposing what is stored is no news
            by = "verifier" if outcome == "verifier_reject" else "economy"
            code = rv.verdict.code if by == "verifier" else "gate"
            emit("rejected", stable_id=p.stable_id, payload={**payload, "by": by, "code": code})

    counted = _Counting(chosen, len(contexts), progress)
    workers = 1 if chosen.name == "offline" else plan.concurrency

    def stop() -> bool:
        return is_cancelled() or bool(llm is not None and llm.circuit_open)

    run_rounds(
        counted,
        contexts,
        taken,
        write,
        rounds=rounds,
        concurrency=workers,
        summary=summary,
        on_result=on_result,
        floor=min_confidence,
        suggest=suggest,
        cancelled=stop,
    )
    if is_cancelled():
        summary.cancelled = True
        log.info("agent pass on version %s cancelled by its caller", version_id)
    out = summary.to_dict()
    if llm is not None:
        out.update(llm.meter.to_dict())
        out["estimate"] = estimate
        out["circuit_open"] = llm.circuit_open
        if llm.circuit_open:
            out["cancelled"] = False
            say(f"circuit breaker: {llm.breaker} provider calls in a row failed; the pass "
                "stopped calling (answers so far are kept; re-run to resume)")
    brief = {k: v for k, v in out.items() if k != "details"}
    if not dry_run:
        run_id = store.record_run(conn, version_id, "agent", {**out, "run": run})
        emit("agent-pass-done", payload={**brief, "run_id": run_id})
    return out


def would_write(symbol: Mapping[str, Any] | None, name: str, confidence: float) -> tuple[bool, str]:
    """The gate's decision for an agent write onto ``symbol``, without writing (dry runs).

    Mirrors :func:`kbtool.kb.gate.upsert_symbol` for provenance ``agent`` (contract Part 3);
    tests check a dry run decides exactly as a real pass does.
    """
    problem = validate_name(name, PROVENANCE)
    if problem is not None:
        return False, problem
    if not symbol or symbol.get("name") is None:
        return True, "unnamed"
    prov, e = symbol["provenance"], float(symbol["confidence"])
    if symbol["name"] == name and prov == PROVENANCE and confidence <= e:
        return False, "no change"
    if symbol.get("locked"):
        return False, "locked"
    if prov == "human":
        return False, "human name outranks agent"
    if AUTHORITY[PROVENANCE] > AUTHORITY[prov]:
        return True, f"agent outranks {prov}"
    if confidence > e:
        return True, f"confidence {confidence:g} > {e:g}"
    return False, f"confidence {confidence:g} not above {prov} {e:g}"


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


#: prompts the provider's own counter reads before a pass (spread over the sizes)
COUNT_SAMPLE = 8
#: billed answers of the same prompts that replace the counter / the estimator's ratio
HISTORY_MIN = 8


def _estimate(conn: sqlite3.Connection, llm: LLMBackend,
              contexts: list[dict[str, Any]]) -> dict[str, Any]:
    """Prompts, stored answers, tokens and cost of round 1 before any call.

    Input tokens start from :func:`~kbtool.agents.costs.estimate_tokens` and are scaled by
    the provider's own count, best first: the tokens the provider billed for the prompts of
    this pass that already have an answer (a resumed pass: ``HISTORY_MIN`` or more), else the
    provider's token counter on ``COUNT_SAMPLE`` unanswered prompts (Anthropic's
    ``messages.count_tokens``; ``tiktoken`` for OpenAI's own endpoint when installed), else
    the estimator alone. ``basis`` says which; output tokens per answer are the billed mean
    with a history, else :data:`~kbtool.agents.costs.EXPECTED_OUTPUT_TOKENS`."""
    prompts = answered = 0
    sizes: list[int] = []
    todo: list[Any] = []
    billed_in = billed_est = billed_out = billed_n = 0
    from kbtool.agents.backends import specialist_proposal

    for ctx in contexts:
        if specialist_proposal(ctx, frozenset(), llm.backend) is not None:
            continue  # the specialist names it without a call
        for pr in llm.prompts(ctx):
            prompts += 1
            sizes.append(pr.tokens)
            hit = llm.stored(pr)
            if hit is None:
                todo.append(pr)
                continue
            answered += 1
            if hit.get("tokens_in") and hit.get("tokens_out") is not None:
                billed_n += 1
                billed_in += int(hit["tokens_in"])
                billed_out += int(hit["tokens_out"])
                billed_est += pr.tokens + _system_tokens(pr.system)
    raw = sum(pr.tokens + _system_tokens(pr.system) for pr in todo)
    ratio, basis, per_answer = 1.0, "kbtool's estimate (no token counter for this provider)", \
        EXPECTED_OUTPUT_TOKENS
    if billed_n >= HISTORY_MIN and billed_est:
        ratio = billed_in / billed_est
        per_answer = round(billed_out / billed_n)
        basis = f"calibrated on {billed_n} answers the provider billed"
    elif todo and llm.count is not None:
        sample = _count_sample(llm, todo)
        if sample is not None:
            ratio = sample[0]
            basis = f"the provider's token counter on {sample[1]} prompts"
    calls = prompts - answered
    tokens = round(raw * ratio)
    usd = cost(tokens, calls * per_answer, llm.meter.price)
    sizes.sort()
    return {
        "prompts": prompts,
        "answered": answered,
        "calls": calls,
        "tokens_in": tokens,
        "tokens_out": calls * per_answer,
        "cost_usd": round(usd, 4) if usd is not None else None,
        "prompt_tokens_median": sizes[len(sizes) // 2] if sizes else 0,
        "prompt_tokens_max": sizes[-1] if sizes else 0,
        "basis": basis,
        "token_ratio": round(ratio, 4),
    }


def _count_sample(llm: LLMBackend, todo: list[Any]) -> tuple[float, int] | None:
    """(provider tokens / estimated tokens, prompts counted) over up to ``COUNT_SAMPLE``
    prompts spread over the sizes; None when the counter is missing or fails."""
    by_size = sorted(todo, key=lambda p: p.tokens)
    n = min(COUNT_SAMPLE, len(by_size))
    picks = [by_size[(2 * k + 1) * len(by_size) // (2 * n)] for k in range(n)]
    got = est = 0
    for pr in picks:
        try:
            c = llm.count(pr.system, pr.text) if llm.count is not None else None
        except Exception as exc:  # the counter is a nicety: the estimate stands without it
            log.info("token counter failed: %s", exc)
            return None
        if c is None:
            return None
        got += c
        est += pr.tokens + _system_tokens(pr.system)
    return (got / est, n) if est else None


def _system_tokens(system: str) -> int:
    return _SYSTEM_TOKENS if system == SYSTEM_PROMPT else estimate_tokens(system)


def _estimate_text(plan: PassPlan, rounds: int, est: Mapping[str, Any]) -> str:
    more = " in round 1 (later rounds re-ask only callers whose callees changed)" if rounds > 1 else ""
    model = f" ({plan.backend.model})" if plan.backend.model else ""
    usd = (f"about ${est['cost_usd']:.4f}" if est.get("cost_usd") is not None
           else "cost unknown (no price for this model: --price IN,OUT)")
    stored = f", {est['answered']} already answered (kept in the KB)" if est.get("answered") else ""
    basis = f" (tokens: {est['basis']})" if est.get("basis") else ""
    return (
        f"estimate: up to {est['calls']} model calls to {plan.backend.name}{model}{more}"
        f"{stored}; about {est['tokens_in']} tokens in, {est['tokens_out']} out, {usd}{basis}; "
        "specialist hits make none"
    )


def _write_knowledge(conn: sqlite3.Connection, stable_id: str, version_id: int, p: Proposal,
                     ctx: Mapping[str, Any] | None, actor: str) -> None:
    """A written provider name brings its knowledge: the summary as the function comment,
    the local names and the prototype, each through the gate at the name's confidence (a
    refusal, e.g. a human comment or a prototype that does not fit the signature, only
    drops that piece)."""
    from kbtool.services import knowledge as kn

    common = {"version_id": version_id, "provenance": PROVENANCE, "confidence": p.confidence,
              "actor": actor, "evidence": {"backend": p.backend, "model": p.model,
                                           "source": "llm", "name": p.name}}
    try:
        if p.summary:
            kn.set_comment(conn, stable_id, p.summary, **common)
        if p.prototype:
            kn.set_prototype(conn, stable_id, p.prototype, **common)
        if p.locals and ctx is not None:
            res = cleaned_c(ctx)
            back = {new: old for old, new in (res.rename_map if res is not None else {}).items()}
            for shown, name in list(p.locals.items())[:32]:
                wasm = back.get(shown, shown)
                if not re.fullmatch(r"[pl]\d+", wasm):
                    continue
                try:
                    kn.rename_local(conn, stable_id, wasm, name, **common)
                except KBError as exc:
                    log.info("local %s of %s not named: %s", wasm, stable_id, exc)
    except KBError as exc:
        log.info("knowledge of %s not written: %s", stable_id, exc)


_SYSTEM_TOKENS = estimate_tokens(SYSTEM_PROMPT)


class _KBAnswers:
    """The pass's answer store: the KB's ``agent_answers`` (thread-safe; one short
    transaction per answer, so an interrupted pass keeps what it paid for)."""

    def __init__(self, conn: sqlite3.Connection, version_id: int, llm: LLMBackend) -> None:
        self.conn, self.version_id, self.llm = conn, version_id, llm
        self.lock = threading.Lock()

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self.lock:
            return queries.agent_answer(self.conn, self.llm.backend, self.llm.model, key)

    def put(self, key: str, answer: Mapping[str, Any]) -> None:
        with self.lock:
            store.save_agent_answer(self.conn, {
                "backend": self.llm.backend, "model": self.llm.model, "prompt_hash": key,
                "version_id": self.version_id, "func_index": answer.get("index"),
                "variant": answer.get("variant"), "answer": answer["text"],
                "tokens_in": answer.get("tokens_in"), "tokens_out": answer.get("tokens_out"),
                "prompt_tokens": answer.get("prompt_tokens"),
            })
            if answer.get("base"):  # the same question without neighbour names: no version,
                # so the version's answer counts and token sums see each answer once
                store.save_agent_answer(self.conn, {
                    "backend": self.llm.backend, "model": self.llm.model,
                    "prompt_hash": answer["base"], "version_id": None, "func_index": None,
                    "variant": answer.get("variant"), "answer": answer["text"],
                    "tokens_in": None, "tokens_out": None, "prompt_tokens": None,
                })


class _Feed:
    """Appends feed events unless disabled (dry runs); an event is never worth failing a pass."""

    def __init__(self, conn: sqlite3.Connection, version_id: int, *, enabled: bool) -> None:
        self.conn, self.version_id, self.enabled = conn, version_id, enabled

    def __call__(
        self, kind: str, *, stable_id: str | None = None, payload: dict[str, Any] | None = None
    ) -> None:
        if self.enabled:
            store.append_event(
                self.conn, kind, stable_id=stable_id, version_id=self.version_id, payload=payload
            )


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


# --------------------------------------------------------------------------- suggestions
# Agent names below the write floor wait for a person. Accepting one name is a person's
# decision: a human name, locked (as `kbtool set-name`). Accepting everything above a
# threshold vouches for the threshold, not for each name: the names keep provenance agent and
# their calibrated confidence, so oracle matches and better agent names may still replace them.


class NoSuggestion(LookupError):
    """No open suggestion for that function (never made, or already accepted/dismissed)."""


def _open(conn: sqlite3.Connection, stable_id: str, version_id: int | None) -> dict[str, Any]:
    s = queries.open_suggestion(conn, stable_id, version_id)
    if s is None:
        where = f" in version {version_id}" if version_id is not None else ""
        raise NoSuggestion(
            f"no open suggestion for {stable_id!r}{where} (list them with `kbtool suggestions VERSION`)"
        )
    return s


def accept_suggestion(
    conn: sqlite3.Connection,
    stable_id: str,
    version_id: int | None = None,
    *,
    as_human: bool = True,
    actor: str = "human:cli",
) -> dict[str, Any]:
    """Write the open suggestion of ``stable_id`` through the gate and mark it accepted.

    ``as_human`` (default): provenance human, locked, confidence 1.0 (a person chose the name);
    else provenance agent at the suggestion's calibrated confidence. Returns the gate's
    decision plus ``name``, ``stable_id`` and ``version_id``; a refused write leaves the
    suggestion open. Raises :class:`NoSuggestion`.
    """
    s = _open(conn, stable_id, version_id)
    evidence = {
        "accepted_suggestion": {
            k: s[k] for k in ("backend", "model", "rule", "source", "confidence", "created_at")
        },
        "reasons": list(s["evidence"].get("reasons") or [])[:8],
    }
    summary = s["evidence"].get("summary") or None
    if as_human:
        d = upsert_symbol(conn, s["stable_id"], s["name"], provenance="human", confidence=1.0,
                          actor=actor, summary=summary, evidence=evidence, lock=True,
                          version_id=s["version_id"])
    else:
        d = upsert_symbol(conn, s["stable_id"], s["name"], provenance=PROVENANCE,
                          confidence=float(s["confidence"]), actor=actor, summary=summary,
                          evidence={**s["evidence"], **evidence}, version_id=s["version_id"])
    if d["written"]:
        store.decide_suggestion(conn, s["version_id"], s["stable_id"], "accepted")
        store.append_event(conn, "suggestion-accepted", stable_id=s["stable_id"],
                           version_id=s["version_id"],
                           payload={"name": s["name"], "as_human": as_human, "actor": actor})
    return {**d, "name": s["name"], "stable_id": s["stable_id"], "version_id": s["version_id"]}


def accept_suggestions_above(
    conn: sqlite3.Connection,
    version_id: int,
    threshold: float,
    *,
    as_human: bool = False,
    actor: str = "human:cli",
) -> list[dict[str, Any]]:
    """Accept every open suggestion of ``version_id`` at confidence ``threshold`` or more
    (provenance agent unless ``as_human``); one decision per suggestion, highest first."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the threshold must be between 0 and 1, not {threshold:g}")
    out = []
    while True:
        page = queries.suggestions(conn, version_id, min_confidence=threshold, limit=200)
        todo = [s for s in page["items"] if s["stable_id"] not in {d["stable_id"] for d in out}]
        if not todo:
            return out
        for s in todo:
            out.append(accept_suggestion(conn, s["stable_id"], version_id, as_human=as_human,
                                         actor=actor))


def dismiss_suggestion(
    conn: sqlite3.Connection, stable_id: str, version_id: int | None = None,
    *, actor: str = "human:cli",
) -> dict[str, Any]:
    """Mark the open suggestion of ``stable_id`` dismissed (a re-run does not bring the same
    name back). Raises :class:`NoSuggestion`."""
    s = _open(conn, stable_id, version_id)
    store.decide_suggestion(conn, s["version_id"], s["stable_id"], "dismissed")
    store.append_event(conn, "suggestion-dismissed", stable_id=s["stable_id"],
                       version_id=s["version_id"], payload={"name": s["name"], "actor": actor})
    return {"stable_id": s["stable_id"], "version_id": s["version_id"], "name": s["name"]}
