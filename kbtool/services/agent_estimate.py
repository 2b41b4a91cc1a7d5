"""The pre-pass estimate of a provider pass: prompts, stored answers, tokens and cost of round
1 before any call, scaled by the provider's own token counts where there are any, and the
one-line notice a person reads before paying."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from typing import Any

from kbtool.agents import LLMBackend
from kbtool.agents.backends import request_tokens
from kbtool.agents.costs import EXPECTED_OUTPUT_TOKENS, cost

log = logging.getLogger("kbtool.agent_pass")


#: prompts the provider's own counter reads before a pass (spread over the sizes)
COUNT_SAMPLE = 8
#: billed answers of the same prompts that replace the counter / the estimator's ratio
HISTORY_MIN = 8


def estimate_round(
    conn: sqlite3.Connection, llm: LLMBackend, contexts: list[dict[str, Any]]
) -> dict[str, Any]:
    """Prompts, stored answers, tokens and cost of round 1 before any call.

    Input tokens start from :func:`~kbtool.agents.costs.estimate_tokens` and are scaled by
    the provider's own count, best first: the tokens the provider billed for the prompts of
    this pass that already have an answer (a resumed pass: ``HISTORY_MIN`` or more), else the
    provider's token counter on ``COUNT_SAMPLE`` unanswered prompts (Anthropic's
    ``messages.count_tokens``; ``tiktoken`` for OpenAI's own endpoint when installed), else
    the estimator alone; each call adds the chat framing
    (:func:`~kbtool.agents.backends.request_tokens`). ``basis`` says which. Output tokens
    per answer are the billed mean of these prompts' answers with a history, else the mean
    of the answers the same backend and model gave in the KB before (``HISTORY_MIN`` or
    more: another version's pass), else :data:`~kbtool.agents.costs.EXPECTED_OUTPUT_TOKENS`
    (an answer of the shape the prompt asks for; never over the ``max_tokens`` asked). The estimate
    also starts the meter's running projection (:meth:`~kbtool.agents.costs.Meter.projection`),
    which the provider's usage re-scales as the pass's answers arrive."""
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
                billed_est += request_tokens(pr)
    raw = sum(request_tokens(pr) for pr in todo)
    ratio, basis, per_answer = (
        1.0,
        "kbtool's estimate (no token counter for this provider)",
        EXPECTED_OUTPUT_TOKENS,
    )
    if billed_n >= HISTORY_MIN and billed_est:
        ratio = billed_in / billed_est
        per_answer = round(billed_out / billed_n)
        basis = f"calibrated on {billed_n} answers the provider billed"
    else:
        if todo and llm.count is not None:
            sample = _count_sample(llm, todo)
            if sample is not None:
                ratio = sample[0]
                basis = f"the provider's token counter on {sample[1]} prompts"
        seen = _model_answers(conn, llm)
        if seen is not None:
            per_answer = seen[0]
            basis += f"; answers: as long as the {seen[1]} this model gave before"
    calls = prompts - answered
    tokens = round(raw * ratio)
    llm.meter.plan(raw, calls, ratio, per_answer)  # the running projection starts from here
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


def _model_answers(conn: sqlite3.Connection, llm: LLMBackend) -> tuple[int, int] | None:
    """(mean billed output tokens, answers) of the answers this backend and model gave in
    the KB before (other versions, other passes), None under ``HISTORY_MIN`` of them."""
    from kbtool.agents.sdk_client import MAX_TOKENS
    from kbtool.kb import queries

    usage = queries.agent_model_usage(conn, llm.backend, llm.model)
    if usage["answers"] < HISTORY_MIN:
        return None
    return min(MAX_TOKENS, round(usage["tokens_out"] / usage["answers"])), usage["answers"]


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
        est += request_tokens(pr)
    return (got / est, n) if est else None


def estimate_text(plan: Any, rounds: int, est: Mapping[str, Any]) -> str:
    more = (
        " in round 1 (later rounds re-ask only callers whose callees changed)" if rounds > 1 else ""
    )
    model = f" ({plan.backend.model})" if plan.backend.model else ""
    usd = (
        f"about ${est['cost_usd']:.4f}"
        if est.get("cost_usd") is not None
        else "cost unknown (no price for this model: --price IN,OUT)"
    )
    stored = f", {est['answered']} already answered (kept in the KB)" if est.get("answered") else ""
    basis = f" (tokens: {est['basis']})" if est.get("basis") else ""
    return (
        f"estimate: up to {est['calls']} model calls to {plan.backend.name}{model}{more}"
        f"{stored}; about {est['tokens_in']} tokens in, {est['tokens_out']} out, {usd}{basis}; "
        "specialist hits make none"
    )
