"""provider_a: the Anthropic Messages API through the official ``anthropic`` SDK (lazy import).

Environment: ``PROVIDER_A_API_KEY`` (required), ``PROVIDER_A_MODEL`` (default
:data:`DEFAULT_MODEL`), ``PROVIDER_A_BASE_URL`` (optional; otherwise the SDK's own
``ANTHROPIC_BASE_URL`` is honoured) for proxies and local test servers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PACKAGE = "anthropic"
KEY_ENV = "PROVIDER_A_API_KEY"
MODEL_ENV = "PROVIDER_A_MODEL"
BASE_URL_ENV = "PROVIDER_A_BASE_URL"
DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024


class MessagesClient:
    """Blocking client for one model. Retries (429, 5xx, connection errors) with the SDK's
    exponential backoff, ``max_retries`` times, each attempt bounded by ``timeout`` seconds."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        model: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        import anthropic  # optional extra: pip install kbtool[llm]

        env = os.environ if env is None else env
        self.model = model or env.get(MODEL_ENV) or DEFAULT_MODEL
        base_url = env.get(BASE_URL_ENV) or env.get("ANTHROPIC_BASE_URL") or None
        self._client = anthropic.Anthropic(
            api_key=env.get(KEY_ENV),
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def complete(self, system: str, user: str) -> str:
        """The text of the model's answer to one user message."""
        msg = self._client.messages.create(
            model=self.model,
            max_tokens=MAX_TOKENS,
            system=system,
            messages=[{"role": "user", "content": user}],
        )
        return "".join(getattr(b, "text", "") for b in msg.content if b.type == "text")
