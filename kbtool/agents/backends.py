"""Agent backends: the registry (``agent_backends``), selection (``resolve_backend``) and the
backend objects that turn one context into one :class:`~.proposal.Proposal`.

Every backend runs the specialist first; a specialist candidate whose calibrated confidence
reaches :data:`SPECIALIST_MIN` wins without calling a model. Provider backends then ask the
model with the naming prompt (:func:`~.prompts.build_prompt`: the function's C, its callees
and callers, strings and data labels, under a token budget) and, by default, a second
differently ordered prompt; the written confidence comes from
:func:`~.calibration.llm_confidence` (evidence checked against the facts, agreement of the two
answers, consistency with the callees), never from the model's own number (kept in the
evidence as ``model_confidence``).

Answers are kept as they arrive in an :class:`AnswerStore` (the pass service's is the KB's
``agent_answers`` table), keyed by backend, model and prompt hash: a re-run, or a pass
resumed after an interruption, sends only the prompts that have no answer yet. A circuit
breaker stops calling after :data:`DEFAULT_BREAKER` consecutive failed calls.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from . import provider_a, provider_b
from .calibration import llm_confidence, rule_confidence
from .context import DEFAULT_MAX_CHARS
from .costs import FRAMING_TOKENS, Meter, estimate_tokens, price_table
from .offline import propose_offline
from .prompts import (
    DEFAULT_PROMPT_TOKENS,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    MalformedAnswer,
    Prompt,
    base_key,
    build_prompt,
    c_text,
    parse_answer,
)
from .proposal import Proposal
from .sdk_client import Completion
from .specialist import specialist_candidates
from .tokens import split_tokens
from .verifier import check_evidence, consistent_with_facts

SELECTORS = (
    "auto",
    "offline",
    "provider_a",
    "provider_a_alias_1",
    "provider_a_alias_2",
    "provider_b",
)
AUTO_ORDER = ("provider_a", "provider_b", "offline")
SPECIALIST_MIN = 0.5
LLM_CONFIDENCE_CAP = 0.85  # the deep understanding's cap (its answers are not re-asked)
DEFAULT_RETRIES = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_BREAKER = 5  # consecutive failed calls that open the circuit
RETRIES_ENV = "KBTOOL_AGENT_RETRIES"
CONCURRENCY_ENV = "KBTOOL_AGENT_CONCURRENCY"
OPINIONS_ENV = "KBTOOL_AGENT_OPINIONS"


@dataclass(frozen=True)
class BackendSpec:
    """What a backend needs and reports: its evidence name, SDK package, key and model settings."""

    backend: str  # internal name written into evidence
    aliases: tuple[str, ...] = ()
    package: str | None = None  # Python package the backend imports
    key: str | None = None  # environment variable holding the API key
    model_env: str | None = None  # environment variable overriding the model
    default_model: str | None = None


class AgentBackendEntry(TypedDict):
    """One Agent backend entry (contract Part 2)."""

    name: str
    backend: str
    aliases: list[str]
    available: bool
    requires: list[str]
    default_model: str | None


_SPECS: dict[str, BackendSpec] = {
    "offline": BackendSpec("offline"),
    "provider_a": BackendSpec(
        "anthropic",
        aliases=("provider_a_alias_1", "provider_a_alias_2"),
        package=provider_a.PACKAGE,
        key=provider_a.KEY_ENV,
        model_env=provider_a.MODEL_ENV,
        default_model=provider_a.DEFAULT_MODEL,
    ),
    "provider_b": BackendSpec(
        "openai",
        package=provider_b.PACKAGE,
        key=provider_b.KEY_ENV,
        model_env=provider_b.MODEL_ENV,
        default_model=provider_b.DEFAULT_MODEL,
    ),
}


class BackendUnavailable(RuntimeError):
    """A backend was asked for by name but its SDK or key is missing."""


class Backend(Protocol):
    name: str  # selector: offline, provider_a, provider_b
    backend: str  # internal name written into evidence
    model: str | None

    def propose(self, ctx: Mapping[str, Any], taken: frozenset[str] | set[str]) -> Proposal | None:
        """One proposal for the function of ``ctx`` (None: nothing to propose)."""
        ...


def _missing(name: str, env: Mapping[str, str]) -> list[str]:
    spec = _SPECS[name]
    out = []
    if spec.package and importlib.util.find_spec(spec.package) is None:
        out.append(f"Python package '{spec.package}' (pip install 'kbtool[llm]')")
    if spec.key and not env.get(spec.key):
        out.append(f"environment variable {spec.key}")
    return out


def agent_backends(env: Mapping[str, str] | None = None) -> list[AgentBackendEntry]:
    """One Agent backend entry per backend (contract Part 2), in the order of ``AUTO`` last."""
    env = os.environ if env is None else env
    out: list[AgentBackendEntry] = []
    for name in ("offline", "provider_a", "provider_b"):
        spec = _SPECS[name]
        requires = [p for p in (spec.package, spec.key) if p]
        model = env.get(spec.model_env) if spec.model_env else None
        out.append(
            {
                "name": name,
                "backend": spec.backend,
                "aliases": list(spec.aliases),
                "available": not _missing(name, env),
                "requires": requires,
                "default_model": model or spec.default_model,
            }
        )
    return out


def canonical_selector(selector: str) -> str:
    """``provider_a`` for its aliases, the selector itself otherwise; ValueError if unknown."""
    if selector not in SELECTORS:
        raise ValueError(
            f"unknown agent backend {selector!r}; choose one of {', '.join(SELECTORS)}"
        )
    for name, spec in _SPECS.items():
        if selector in spec.aliases:
            return name
    return selector


def int_setting(env: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
    """An integer setting from ``env[key]`` (default when unset); ValueError with one line
    when it is not a whole number in ``lo..hi``."""
    raw = (env.get(key) or "").strip()
    if not raw:
        return default
    try:
        v = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be a whole number from {lo} to {hi}, not {raw!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{key} must be a whole number from {lo} to {hi}, not {raw!r}")
    return v


def resolve_backend(
    selector: str = "auto",
    env: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
    max_retries: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int | None = None,
    budget: int = DEFAULT_PROMPT_TOKENS,
    opinions: int | None = None,
    price: tuple[float, float] | None = None,
) -> Backend:
    """The backend for ``selector``; ``auto`` = first available of provider_a, provider_b,
    offline. A named backend that is unavailable raises :class:`BackendUnavailable`.

    ``timeout`` is the total deadline of one provider call in seconds, retries included, and
    ``max_bytes`` its largest response (None: ``KBTOOL_AGENT_TIMEOUT`` /
    ``KBTOOL_AGENT_MAX_BYTES`` in ``env``, else 120 s and 4 MB; see :mod:`.sdk_client`);
    ``max_retries`` the SDK's retries of a 429/5xx/connection error (None:
    ``KBTOOL_AGENT_RETRIES`` or 3); ``budget`` the prompt's token budget; ``opinions`` 2 asks
    a second prompt for the agreement check, 1 does not (None: ``KBTOOL_AGENT_OPINIONS`` or
    2); ``price`` (US$ per million tokens in, out) overrides the price table."""
    env = os.environ if env is None else env
    name = canonical_selector(selector)
    if name == "auto":
        name = next(n for n in AUTO_ORDER if not _missing(n, env))
    missing = _missing(name, env)
    if missing:
        raise BackendUnavailable(
            f"agent backend {selector!r} is unavailable: missing {' and '.join(missing)}"
        )
    if name == "offline":
        return OfflineBackend()
    if max_retries is None:
        max_retries = int_setting(env, RETRIES_ENV, DEFAULT_RETRIES, 0, 20)
    if max_retries < 0:
        raise ValueError(f"retries must be 0 or more, not {max_retries}")
    if opinions is None:
        opinions = int_setting(env, OPINIONS_ENV, 2, 1, 2)
    if name == "provider_a":
        client: Any = provider_a.MessagesClient(
            env, timeout=timeout, max_retries=max_retries, max_bytes=max_bytes
        )
    else:
        client = provider_b.ChatClient(
            env, timeout=timeout, max_retries=max_retries, max_bytes=max_bytes
        )
    if price is None:
        price = price_table(env).get(client.model)
    return LLMBackend(
        name,
        _SPECS[name].backend,
        client.model,
        client.complete_full,
        max_chars,
        budget=budget,
        opinions=opinions,
        meter=Meter(price),
        count=client.count_tokens,
    )


class OfflineBackend:
    """Specialist families and calibrated heuristics; deterministic, no key, no network."""

    name = "offline"
    backend = "offline"
    model: str | None = None

    def propose(self, ctx: Mapping[str, Any], taken: frozenset[str] | set[str]) -> Proposal | None:
        return propose_offline(ctx, taken)


def specialist_proposal(
    ctx: Mapping[str, Any], taken: frozenset[str] | set[str], backend: str
) -> Proposal | None:
    """The best specialist candidate at or above ``SPECIALIST_MIN``, as a proposal."""
    best = None
    for cand in specialist_candidates(ctx):
        conf = rule_confidence(cand.rule)
        if cand.name in taken or conf < SPECIALIST_MIN:
            continue
        if best is None or conf > best[0]:
            best = (conf, cand)
    if best is None:
        return None
    conf, cand = best
    return Proposal(
        index=int(ctx["index"]),
        stable_id=ctx.get("stable_id"),
        name=cand.name,
        confidence=conf,
        summary=cand.summary,
        reasons=list(cand.reasons),
        backend=backend,
        model=None,
        source="specialist",
        rule=cand.rule,
    )


class AnswerStore(Protocol):
    """Where answers are kept as they arrive (the pass service: the KB; thread-safe)."""

    def get(self, key: str) -> Mapping[str, Any] | None:
        """``{"text", "tokens_in", "tokens_out"}`` of a stored answer, or None."""
        ...

    def put(self, key: str, answer: Mapping[str, Any]) -> None:
        """Store ``answer`` (text, tokens_in, tokens_out, index, variant) under ``key``."""
        ...


class LLMBackend:
    """A provider backend: specialist first, then one model call per prompt (two prompts per
    function with ``opinions=2``), answers kept in ``store``, spending counted in ``meter``."""

    def __init__(
        self,
        name: str,
        backend: str,
        model: str,
        complete: Callable[[str, str], str | Completion],
        max_chars: int = DEFAULT_MAX_CHARS,
        *,
        budget: int = DEFAULT_PROMPT_TOKENS,
        opinions: int = 2,
        meter: Meter | None = None,
        store: AnswerStore | None = None,
        breaker: int = DEFAULT_BREAKER,
        count: Callable[[str, str], int | None] | None = None,
    ) -> None:
        self.name, self.backend, self.model = name, backend, model
        self._complete = complete
        self._max_chars = max_chars
        self.budget, self.opinions = budget, opinions
        self.meter = meter or Meter()
        self.store = store
        self.breaker = breaker
        #: the provider's token counter (system, user) -> tokens or None (see the estimate)
        self.count = count
        self._failures = 0
        self.circuit_open = False
        self._lock = threading.Lock()
        #: reuse a stored answer to the same question with other neighbour names (round 1)
        self.reuse = True
        self.round = 1

    def start_round(self, round_no: int, size: int) -> None:
        """Round ``round_no`` starts (round 1 may reuse answers; see :func:`~.prompts.base_key`)."""
        self.round = round_no

    # ------------------------------------------------------------------ calls
    def prompts(self, ctx: Mapping[str, Any]) -> list[Prompt]:
        """The prompts one function costs (the second only with ``opinions=2``)."""
        out = [build_prompt(ctx, self.budget)]
        if self.opinions > 1:
            out.append(build_prompt(ctx, self.budget, variant="b"))
        for p in out:
            p.base = base_key(ctx, p.variant, self.budget, self.backend, self.model, p.system)
        return out

    def stored(self, prompt: Prompt) -> Mapping[str, Any] | None:
        """The stored answer to ``prompt``: its exact prompt, else (round 1, ``reuse``) the
        same question asked when its neighbours had other names."""
        if self.store is None:
            return None
        hit = self.store.get(prompt.key(self.backend, self.model))
        if hit is None and self.reuse and self.round <= 1 and prompt.base:
            hit = self.store.get(prompt.base)
        return hit

    def ask(self, prompt: Prompt, index: int | None = None) -> str:
        """The answer text to ``prompt``: from the store, else one model call (stored at
        once). Raises the SDK's error after its retries, or RuntimeError while the circuit
        is open."""
        key = prompt.key(self.backend, self.model)
        hit = self.stored(prompt)
        if hit is not None:
            self.meter.hit()
            return str(hit["text"])
        if self.circuit_open:
            raise RuntimeError(
                f"circuit open: {self.breaker} calls in a row failed; no further call in this pass"
            )
        try:
            res = self._complete(prompt.system, prompt.text)
        except Exception:
            self.meter.fail()
            with self._lock:
                self._failures += 1
                if self._failures >= self.breaker:
                    self.circuit_open = True
            raise
        with self._lock:
            self._failures = 0
        if isinstance(res, Completion):
            text, tin, tout = res.text, res.tokens_in, res.tokens_out
        else:
            text, tin, tout = str(res), None, None
        self.meter.add(
            tin,
            tout,
            prompt=prompt.system + prompt.text,
            answer=text,
            estimate=request_tokens(prompt),
        )
        if self.store is not None:
            self.store.put(
                key,
                {
                    "text": text,
                    "tokens_in": tin,
                    "tokens_out": tout,
                    "index": index,
                    "variant": prompt.variant,
                    "prompt_tokens": prompt.tokens,
                    "base": prompt.base,
                },
            )
        return text

    def propose(self, ctx: Mapping[str, Any], taken: frozenset[str] | set[str]) -> Proposal | None:
        spec = specialist_proposal(ctx, taken, self.backend)
        if spec is not None:
            return spec
        index = int(ctx["index"])
        base = {
            "index": index,
            "stable_id": ctx.get("stable_id"),
            "backend": self.backend,
            "model": self.model,
            "source": "llm",
        }
        prompts = self.prompts(ctx)
        answers: list[dict[str, Any] | None] = []
        for i, prompt in enumerate(prompts):
            try:
                text = self.ask(prompt, index)
            except Exception as e:  # SDK errors after its retries: counted, never a crash
                if i == 0:
                    return Proposal(
                        name=None,
                        confidence=0.0,
                        rule="provider_error",
                        error=f"provider error: {_one_line(e)}",
                        **base,
                    )
                answers.append(None)
                continue
            try:
                answers.append(parse_answer(text))
            except MalformedAnswer as e:
                if i == 0:
                    return Proposal(
                        name=None,
                        confidence=0.0,
                        error=f"malformed answer: {e}",
                        rule="malformed",
                        **base,
                    )
                answers.append(None)
        first = answers[0]
        assert first is not None
        second = answers[1] if len(answers) > 1 else None
        agree: bool | None = None
        if len(prompts) > 1:
            agree = second is not None and same_name(first["name"], second["name"])
        return proposal_from_answer(first, base, ctx=ctx, agree=agree, c=c_text(ctx), second=second)

    def complete(self, system: str, user: str) -> str:
        """One raw model call (the SDK's retries and timeout apply); errors propagate."""
        return self.complete_usage(system, user).text

    def complete_usage(self, system: str, user: str) -> Completion:
        """One raw model call with the tokens the provider counted (metered); errors
        propagate."""
        res = self._complete(system, user)
        if not isinstance(res, Completion):  # a plain text backend (tests): nothing counted
            return Completion(str(res))
        self.meter.add(res.tokens_in, res.tokens_out, prompt=system + user, answer=res.text)
        return res


def system_tokens(system: str) -> int:
    """kbtool's token estimate of a system prompt (the naming one computed once)."""
    return _SYSTEM_TOKENS if system == SYSTEM_PROMPT else estimate_tokens(system)


def request_tokens(prompt: Prompt) -> int:
    """kbtool's estimate of the input tokens one call of ``prompt`` is billed: the user
    message, the system prompt and the chat framing around them."""
    return prompt.tokens + system_tokens(prompt.system) + FRAMING_TOKENS


def same_name(a: str, b: str) -> bool:
    """Two answers name the function alike: equal ignoring case and separators."""
    return split_tokens(a) == split_tokens(b)


def proposal_from_answer(
    ans: Mapping[str, Any],
    base: Mapping[str, Any],
    prompt: str = PROMPT_VERSION,
    *,
    ctx: Mapping[str, Any] | None = None,
    agree: bool | None = None,
    c: str = "",
    second: Mapping[str, Any] | None = None,
) -> Proposal:
    """A provider proposal from a parsed answer (:func:`~.prompts.parse_answer`); ``base``
    holds index, stable_id, backend, model and source. With ``ctx`` the confidence is
    calibrated (:func:`~.calibration.llm_confidence`: evidence checked against ``ctx`` and
    the C ``c`` the prompt showed, ``agree`` with a second opinion); without it (the deep
    reader, whose answer is not re-asked) the model's number capped at
    :data:`LLM_CONFIDENCE_CAP`."""
    reasons = list(ans["reasons"])
    if ans["explanation"]:
        reasons.insert(0, ans["explanation"])
    reasons.append(f"model_confidence={ans['confidence']:g}; prompt={prompt}")
    extra: dict[str, Any] = {
        "locals": dict(ans.get("locals") or {}),
        "prototype": str(ans.get("prototype") or ""),
    }
    if ctx is None:
        return Proposal(
            name=ans["name"],
            confidence=round(min(max(ans["confidence"], 0.0), LLM_CONFIDENCE_CAP), 3),
            summary=ans["summary"],
            reasons=reasons,
            **extra,
            **base,
        )
    ok, bad = check_evidence(ans.get("evidence") or {}, ctx, c)
    name = ans["name"]
    words = {t for t in split_tokens(name) if len(t) >= 3}
    linked = any(w in claim.lower() for w in words for claim in ok)
    consistent = consistent_with_facts(name, ctx)
    conf, rule = llm_confidence(
        verified=len(ok), false=len(bad), agree=agree, consistent=consistent, linked=linked
    )
    calib = {
        "model_confidence": ans["confidence"],
        "verified": ok[:8],
        "false": bad[:8],
        "agree": agree,
        "consistent": consistent,
    }
    if second is not None and agree is False:
        calib["second_name"] = str(second.get("name"))[:96]
    if bad:
        reasons.append("evidence not in the facts: " + "; ".join(bad[:4]))
    return Proposal(
        name=name,
        confidence=conf,
        summary=ans["summary"],
        reasons=reasons,
        rule=rule,
        calibration=calib,
        **extra,
        **base,
    )


def _one_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text[:300]


_SYSTEM_TOKENS = estimate_tokens(SYSTEM_PROMPT)
