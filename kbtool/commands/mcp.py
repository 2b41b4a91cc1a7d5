"""``kbtool mcp``: serve the KB to an MCP client over stdio; ``--print-config CLIENT`` prints
the client's config for this install and KB (absolute paths)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from kbtool.commands.common import DbOption, db_path, err_console, fail

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: client -> where its config goes (shown on stderr with the printed config)
CLIENTS = {
    "claude": "Claude Desktop: claude_desktop_config.json (Settings > Developer > Edit Config)",
    "vscode": "VS Code: .vscode/mcp.json in the workspace",
    "cursor": "Cursor: .cursor/mcp.json in the project, or ~/.cursor/mcp.json",
    "claude-code": "Claude Code: run this line in a shell",
}


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)


def mcp_cmd(
    db: DbOption = None,
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            help=f"Server log level on stderr: {', '.join(LOG_LEVELS)}.",
            case_sensitive=False,
        ),
    ] = "WARNING",
    print_config: Annotated[
        str | None,
        typer.Option(
            "--print-config",
            metavar="CLIENT",
            help=f"Print the config that registers this server with CLIENT ({', '.join(CLIENTS)}): "
            "absolute paths of this kbtool and of the KB; then exit.",
        ),
    ] = None,
) -> None:
    """Serve the KB as MCP tools over stdio (run by an MCP client, not by hand).

    stdout carries only the protocol; logs go to stderr.
    """
    if print_config is not None:
        _print_config(print_config.lower(), db)
        return
    level = log_level.upper()
    if level not in LOG_LEVELS:
        fail(f"unknown log level {log_level!r}; one of {', '.join(LOG_LEVELS)}")
    from kbtool.mcp.server import check_kb

    path = db_path(db)
    check_kb(path)  # a missing or foreign KB fails before the note below
    if sys.stdin.isatty():
        err_console.print(
            "kbtool mcp speaks MCP on stdin/stdout and is meant to be started by an "
            "MCP client (see the README); waiting for one. Ctrl-C quits."
        )
    from kbtool.mcp.server import build_server

    try:
        server = build_server(path, log_level=level)
    except RuntimeError as exc:  # the SDK is missing or unusable: its install hint
        fail(str(exc))
    server.run()


def server_command() -> list[str]:
    """The absolute command line that starts this kbtool: its ``kbtool`` script (beside this
    interpreter, else the first on PATH), else this interpreter with ``-m kbtool``."""
    beside = Path(sys.executable).parent / ("kbtool.exe" if os.name == "nt" else "kbtool")
    script = str(beside) if beside.is_file() else shutil.which("kbtool")
    if script:
        return [str(Path(script).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "kbtool"]


def client_config(client: str, kb_path: str) -> dict | str:
    """The config that registers ``kbtool mcp --db KB`` with ``client`` (a dict to print as
    JSON; for ``claude-code`` the shell line). ValueError for an unknown client."""
    if client not in CLIENTS:
        raise ValueError(f"unknown MCP client {client!r}; one of {', '.join(CLIENTS)}")
    command, *pre = server_command()
    args = [*pre, "mcp", "--db", kb_path]
    if client == "vscode":
        return {"servers": {"kbtool": {"type": "stdio", "command": command, "args": args}}}
    if client == "claude-code":
        return shlex.join(["claude", "mcp", "add", "kbtool", "--", command, *args])
    return {"mcpServers": {"kbtool": {"command": command, "args": args}}}


def _print_config(client: str, db: str | None) -> None:
    kb = Path(db_path(db)).expanduser().absolute()
    try:
        config = client_config(client, str(kb))
    except ValueError as exc:
        fail(str(exc))
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    sys.stdout.write(text + "\n")
    err_console.print(f"# {CLIENTS[client]}", markup=False, highlight=False, soft_wrap=True)
    if not kb.is_file():
        err_console.print(
            f"# note: {kb} does not exist yet (kbtool demo, or kbtool ingest "
            "FILE.wasm, creates it)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
