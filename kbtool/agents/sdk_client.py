"""What the two provider clients share: settings from the environment and the SDK's bounds.

A subclass names its environment variables and default model and implements
:meth:`SDKClient._connect` (build the official SDK client, imported lazily) and
:meth:`SDKClient.complete` (one system + user message in, the answer's text out).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar

MAX_TOKENS = 1024


class SDKClient:
    """Blocking client for one model. Retries (429, 5xx, connection errors) with the SDK's
    exponential backoff, ``max_retries`` times, each attempt bounded by ``timeout`` seconds."""

    KEY_ENV: ClassVar[str]
    MODEL_ENV: ClassVar[str]
    #: base URL variables, first set wins (none set: the SDK's default endpoint)
    BASE_URL_ENVS: ClassVar[tuple[str, ...]]
    DEFAULT_MODEL: ClassVar[str]

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        model: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        env = os.environ if env is None else env
        self.model = model or env.get(self.MODEL_ENV) or self.DEFAULT_MODEL
        self.base_url = next((env[k] for k in self.BASE_URL_ENVS if env.get(k)), None)
        self._client = self._connect(
            api_key=env.get(self.KEY_ENV),
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def _connect(self, **settings: Any) -> Any:
        raise NotImplementedError

    def complete(self, system: str, user: str) -> str:
        """The text of the model's answer to one user message."""
        raise NotImplementedError
