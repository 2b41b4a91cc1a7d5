"""``kbtool mcp``: serve the KB to an MCP client over stdio."""

from __future__ import annotations

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
    from kbtool.mcp.server import build_server

    try:
        server = build_server(db_path(db), log_level=level)
    except RuntimeError as exc:  # the SDK is missing or unusable
        fail(str(exc))
    if sys.stdin.isatty():
        err_console.print("kbtool mcp speaks MCP on stdin/stdout and is meant to be started by an "
                          "MCP client (see the README); waiting for one. Ctrl-C quits.")
    server.run()
