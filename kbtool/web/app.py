"""The Starlette adapter of :func:`kbtool.web.router.route` and the uvicorn server.

``create_app(db_path)`` is the embeddable factory; ``serve(db_path, host, port)`` blocks.
The app checks the Host header (DNS rebinding), hands every request to the pure router in a
worker thread, and adds the security headers (a hash-based Content-Security-Policy for the
page). It never reads a request body.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterable
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from kbtool.web import router
from kbtool.web.security import API_CSP, COMMON_HEADERS, HostCheck, is_loopback, page_csp

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


class _Adapter:
    """ASGI endpoint: every method and path goes to the router (which answers 404/405)."""

    def __init__(self, db_path: str, host_check: HostCheck) -> None:
        self.db_path = str(db_path)
        self.host_check = host_check
        self.page_csp = page_csp(router.dashboard_html())  # hashes computed once, at startup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        method = request.method.upper()
        if not self.host_check(request.headers.get("host")):
            status, ctype, body = router.error(
                403, "host not allowed: open the dashboard through its loopback address,"
                     " or start `kbtool serve --allow-host NAME`")
        else:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"),
                             keep_blank_values=True)
            status, ctype, body = await run_in_threadpool(
                router.route, self.db_path, scope["path"], query, method)
        headers = dict(COMMON_HEADERS)
        headers["content-security-policy"] = self.page_csp if ctype == router.HTML else API_CSP
        if status == 405:
            headers["allow"] = ", ".join(router.ALLOWED_METHODS)
        response = Response(body, status_code=status, media_type=ctype, headers=headers)
        if method == "HEAD":
            response.body = b""  # content-length stays that of the GET answer
        await response(scope, receive, send)


def create_app(db_path: str, *, host: str = DEFAULT_HOST, allow_hosts: Iterable[str] = ()) -> Starlette:
    """The dashboard and JSON API as a Starlette app serving ``db_path`` read-only.

    ``host`` is the address the server is bound to (it decides which Host headers are
    answered); ``allow_hosts`` adds names, e.g. a reverse proxy's.
    """
    adapter = _Adapter(db_path, HostCheck(host, allow_hosts))
    return Starlette(routes=[Route("/{path:path}", adapter)])


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else ("::1" if host == "::" else host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; a clear ``OSError`` message when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, reuse_port=False, backlog=2048)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"
                      " (pick another port with --port)") from None
    sock.set_inheritable(True)
    return sock


def serve(db_path: str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
          allow_hosts: Iterable[str] = (), echo=None) -> None:
    """Serve the dashboard and API on ``host:port`` until interrupted; prints the URL once."""
    import uvicorn

    from kbtool.kb.db import open_ro

    echo = echo or (lambda msg: print(msg, flush=True))
    open_ro(db_path).close()  # fail fast on a missing or foreign file
    if not is_loopback(host):
        sys.stderr.write(
            "\n"
            "!!! WARNING: binding to " + (host or "all interfaces") + ", not loopback.\n"
            "!!! The dashboard has NO authentication: anyone who can reach this address\n"
            "!!! can read the whole KB. Serve on 127.0.0.1 unless you mean it.\n\n"
        )
        sys.stderr.flush()
    sock = bind(host, port)
    port = sock.getsockname()[1]
    app = create_app(db_path, host=host, allow_hosts=allow_hosts)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            server_header=False, date_header=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    echo(f"kbtool dashboard on {url_for(host, port)} (KB {db_path}; Ctrl-C to stop)")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
