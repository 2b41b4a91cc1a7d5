"""``kbtool serve``: the web dashboard and read-only JSON API on uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtool.commands.common import DbOption, db_path, err_console


def register(app: typer.Typer) -> None:
    app.command()(serve)


def serve(
    db: DbOption = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to bind. Anything but loopback exposes the KB with NO authentication.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="TCP port (0 picks a free one).")] = 8787,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="Also answer requests whose Host header names H (repeatable); "
                             "others are refused against DNS rebinding.")] = None,
) -> None:
    """Serve the dashboard and its read-only JSON API (default http://127.0.0.1:8787/)."""
    from kbtool.web.app import serve as run

    path = db_path(db)
    try:
        run(path, host=host, port=port, allow_hosts=allow_host or ())
    except KeyboardInterrupt:
        err_console.print("stopped")
