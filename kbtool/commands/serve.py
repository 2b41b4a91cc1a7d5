"""``kbtool serve``: the web dashboard and read-only JSON API on uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtool.commands.common import DbOption, db_path, err_console


def register(app: typer.Typer) -> None:
    app.command()(serve)


HostOption = Annotated[
    str,
    typer.Option(
        "--host",
        metavar="ADDR",
        help="Address to bind. Anything but loopback exposes the KB with NO authentication.",
    ),
]
PortOption = Annotated[
    int,
    typer.Option("--port", min=0, max=65535, metavar="PORT", help="TCP port (0 picks a free one)."),
]
AllowHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        metavar="HOST",
        help="Also answer requests whose Host header names HOST (repeatable); "
        "others are refused against DNS rebinding.",
    ),
]


def serve(
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8787,
    allow_host: AllowHostOption = None,
) -> None:
    """Serve the dashboard and its read-only JSON API (default http://127.0.0.1:8787/)."""
    from kbtool.web.app import serve as run

    try:
        run(db_path(db), host=host, port=port, allow_hosts=allow_host or ())
    except KeyboardInterrupt:
        err_console.print("stopped")
