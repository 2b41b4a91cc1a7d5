"""The one module that knows which ``mcp`` SDK is installed (1.2 and later, 2.x).

What differs between the SDK lines, and how kbtool irons it out:

- the server class: ``mcp.server.MCPServer`` (2.x) vs ``mcp.server.fastmcp.FastMCP`` (1.x);
  the tool-error class moved with it (:func:`load` finds both);
- results: every SDK turns a returned ``str`` into exactly one text block, but lists are
  split into one block per item (all 1.x, and 2.x's unstructured content), ``None`` into
  no block at all, and 1.10+ adds structured output derived from the return annotation.
  kbtool's tools therefore always return one ``str`` (JSON, or the plain-text export) and
  are registered without an output schema (``structured_output=False`` where it exists),
  so every client sees the same single text block on every SDK version;
- tool annotations (``readOnlyHint``) and server ``instructions`` exist only in newer
  SDKs: passed when supported, skipped otherwise;
- sync tools run on worker threads in 2.x and inline on the event loop in 1.x; a call
  borrows a read connection no other call holds (:mod:`kbtool.mcp.reads`), so both are safe.

Importing this module never imports ``mcp``; :func:`load` does, and turns a missing or
broken SDK into a ``RuntimeError`` carrying an install hint.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MIN_VERSION = "1.2"
INSTALL_HINT = (
    f"`kbtool mcp` needs the mcp package, {MIN_VERSION} or later: pip install 'mcp>={MIN_VERSION}'"
)


@dataclass(frozen=True)
class SDK:
    """The pieces of the installed SDK that kbtool uses."""

    version: str
    server_class: type
    tool_error: type[Exception]
    tool_annotations: type | None

    def new_server(self, name: str, *, instructions: str, log_level: str = "WARNING") -> Any:
        params = inspect.signature(self.server_class.__init__).parameters
        kwargs: dict[str, Any] = {"log_level": log_level}
        if "instructions" in params:
            kwargs["instructions"] = instructions
        return self.server_class(name, **kwargs)

    def add_tool(
        self,
        server: Any,
        fn: Callable[..., str],
        *,
        read_only: bool,
        title: str | None = None,
        idempotent: bool | None = None,
    ) -> None:
        """Register ``fn`` (returns ``str``) under its own name, docstring as description;
        ``title`` and the spec's annotations where the SDK supports them."""
        params = inspect.signature(server.tool).parameters
        kwargs: dict[str, Any] = {"name": fn.__name__, "description": inspect.getdoc(fn) or ""}
        if "structured_output" in params:
            kwargs["structured_output"] = False
        if title and "title" in params:
            kwargs["title"] = title
        if "annotations" in params and self.tool_annotations is not None:
            idem = read_only if idempotent is None else idempotent
            kwargs["annotations"] = _annotations(self.tool_annotations, read_only, idem, title)
        server.tool(**kwargs)(fn)


def _annotations(cls: type, read_only: bool, idempotent: bool, title: str | None) -> Any:
    # 1.x models take camelCase field names, 2.x snake_case (with camelCase aliases):
    # validating a dict by alias works on both.
    fields: dict[str, Any] = {
        "readOnlyHint": read_only,
        "destructiveHint": False,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }
    if title:
        fields["title"] = title
    return cls.model_validate(fields)


def load() -> SDK:
    """The installed SDK, or ``RuntimeError`` with an actionable install hint."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        sdk_version = version("mcp")
    except PackageNotFoundError:
        sdk_version = None
    try:
        server_class, tool_error = _import_server()
    except ImportError as exc:
        if sdk_version is None or getattr(exc, "name", None) == "mcp":
            raise RuntimeError("the mcp package is not installed; " + INSTALL_HINT) from None
        raise RuntimeError(
            f"the installed mcp package ({sdk_version}) fails to import ({exc}); "
            "upgrade it (pip install -U mcp) or pin a matching pydantic"
        ) from None
    try:
        from mcp.types import ToolAnnotations as annotations
    except ImportError:  # older SDKs have no tool annotations
        annotations = None
    return SDK(sdk_version or "unknown", server_class, tool_error, annotations)


def _import_server() -> tuple[type, type[Exception]]:
    try:  # 2.x
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ImportError as exc:
        if getattr(exc, "name", None) == "mcp":
            raise
        first = exc
    try:  # 1.x
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError

        return FastMCP, ToolError
    except ImportError as exc:
        # report the more telling failure: a missing 2.x module just means "not 2.x"
        raise (exc if isinstance(first, ModuleNotFoundError) else first) from None
