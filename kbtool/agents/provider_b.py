"""provider_b: the OpenAI chat-completions API through the official ``openai`` SDK (lazy import).

Environment: ``PROVIDER_B_API_KEY`` (required), ``PROVIDER_B_MODEL`` (default
:data:`DEFAULT_MODEL`), ``PROVIDER_B_BASE_URL`` (optional, e.g. ``http://127.0.0.1:8000/v1``)
to use any compatible server.
"""

from __future__ import annotations

from typing import Any

from .sdk_client import MAX_TOKENS, Completion, SDKClient, usage_count

PACKAGE = "openai"
KEY_ENV = "PROVIDER_B_API_KEY"
MODEL_ENV = "PROVIDER_B_MODEL"
BASE_URL_ENV = "PROVIDER_B_BASE_URL"
DEFAULT_MODEL = "gpt-5.4-mini"


class ChatClient(SDKClient):
    """Chat completions for one model (see :class:`~.sdk_client.SDKClient`)."""

    KEY_ENV, MODEL_ENV, DEFAULT_MODEL = KEY_ENV, MODEL_ENV, DEFAULT_MODEL
    BASE_URL_ENVS = (BASE_URL_ENV,)

    def _connect(self, **settings: Any) -> Any:
        import openai  # optional extra: pip install kbtool[llm]

        # OpenAI's own newer models want max_completion_tokens and refuse a temperature;
        # compatible servers generally know only max_tokens.
        self._limit_key = "max_tokens" if settings.get("base_url") else "max_completion_tokens"
        return openai.OpenAI(**settings)

    def _count(self, system: str, user: str) -> int | None:
        """``tiktoken``'s count for an OpenAI model when that package is installed and the
        endpoint is OpenAI's own (a compatible server's tokenizer is unknown): the two
        messages plus the chat format's few tokens per message. None otherwise."""
        if self.base_url:
            return None
        enc = _encoding(self.model)
        if enc is None:
            return None
        return len(enc.encode(system)) + len(enc.encode(user)) + 3 + 2 * 4

    def _complete(self, system: str, user: str) -> Completion:
        resp = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            **{self._limit_key: MAX_TOKENS},
        )
        usage = getattr(resp, "usage", None)
        tin, tout = usage_count(usage, "prompt_tokens"), usage_count(usage, "completion_tokens")
        if not resp.choices:
            return Completion("", tin, tout)
        return Completion(resp.choices[0].message.content or "", tin, tout)


_ENCODINGS: dict[str, Any] = {}


def _encoding(model: str) -> Any:
    """tiktoken's encoding for ``model`` (o200k_base when unknown), None without tiktoken
    or when its tables cannot be loaded (they are downloaded once by tiktoken itself)."""
    if model not in _ENCODINGS:
        try:
            import tiktoken

            try:
                _ENCODINGS[model] = tiktoken.encoding_for_model(model)
            except KeyError:
                _ENCODINGS[model] = tiktoken.get_encoding("o200k_base")
        except Exception:  # not installed, or no table offline: kbtool's estimate instead
            _ENCODINGS[model] = None
    return _ENCODINGS[model]
