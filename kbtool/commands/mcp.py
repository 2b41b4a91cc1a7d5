"""``kbtool mcp``: serve the KB to an MCP client over stdio."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kbtool.commands.common import DbOption, db_path, err_console, fail

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)


def mcp_cmd(
    db: DbOption = None,
    log_level: Annotated[str, typer.Option(
        "--log-level", help=f"Server log level on stderr: {', '.join(LOG_LEVELS)}.",
        case_sensitive=False)] = "WARNING",
) -> None:
    """Serve the KB as MCP tools over stdio (run by an MCP client, not by hand).

    stdout carries only the protocol; logs go to stderr.
    """
    level = log_level.upper()
    if level not in LOG_LEVELS:
        fail(f"unknown log level {log_level!r}; one of {', '.join(LOG_LEVELS)}")
    from kbtool.mcp.server import check_kb

    path = db_path(db)
    check_kb(path)  # a missing or foreign KB fails before the note below
    if sys.stdin.isatty():
        err_console.print("kbtool mcp speaks MCP on stdin/stdout and is meant to be started by an "
                          "MCP client (see the README); waiting for one. Ctrl-C quits.")
    try:
        if use_sdk():
            from kbtool.mcp.server import build_server

            build_server(path, log_level=level).run()
        else:
            from kbtool.mcp.wire import serve_stdio

            serve_stdio(path, log_level=level)
    except RuntimeError as exc:  # pydantic or the SDK is missing or unusable
        fail(str(exc))


def use_sdk() -> bool:
    """``KBTOOL_MCP_SDK=1``: serve with the MCP SDK's server instead of kbtool's own stdio
    loop (:mod:`kbtool.mcp.wire`, the default: same tools and answers, ~1 s faster start)."""
    return os.environ.get("KBTOOL_MCP_SDK", "") not in ("", "0")
