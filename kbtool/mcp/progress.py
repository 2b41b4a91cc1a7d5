"""MCP progress notifications for long tool calls (``run_agent_pass``).

A ``tools/call`` whose ``params._meta.progressToken`` is set gets a sink bound for the
duration of the call (:func:`bind`, by the transport); a tool reports with :func:`report`
(a no-op when the client asked for no progress), which sends
``notifications/progress`` ``{progressToken, progress, total?, message?}``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

Sink = Callable[[float, "float | None", "str | None"], None]
_SINK: contextvars.ContextVar[Sink | None] = contextvars.ContextVar(
    "kbtool_mcp_progress", default=None
)


def token_of(msg: Any) -> Any:
    """The progress token of a JSON-RPC ``tools/call`` message, or None."""
    if not isinstance(msg, dict):
        return None
    meta = (msg.get("params") or {}).get("_meta") if isinstance(msg.get("params"), dict) else None
    tok = meta.get("progressToken") if isinstance(meta, dict) else None
    return tok if isinstance(tok, str | int) and not isinstance(tok, bool) else None


def notification(
    token: Any, progress: float, total: float | None, message: str | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message:
        params["message"] = message
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def bind(sink: Sink) -> contextvars.Token:
    return _SINK.set(sink)


def unbind(token: contextvars.Token) -> None:
    _SINK.reset(token)


def current() -> Sink | None:
    """The sink of the current tool call (capture it in the tool's thread and hand it to
    worker threads, which do not inherit the context)."""
    return _SINK.get()


def report(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Send one progress notification for the current tool call (if the client asked)."""
    sink = _SINK.get()
    if sink is not None:
        try:
            sink(progress, total, message)
        except Exception:  # a client gone mid-call: the pass's own check stops it
            pass
