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
DEFAULT_MODEL = "gpt-4o-mini"
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
        self._client = openai.OpenAI(
            api_key=env.get(KEY_ENV), base_url=env.get(BASE_URL_ENV) or None, timeout=timeout,
            max_retries=max_retries,
        )

    def complete(self, system: str, user: str) -> str:
        """The text of the model's answer to one user message."""
        resp = self._client.chat.completions.create(
            model=self.model, max_tokens=MAX_TOKENS, temperature=0.0,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        )
        if not resp.choices:
            return ""
        return resp.choices[0].message.content or ""
