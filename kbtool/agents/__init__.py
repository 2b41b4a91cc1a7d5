"""kbtool.agents: pure per-function naming agents (no DB, no front-end).

The pass service builds one context per function (:func:`context_from_facts` or its own
dict, see :mod:`.context`), picks a backend, runs rounds and writes accepted proposals through
the gate::

    from kbtool.agents import agent_backends, resolve_backend, run_round, refresh_names

    backend = resolve_backend("auto")            # BackendUnavailable / ValueError on bad input
    for rv in run_round(backend, contexts, taken_names):
        if rv.verdict.ok:   # else: count rejected_by_verifier (rv.verdict.code says why)
            gate.upsert(rv.proposal.stable_id, rv.proposal.name, rv.proposal.confidence,
                        summary=rv.proposal.summary, evidence=rv.proposal.evidence())
        # rv.proposal.source == "specialist" feeds specialist_proposed / specialist_written

Backends: ``offline`` (specialist + calibrated heuristics), ``provider_a`` (Anthropic
Messages API; aliases ``provider_a_alias_1``/``_2``), ``provider_b`` (OpenAI chat
completions). The SDKs are optional (``pip install 'kbtool[llm]'``) and imported lazily.
"""

from .backends import (
    AUTO_ORDER,
    SELECTORS,
    Backend,
    BackendUnavailable,
    LLMBackend,
    OfflineBackend,
    agent_backends,
    canonical_selector,
    resolve_backend,
)
from .context import (
    Context,
    bound_context,
    callers_of,
    context_from_facts,
    refresh_names,
    string_sharing,
)
from .offline import propose_offline
from .proposal import Proposal, Verdict
from .rounds import Reviewed, map_bounded, run_round, run_rounds
from .summary import UNCONFIDENT_BELOW, PassSummary, should_consider
from .tokens import is_c_identifier, is_generic_name, split_tokens
from .verifier import verify

__all__ = [
    "AUTO_ORDER",
    "SELECTORS",
    "UNCONFIDENT_BELOW",
    "Backend",
    "BackendUnavailable",
    "Context",
    "LLMBackend",
    "OfflineBackend",
    "PassSummary",
    "Proposal",
    "Reviewed",
    "Verdict",
    "agent_backends",
    "bound_context",
    "callers_of",
    "canonical_selector",
    "context_from_facts",
    "is_c_identifier",
    "is_generic_name",
    "map_bounded",
    "propose_offline",
    "refresh_names",
    "resolve_backend",
    "run_round",
    "run_rounds",
    "should_consider",
    "split_tokens",
    "string_sharing",
    "verify",
]
