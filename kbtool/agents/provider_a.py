"""provider_a: the Anthropic Messages API through the official ``anthropic`` SDK (lazy import).

Environment: ``PROVIDER_A_API_KEY`` (required), ``PROVIDER_A_MODEL`` (default
:data:`DEFAULT_MODEL`), ``PROVIDER_A_BASE_URL`` (optional; otherwise the SDK's own
``ANTHROPIC_BASE_URL`` is honoured) for proxies and local test servers.
"""

from __future__ import annotations

from typing import Any

from .sdk_client import MAX_TOKENS, Completion, SDKClient, usage_count

PACKAGE = "anthropic"
KEY_ENV = "PROVIDER_A_API_KEY"
MODEL_ENV = "PROVIDER_A_MODEL"
BASE_URL_ENV = "PROVIDER_A_BASE_URL"
DEFAULT_MODEL = "claude-sonnet-4-6"


class MessagesClient(SDKClient):
    """The Messages API for one model (see :class:`~.sdk_client.SDKClient`)."""

    KEY_ENV, MODEL_ENV, DEFAULT_MODEL = KEY_ENV, MODEL_ENV, DEFAULT_MODEL
    BASE_URL_ENVS = (BASE_URL_ENV, "ANTHROPIC_BASE_URL")

    def _connect(self, **settings: Any) -> Any:
        import anthropic  # optional extra: pip install kbtool[llm]

        return anthropic.Anthropic(**settings)

    def _complete(self, system: str, user: str) -> Completion:
        msg = self._client.messages.create(
            model=self.model,
            max_tokens=MAX_TOKENS,
            system=system,
            messages=[{"role": "user", "content": user}],
        )
        text = "".join(getattr(b, "text", "") for b in msg.content if b.type == "text")
        usage = getattr(msg, "usage", None)
        return Completion(
            text, usage_count(usage, "input_tokens"), usage_count(usage, "output_tokens")
        )

    def _count(self, system: str, user: str) -> int | None:
        """The Messages API's own token counter (``messages.count_tokens``; free, no answer)."""
        res = self._client.messages.count_tokens(
            model=self.model, system=system, messages=[{"role": "user", "content": user}]
        )
        return usage_count(res, "input_tokens")
