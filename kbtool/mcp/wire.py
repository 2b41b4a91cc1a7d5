"""``kbtool mcp``'s own stdio transport: MCP's JSON-RPC lines, served without the SDK.

Why: importing the ``mcp`` SDK 2.x takes about a second (its package ``__init__`` loads the
client, the HTTP transports and two protocol revisions' types, whatever module is asked
for), more than the whole start-up budget. Serving stdio needs much less: JSON lines in and
out, the handshake, ``tools/list`` and ``tools/call``. This module does that with the
standard library and pydantic, which validates arguments with the same models the SDK
would build (:func:`_argument_model` follows the SDK's ``func_metadata``), so the tool
list, the validation errors and the answers are those of the SDK's server
(:func:`kbtool.mcp.server.build_server`); ``tests/test_mcp_wire.py`` compares the two.

What it speaks: the ``initialize`` handshake (protocol revisions 2024-11-05 to 2025-11-25;
the client's when known, else the newest), ``ping``, ``tools/list`` (one page),
``tools/call`` (on worker threads, answers in completion order), empty
``resources/list``, ``resources/templates/list`` and ``prompts/list`` (the capabilities the
SDK's server announces), notifications (ignored) and ``Method not found`` for the rest.
Bounds (:mod:`kbtool.mcp.linebound`): a line longer than ``KBTOOL_MCP_MAX_LINE`` (8 MiB) is
discarded as it is read and one nested deeper than ``KBTOOL_MCP_MAX_DEPTH`` (64) is not
parsed; each is answered with a JSON-RPC error (-32600) and the server keeps serving.
stdout carries only the protocol: the real stdout is kept for it and file descriptor 1
is pointed at stderr, so a stray ``print`` in a tool cannot corrupt the stream.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from kbtool.mcp import linebound, progress
from kbtool.mcp.server import INSTRUCTIONS, SERVER_NAME, ToolSpec, check_kb, tool_specs

log = logging.getLogger("kbtool.mcp")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "tools": {"listChanged": False},
}
EMPTY_LISTS = {
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
    "prompts/list": {"prompts": []},
}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
WORKERS = 8  # concurrent tool calls


class ToolFailure(Exception):
    """A tool's one-line error; answered as an ``isError`` result."""


class Tool:
    """One tool: its description for ``tools/list`` and its call, the argument model built
    on first use (so the first answer does not wait for 22 models)."""

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self._model: Any = None
        self._description: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _argument_model(self.spec.fn)
            return self._model

    def describe(self) -> dict[str, Any]:
        """The tool's ``tools/list`` entry (built once)."""
        if self._description is None:
            self._description = self._describe()
        return self._description

    def _describe(self) -> dict[str, Any]:
        spec = self.spec
        out: dict[str, Any] = {"name": spec.name}
        if spec.title:
            out["title"] = spec.title
        out["description"] = inspect.getdoc(spec.fn) or ""
        out["inputSchema"] = self.model.model_json_schema(by_alias=True)
        annotations: dict[str, Any] = {"title": spec.title} if spec.title else {}
        annotations.update(
            readOnlyHint=spec.read_only,
            destructiveHint=False,
            idempotentHint=spec.idempotent,
            openWorldHint=False,
        )
        out["annotations"] = annotations
        return out

    def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        try:
            parsed = self.model.model_validate(_pre_parse_json(self.model, arguments))
            text = self.spec.fn(**_one_level(parsed))
        except (ToolFailure, ValidationError) as exc:
            return _error_result(f"Error executing tool {self.spec.name}: {exc}")
        return {"content": [{"type": "text", "text": text}], "isError": False}


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _argument_model(fn: Callable[..., Any]) -> Any:
    """The pydantic model of ``fn``'s parameters, built as the SDK's ``func_metadata`` does
    (same model name, fields, aliases and config), hence the same JSON schema."""
    from pydantic import BaseModel, ConfigDict, Field, create_model

    class ArgModelBase(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)

    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        annotation = param.annotation if param.annotation is not inspect.Parameter.empty else Any
        name, kwargs = param.name, {}
        if hasattr(BaseModel, name) and callable(getattr(BaseModel, name)):
            kwargs["alias"], name = name, f"field_{name}"
        typ = Annotated[(annotation, Field(**kwargs))]
        fields[name] = typ if param.default is inspect.Parameter.empty else (typ, param.default)
    return create_model(f"{fn.__name__}Arguments", __base__=ArgModelBase, **fields)


def _pre_parse_json(model: Any, data: dict[str, Any]) -> dict[str, Any]:
    """The SDK's leniency, kept: a list or object argument sent as a JSON string (some
    clients do) is parsed; scalars are left for validation to judge."""
    keys = {}
    for name, info in model.model_fields.items():
        keys[name] = info
        if info.alias:
            keys[info.alias] = info
    out = dict(data)
    for key, value in data.items():
        info = keys.get(key)
        if info is None or not isinstance(value, str) or info.annotation is str:
            continue
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if not isinstance(parsed, str | int | float):
            out[key] = parsed
    return out


def _one_level(parsed: Any) -> dict[str, Any]:
    """The validated fields as keyword arguments (nested models stay models)."""
    return {
        (info.alias or name): getattr(parsed, name)
        for name, info in type(parsed).model_fields.items()
    }


class WireServer:
    """The tools of :func:`kbtool.mcp.server.tool_specs` behind MCP's JSON-RPC methods."""

    def __init__(self, db_path: str | Path) -> None:
        path = check_kb(db_path)
        self.tools = {spec.name: Tool(spec) for spec in tool_specs(path, ToolFailure)}
        self.path = path

    def handle(self, msg: Any) -> dict[str, Any] | None:
        """The response to one parsed message (``None`` for notifications and responses)."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return _error(
                msg.get("id") if isinstance(msg, dict) else None, INVALID_REQUEST, "Invalid Request"
            )
        method, rid = msg.get("method"), msg.get("id")
        if "id" not in msg or not isinstance(method, str):
            return None  # a notification, or a response to a request we never send
        params = msg.get("params") or {}
        if not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, "Invalid params")
        try:
            result = self._dispatch(method, params)
        except _RpcError as exc:
            return _error(rid, exc.code, exc.message, exc.data)
        except Exception:
            log.exception("request %s failed", method)
            return _error(rid, -32603, "Internal error")
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise _RpcError(INVALID_PARAMS, "Invalid params")
            tool = self.tools.get(name)
            return tool.call(arguments) if tool else _error_result(f"Unknown tool: {name}")
        if method == "tools/list":
            return {"tools": [t.describe() for t in self.tools.values()]}
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
                "capabilities": CAPABILITIES,
                "serverInfo": {"name": SERVER_NAME, "version": _kbtool_version()},
                "instructions": INSTRUCTIONS,
            }
        if method == "ping":
            return {}
        if method in EMPTY_LISTS:
            return EMPTY_LISTS[method]
        raise _RpcError(METHOD_NOT_FOUND, "Method not found", method)

    def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        """Answer requests from ``stdin`` until it closes; tool calls run on worker threads."""
        lock = threading.Lock()

        def send(reply: dict[str, Any] | None) -> None:
            if reply is None:
                return
            data = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            with lock:
                stdout.write(data)
                stdout.flush()

        def answer(msg: Any) -> None:
            token = progress.token_of(msg)  # notifications/progress for this call
            bound = progress.bind(lambda p, t, m: send(progress.notification(token, p, t, m))
                                  ) if token is not None else None
            try:
                send(self.handle(msg))
            except Exception:  # a broken pipe: the client is gone
                log.exception("cannot answer")
            finally:
                if bound is not None:
                    progress.unbind(bound)

        with ThreadPoolExecutor(WORKERS, thread_name_prefix="kbtool-mcp") as pool:
            for line in linebound.bounded_lines(stdin):
                refused = linebound.check(line)
                if refused is not None:  # too long or too deep: answered, never parsed
                    with lock:
                        stdout.write(refused)
                        stdout.flush()
                    continue
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except (ValueError, RecursionError):
                    send(_error(None, PARSE_ERROR, "Parse error"))
                    continue
                if isinstance(msg, dict) and msg.get("method") == "tools/call":
                    pool.submit(answer, msg)
                else:
                    answer(msg)


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def _kbtool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kbtool")
    except PackageNotFoundError:
        return ""


def serve_stdio(
    db_path: str | Path, *, log_level: str = "WARNING", server: WireServer | None = None
) -> None:
    """Serve the KB at ``db_path`` (or the ready ``server``) on this process's stdin/stdout
    until stdin closes. Raises before reading anything when the KB is missing or not a KB,
    or pydantic is missing (``RuntimeError`` with an install hint)."""
    logging.basicConfig(
        stream=sys.stderr, level=log_level, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        import pydantic  # noqa: F401  (the argument models)
    except ImportError:
        from kbtool.mcp.compat import INSTALL_HINT

        raise RuntimeError("pydantic is not installed; " + INSTALL_HINT) from None
    server = server or WireServer(db_path)
    log.info("kbtool MCP server on %s", server.path)
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # fd 1 now leads to stderr
    sys.stdout = sys.stderr
    try:
        server.serve(sys.stdin.buffer, protocol)
    finally:
        protocol.close()
