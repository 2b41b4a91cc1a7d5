"""provider_b: the OpenAI chat-completions API through the official ``openai`` SDK (lazy import).

Environment: ``PROVIDER_B_API_KEY`` (required), ``PROVIDER_B_MODEL`` (default
:data:`DEFAULT_MODEL`), ``PROVIDER_B_BASE_URL`` (optional, e.g. ``http://127.0.0.1:8000/v1``)
to use any compatible server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PACKAGE = "openai"
KEY_ENV = "PROVIDER_B_API_KEY"
MODEL_ENV = "PROVIDER_B_MODEL"
BASE_URL_ENV = "PROVIDER_B_BASE_URL"
DEFAULT_MODEL = "gpt-5.4-mini"
MAX_TOKENS = 1024


class ChatClient:
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
        import openai  # optional extra: pip install kbtool[llm]

        env = os.environ if env is None else env
        self.model = model or env.get(MODEL_ENV) or DEFAULT_MODEL
        base_url = env.get(BASE_URL_ENV) or None
        # OpenAI's own newer models want max_completion_tokens and refuse a temperature;
        # compatible servers generally know only max_tokens.
        self._limit_key = "max_tokens" if base_url else "max_completion_tokens"
        self._client = openai.OpenAI(
            api_key=env.get(KEY_ENV),
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def complete(self, system: str, user: str) -> str:
        """The text of the model's answer to one user message."""
        resp = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            **{self._limit_key: MAX_TOKENS},
        )
        if not resp.choices:
            return ""
        return resp.choices[0].message.content or ""
