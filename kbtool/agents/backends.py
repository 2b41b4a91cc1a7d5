"""Agent backends: the registry (``agent_backends``), selection (``resolve_backend``) and the
backend objects that turn one context into one :class:`~.proposal.Proposal`.

Every backend runs the specialist first; a specialist candidate whose calibrated confidence
reaches :data:`SPECIALIST_MIN` wins without calling a model. Provider backends then ask the
model; their self-reported confidence is not calibrated, so it is capped at
:data:`LLM_CONFIDENCE_CAP` (the raw value stays in the evidence as ``model_confidence``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from . import provider_a, provider_b
from .calibration import rule_confidence
from .context import DEFAULT_MAX_CHARS
from .offline import propose_offline
from .prompts import PROMPT_VERSION, SYSTEM_PROMPT, MalformedAnswer, parse_answer, user_prompt
from .proposal import Proposal
from .specialist import specialist_candidates

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
LLM_CONFIDENCE_CAP = 0.85

_SPECS: dict[str, dict[str, Any]] = {
    "offline": {
        "backend": "offline",
        "aliases": [],
        "package": None,
        "key": None,
        "default_model": None,
    },
    "provider_a": {
        "backend": "anthropic",
        "aliases": ["provider_a_alias_1", "provider_a_alias_2"],
        "package": provider_a.PACKAGE,
        "key": provider_a.KEY_ENV,
        "model_env": provider_a.MODEL_ENV,
        "default_model": provider_a.DEFAULT_MODEL,
    },
    "provider_b": {
        "backend": "openai",
        "aliases": [],
        "package": provider_b.PACKAGE,
        "key": provider_b.KEY_ENV,
        "model_env": provider_b.MODEL_ENV,
        "default_model": provider_b.DEFAULT_MODEL,
    },
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
    if spec["package"] and importlib.util.find_spec(spec["package"]) is None:
        out.append(f"Python package '{spec['package']}' (pip install 'kbtool[llm]')")
    if spec["key"] and not env.get(spec["key"]):
        out.append(f"environment variable {spec['key']}")
    return out


def agent_backends(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One Agent backend entry per backend (contract Part 2), in the order of ``AUTO`` last."""
    env = os.environ if env is None else env
    out = []
    for name in ("offline", "provider_a", "provider_b"):
        spec = _SPECS[name]
        requires = [p for p in (spec["package"], spec["key"]) if p]
        model = env.get(spec["model_env"]) if spec.get("model_env") else None
        out.append(
            {
                "name": name,
                "backend": spec["backend"],
                "aliases": list(spec["aliases"]),
                "available": not _missing(name, env),
                "requires": requires,
                "default_model": model or spec["default_model"],
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
        if selector in spec["aliases"]:
            return name
    return selector


def resolve_backend(
    selector: str = "auto",
    env: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
    max_retries: int = 3,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int | None = None,
) -> Backend:
    """The backend for ``selector``; ``auto`` = first available of provider_a, provider_b,
    offline. A named backend that is unavailable raises :class:`BackendUnavailable`.

    ``timeout`` is the total deadline of one provider call in seconds, retries included, and
    ``max_bytes`` its largest response (None: ``KBTOOL_AGENT_TIMEOUT`` /
    ``KBTOOL_AGENT_MAX_BYTES`` in ``env``, else 120 s and 4 MB; see :mod:`.sdk_client`)."""
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
    if name == "provider_a":
        client: Any = provider_a.MessagesClient(env, timeout=timeout, max_retries=max_retries,
                                                max_bytes=max_bytes)
    else:
        client = provider_b.ChatClient(env, timeout=timeout, max_retries=max_retries,
                                       max_bytes=max_bytes)
    return LLMBackend(name, _SPECS[name]["backend"], client.model, client.complete, max_chars)


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


class LLMBackend:
    """A provider backend: specialist first, then one model call per function."""

    def __init__(
        self,
        name: str,
        backend: str,
        model: str,
        complete: Callable[[str, str], str],
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.name, self.backend, self.model = name, backend, model
        self._complete = complete
        self._max_chars = max_chars

    def propose(self, ctx: Mapping[str, Any], taken: frozenset[str] | set[str]) -> Proposal | None:
        spec = specialist_proposal(ctx, taken, self.backend)
        if spec is not None:
            return spec
        base = {
            "index": int(ctx["index"]),
            "stable_id": ctx.get("stable_id"),
            "backend": self.backend,
            "model": self.model,
            "source": "llm",
        }
        try:
            text = self._complete(SYSTEM_PROMPT, user_prompt(ctx, self._max_chars))
        except Exception as e:  # SDK errors after its retries: counted, never a crash
            return Proposal(
                name=None,
                confidence=0.0,
                error=f"provider error: {_one_line(e)}",
                rule="provider_error",
                **base,
            )
        try:
            ans = parse_answer(text)
        except MalformedAnswer as e:
            return Proposal(
                name=None, confidence=0.0, error=f"malformed answer: {e}", rule="malformed", **base
            )
        return proposal_from_answer(ans, base)

    def complete(self, system: str, user: str) -> str:
        """One raw model call (the SDK's retries and timeout apply); errors propagate."""
        return self._complete(system, user)


def proposal_from_answer(
    ans: Mapping[str, Any], base: Mapping[str, Any], prompt: str = PROMPT_VERSION
) -> Proposal:
    """A provider proposal from a parsed answer (:func:`~.prompts.parse_answer`); ``base``
    holds index, stable_id, backend, model and source. The confidence is capped."""
    reasons = list(ans["reasons"])
    if ans["explanation"]:
        reasons.insert(0, ans["explanation"])
    reasons.append(f"model_confidence={ans['confidence']:g}; prompt={prompt}")
    return Proposal(
        name=ans["name"],
        confidence=round(min(max(ans["confidence"], 0.0), LLM_CONFIDENCE_CAP), 3),
        summary=ans["summary"],
        reasons=reasons,
        **base,
    )


def _one_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text[:300]
