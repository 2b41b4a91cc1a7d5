"""What the two provider clients share: settings from the environment and the call's bounds.

A subclass names its environment variables and default model and implements
:meth:`SDKClient._connect` (build the official SDK client, imported lazily, with the given
``http_client``) and :meth:`SDKClient._complete` (one system + user message in, the answer's
text out). :meth:`SDKClient.complete` runs it under two bounds the SDK alone does not give:

* a total deadline per call (``timeout``, default :data:`DEFAULT_TIMEOUT` or
  ``KBTOOL_AGENT_TIMEOUT``), retries included: the SDK's own timeout is per read, so a server
  trickling a byte every few seconds would hold a call for minutes. A watchdog returns
  :class:`DeadlineExceeded` to the caller at the deadline and shuts the call's sockets; the
  transport checks the deadline before each attempt and on every body chunk.
* a maximum response size (``max_bytes``, default :data:`DEFAULT_MAX_BYTES` or
  ``KBTOOL_AGENT_MAX_BYTES``): :class:`ResponseTooLarge` as soon as the body (or its
  ``content-length``) goes past it; the body is never held whole.
"""

from __future__ import annotations

import contextvars
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

MAX_TOKENS = 1024
DEFAULT_TIMEOUT = 120.0  # seconds, one call from first byte sent to last byte read
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
TIMEOUT_ENV = "KBTOOL_AGENT_TIMEOUT"
MAX_BYTES_ENV = "KBTOOL_AGENT_MAX_BYTES"


@dataclass(frozen=True)
class Completion:
    """One answer: its text and the tokens the provider counted (None: not reported)."""

    text: str
    tokens_in: int | None = None
    tokens_out: int | None = None


class ProviderCallError(RuntimeError):
    """A provider call cut by its bounds; ``kind`` is ``deadline`` or ``size``."""

    kind = "bound"


class DeadlineExceeded(ProviderCallError):
    kind = "deadline"


class ResponseTooLarge(ProviderCallError):
    kind = "size"


def bounds_from_env(env: Mapping[str, str] | None = None) -> tuple[float, int]:
    """(total deadline in seconds, max response bytes) from the environment or the defaults;
    ValueError with one line for a value that is not a positive number."""
    env = os.environ if env is None else env
    out: list[float] = []
    for key, default in ((TIMEOUT_ENV, DEFAULT_TIMEOUT), (MAX_BYTES_ENV, DEFAULT_MAX_BYTES)):
        raw = env.get(key)
        try:
            value = float(raw) if raw else float(default)
        except ValueError:
            raise ValueError(f"{key} must be a positive number, not {raw!r}") from None
        if not value > 0:
            raise ValueError(f"{key} must be a positive number, not {raw!r}")
        out.append(value)
    return out[0], int(out[1])


@dataclass
class CallBudget:
    """The bounds of one :meth:`SDKClient.complete` call, shared by all its attempts."""

    deadline: float  # time.monotonic()
    max_bytes: int
    timeout: float
    error: ProviderCallError | None = None
    sockets: list[socket.socket] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, err: ProviderCallError) -> ProviderCallError:
        with self.lock:
            if self.error is None:
                self.error = err
            return self.error

    def check(self) -> None:
        """Raise the call's error, or :class:`DeadlineExceeded` once the deadline passed."""
        if self.error is None and time.monotonic() >= self.deadline:
            self.fail(DeadlineExceeded(f"no complete answer within {self.timeout:g} s"))
        if self.error is not None:
            raise self.error

    def abort(self) -> None:
        """Shut the call's sockets so a read blocked on a silent server returns now."""
        with self.lock:
            socks = list(self.sockets)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_BUDGET: contextvars.ContextVar[CallBudget | None] = contextvars.ContextVar(
    "kbtool_call_budget", default=None
)


def _httpx() -> Any:
    """The httpx flavour the installed SDKs take (``httpx2`` when present, else ``httpx``)."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


def bounded_http_client(timeout: float) -> Any:
    """An httpx client whose transport enforces the :class:`CallBudget` of the current call
    (no keep-alive: each attempt has its own connection, which the watchdog can shut)."""
    hx = _httpx()

    class BoundedStream(hx.SyncByteStream):
        def __init__(self, inner: Any, budget: CallBudget) -> None:
            self.inner, self.budget, self.seen = inner, budget, 0

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                self.seen += len(chunk)
                if self.seen > self.budget.max_bytes:
                    raise self.budget.fail(
                        ResponseTooLarge(f"response body over {self.budget.max_bytes} bytes")
                    )
                self.budget.check()
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class BoundedTransport(hx.BaseTransport):
        def __init__(self) -> None:
            self.inner = hx.HTTPTransport(limits=hx.Limits(max_keepalive_connections=0))

        def handle_request(self, request: Any) -> Any:
            budget = _BUDGET.get()
            if budget is None:
                return self.inner.handle_request(request)
            budget.check()
            left = max(0.001, budget.deadline - time.monotonic())
            old = request.extensions.get("timeout") or {}
            request.extensions["timeout"] = {
                k: left if old.get(k) is None else min(float(old[k]), left)
                for k in ("connect", "read", "write", "pool")
            }
            prev = request.extensions.get("trace")

            def trace(name: str, info: dict[str, Any]) -> None:
                if name.endswith(("connect_tcp.complete", "start_tls.complete")):
                    sock = getattr(info.get("return_value"), "get_extra_info", lambda _k: None)(
                        "socket"
                    )
                    if sock is not None:
                        with budget.lock:
                            budget.sockets.append(sock)
                if prev is not None:
                    prev(name, info)

            request.extensions["trace"] = trace
            try:
                resp = self.inner.handle_request(request)
            except Exception:
                budget.check()  # cut by the watchdog: say so, not "connection reset"
                raise
            size = resp.headers.get("content-length")
            if size and size.isdigit() and int(size) > budget.max_bytes:
                resp.close()
                raise budget.fail(
                    ResponseTooLarge(
                        f"response of {size} bytes is over the {budget.max_bytes}-byte limit"
                    )
                )
            return hx.Response(
                resp.status_code,
                headers=resp.headers,
                stream=BoundedStream(resp.stream, budget),
                extensions=resp.extensions,
            )

    return hx.Client(transport=BoundedTransport(), timeout=timeout)


class SDKClient:
    """Blocking client for one model. Retries (429, 5xx, connection errors) with the SDK's
    exponential backoff, ``max_retries`` times, all within one total deadline ``timeout``
    (seconds; None: ``KBTOOL_AGENT_TIMEOUT`` or 120) and ``max_bytes`` per response."""

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
        timeout: float | None = None,
        max_retries: int = 3,
        max_bytes: int | None = None,
    ) -> None:
        env = os.environ if env is None else env
        env_timeout, env_bytes = bounds_from_env(env)
        self.timeout = float(timeout) if timeout is not None else env_timeout
        self.max_bytes = int(max_bytes) if max_bytes is not None else env_bytes
        if not self.timeout > 0 or not self.max_bytes > 0:
            raise ValueError("the provider timeout and max response size must be positive")
        self.model = model or env.get(self.MODEL_ENV) or self.DEFAULT_MODEL
        self.base_url = next((env[k] for k in self.BASE_URL_ENVS if env.get(k)), None)
        self._client = self._connect(
            api_key=env.get(self.KEY_ENV),
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=max_retries,
            http_client=bounded_http_client(self.timeout),
        )

    def _connect(self, **settings: Any) -> Any:
        raise NotImplementedError

    def _complete(self, system: str, user: str) -> Completion:
        raise NotImplementedError

    def complete(self, system: str, user: str) -> str:
        """The text of the model's answer to one user message (see :meth:`complete_full`)."""
        return self.complete_full(system, user).text

    def complete_full(self, system: str, user: str) -> Completion:
        """The model's answer to one user message with its token counts, within the call's
        bounds.

        Raises :class:`DeadlineExceeded` at the deadline (the SDK call is abandoned, its
        sockets shut, no further attempt made) and :class:`ResponseTooLarge` for a body over
        ``max_bytes``; other SDK errors propagate."""
        return self._bounded(lambda: self._complete(system, user))

    def _count(self, system: str, user: str) -> int | None:
        return None

    def count_tokens(self, system: str, user: str) -> int | None:
        """The provider's own count of the input tokens of one prompt (None: this provider
        has no counter here), within the same bounds as a call; SDK errors propagate."""
        return self._bounded(lambda: self._count(system, user))

    def _bounded(self, fn: Callable[[], Any]) -> Any:
        budget = CallBudget(time.monotonic() + self.timeout, self.max_bytes, self.timeout)
        box: dict[str, Any] = {}

        def run() -> None:
            _BUDGET.set(budget)
            try:
                box["answer"] = fn()
            except BaseException as e:  # handed to the caller below
                box["error"] = e

        worker = threading.Thread(target=run, name="kbtool-provider-call", daemon=True)
        worker.start()
        worker.join(max(0.0, budget.deadline - time.monotonic()))
        if worker.is_alive():  # the watchdog: the caller leaves now, the sockets close
            err = budget.fail(DeadlineExceeded(f"no complete answer within {self.timeout:g} s"))
            budget.abort()
            raise err
        if budget.error is not None:  # the SDK may have wrapped (and retried) our error
            raise budget.error
        if "error" in box:
            raise box["error"]
        return box["answer"]


def usage_count(usage: Any, key: str) -> int | None:
    """A token count from an SDK ``usage`` object (None when absent or not a count)."""
    v = getattr(usage, key, None) if usage is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
