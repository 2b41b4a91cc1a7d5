"""The Starlette adapter of :func:`kbtool.web.router.route` and the uvicorn server.

``create_app(db_path)`` is the embeddable factory; ``serve(db_path, host, port)`` blocks.
The app checks the Host header (DNS rebinding) and refuses cross-origin requests (any page
the user visits could otherwise make the browser send work here), bounds how many expensive
requests (``/api/diff``, ``/api/changelog``, the function list, the code routes) compute at
once and how many requests of any route are answered at once (``KBTOOL_WEB_MAX_REQUESTS``,
default 6: each holds a KB connection and its answer in memory); beyond either bound a request
waits briefly for a slot, then gets 503 with a JSON error and ``Retry-After``. It hands every
request to the pure router in a worker thread, and adds the security headers. It never reads
a request body.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from urllib.parse import parse_qs

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from kbtool.kb.db import open_ro
from kbtool.services import code as code_service
from kbtool.services import code_first, code_prepared, heap
from kbtool.web import list_routes, router
from kbtool.web.security import (
    API_CSP,
    COMMON_HEADERS,
    PAGE_CSP,
    HostCheck,
    cross_origin_refusal,
    is_loopback,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
#: expensive requests computing at once, and how long one more waits for a slot
EXPENSIVE_LIMIT = 2
EXPENSIVE_WAIT = 5.0
RETRY_AFTER = 2
#: versions ``kbtool serve`` prepares as it starts, newest first: the newest and the one before
#: it (the dashboard's default pair; the studio opened on either shows code without waiting)
PREPARED_AT_START = 2
#: the start-up preparations wait for this long without a request (at most START_QUIET_MAX)
START_QUIET = 0.5
START_QUIET_MAX = 10.0
#: a version opened by a page (its function list, or a first screen of code answered before
#: it was prepared) is prepared once no request has come or been answered for this long (at
#: most AHEAD_QUIET_MAX later): the page's next requests (a deep link's first lines, its
#: cross-references) are answered first, not beside a preparation holding the GIL
AHEAD_QUIET = 0.25
AHEAD_QUIET_MAX = 3.0
_VERSION_OPENED = re.compile(r"/api/versions/([0-9]{1,18})/functions\Z")
_PANEL_OPENED = re.compile(r"/api/history/[^/]+\Z")
_CODE_SHOWN = re.compile(r"/api/disasm/([0-9]{1,18})/[^/]+\Z")


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


#: requests of any route answered at once, and how long one more waits for a slot
REQUEST_LIMIT = max(1, int(_env_number("KBTOOL_WEB_MAX_REQUESTS", 6)))
REQUEST_WAIT = _env_number("KBTOOL_WEB_REQUEST_WAIT", 10.0)


class WorkLimit:
    """At most ``limit`` holders at once; loop-agnostic (a lock and a counter)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            if self.active >= self.limit:
                return False
            self.active += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.active -= 1

    async def acquire(self, wait: float) -> bool:
        """A slot within ``wait`` seconds (polling, so no thread is held while waiting)."""
        deadline = time.monotonic() + wait
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True


class _Adapter:
    """ASGI endpoint: every method and path goes to the router (which answers 404/405)."""

    def __init__(
        self,
        db_path: str,
        host_check: HostCheck,
        limit: WorkLimit,
        wait: float,
        requests: WorkLimit | None = None,
        requests_wait: float = REQUEST_WAIT,
    ) -> None:
        self.db_path = str(db_path)
        self.host_check = host_check
        self.limit = limit
        self.wait = wait
        self.requests = requests or WorkLimit(REQUEST_LIMIT)
        self.requests_wait = requests_wait
        # `kbtool serve`: a version's function list prepares it for code in the background
        self.prepare_ahead = False
        self.prepared: Future[None] | None = None  # the last such preparation
        self.panel_prepared: threading.Thread | None = None  # the last panel's (history)
        self.light = 0  # versions whose light modules were made at start (code_first)
        self._ahead: dict[int, Future[None]] = {}  # version -> its (quiet-deferred) preparation
        self._ahead_lock = threading.Lock()
        self.last_request = time.monotonic()  # when a request last came or was answered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        method = request.method.upper()
        host = request.headers.get("host")
        extra: dict[str, str] = {}
        refusal = None
        if not self.host_check(host):
            refusal = (
                "host not allowed: open the dashboard through its loopback address,"
                " or start `kbtool serve --allow-host NAME`"
            )
        else:
            refusal = cross_origin_refusal(
                request.headers, scope.get("scheme", "http"), host, scope["path"]
            )
        if refusal is not None:
            status, ctype, body = router.error(403, refusal)
        else:
            status, ctype, body = await self._route(scope, method, extra)
        headers = dict(COMMON_HEADERS)
        headers["content-security-policy"] = PAGE_CSP if ctype == router.HTML else API_CSP
        headers.update(extra)
        if status == 405:
            headers["allow"] = ", ".join(router.ALLOWED_METHODS)
        response = Response(body, status_code=status, media_type=ctype, headers=headers)
        if method == "HEAD":
            response.body = b""  # content-length stays that of the GET answer
        await response(scope, receive, send)

    async def _route(self, scope: Scope, method: str, extra: dict[str, str]) -> router.Response:
        if not await self.requests.acquire(self.requests_wait):
            extra["retry-after"] = str(RETRY_AFTER)
            return router.error(
                503,
                f"busy: {self.requests.limit} requests are already being answered;"
                f" retry in {RETRY_AFTER} s",
            )
        self.last_request = time.monotonic()
        try:
            return await self._bounded(scope, method, extra)
        finally:
            self.requests.release()
            self.last_request = time.monotonic()

    async def _bounded(self, scope: Scope, method: str, extra: dict[str, str]) -> router.Response:
        path = scope["path"]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        expensive = method in router.ALLOWED_METHODS and router.is_expensive(path, query)
        if expensive and not await self.limit.acquire(self.wait):
            extra["retry-after"] = str(RETRY_AFTER)
            return router.error(
                503,
                f"busy: {self.limit.limit} expensive requests (diffs, function lists, code)"
                f" are already being computed; retry in {RETRY_AFTER} s",
            )
        try:
            if path in router.PAGES or path.startswith(router.STATIC_PREFIX):
                # kept bytes: no hop; a page being loaded counts as a request (its own API
                # requests follow): background preparations wait, and start after it
                with code_prepared.answering():
                    return router.route(self.db_path, path, query, method)
            answer = await run_in_threadpool(_answer, self.db_path, path, query, method)
            if self.prepare_ahead and answer[0] == 200 and _PANEL_OPENED.match(path):
                self._prepare_for_panel(query)  # its code is asked for one round trip later
            opened = _VERSION_OPENED.match(path) if self.prepare_ahead else None
            if opened is None and self.prepare_ahead:  # a first screen answered before the
                # version was prepared (code_first): prepared now, for the next windows
                opened = _CODE_SHOWN.match(path)
            if opened is not None and answer[0] == 200:  # its code is what is read next
                self.prepared = self._prepare_ahead(int(opened.group(1)))
            return answer
        finally:
            if expensive:
                self.limit.release()
                heap.settle()  # what it cached (a diff, a prepared version) is kept: frozen

    def _prepare_ahead(self, version_id: int) -> Future[None]:
        """``prepare_soon(version_id)`` once the requests go quiet (:data:`AHEAD_QUIET`, at
        most :data:`AHEAD_QUIET_MAX` later): a page's function list is answered just before
        its other first requests (a deep link's first lines, the panel's cross-references),
        which a preparation started at once slowed several-fold (it holds the GIL for tens
        of ms at a time). A code request meanwhile prepares the version itself, or answers
        without it (a first screen of code from the kept preparation, a huge function's
        kept C). One waiter per version; once that one has prepared it, asked at once."""
        with self._ahead_lock:
            pending = self._ahead.get(version_id)
            if pending is not None and not pending.done():
                return pending
            if pending is not None and pending.exception() is None:
                return code_service.prepare_soon(self.db_path, version_id)  # done: a no-op
            done: Future[None] = Future()
            self._ahead[version_id] = done
            while len(self._ahead) > 8:
                del self._ahead[next(iter(self._ahead))]

        def run() -> None:
            try:
                _until_quiet(self, AHEAD_QUIET, AHEAD_QUIET_MAX)
                code_service.prepare_soon(self.db_path, version_id).add_done_callback(
                    lambda f: _settle(done, f)
                )
            except BaseException as exc:  # noqa: BLE001 - told through the future
                done.set_exception(exc)

        threading.Thread(target=run, daemon=True, name="kbtool-ahead").start()
        return done

    def _prepare_for_panel(self, query: dict) -> None:
        """A function panel opened on version V (``/api/history/SID?version=V``, answered):
        its code is asked for next, one round trip later. V is prepared now, on a thread of its own
        that counts as a request (a start-up preparation of another version waits; the code
        request, when it comes, waits for this one instead of preparing V again)."""
        raw = (query.get("version") or [""])[0]
        if not raw.isdigit() or len(raw) > 18:
            return
        self.panel_prepared = threading.Thread(
            target=_prepare_now, args=(self.db_path, int(raw)), daemon=True, name="kbtool-panel"
        )
        self.panel_prepared.start()


def _prepare_when_quiet(adapter: _Adapter) -> Future[None]:
    """``prepare_latest_soon`` once no request has come or been answered for
    :data:`START_QUIET` s (at most :data:`START_QUIET_MAX` s after start): a page opened as
    the server starts loads with nothing beside it (its own code requests prepare what they
    show), one opened a moment later finds the newest version ready. The returned future is
    done when the preparations are."""
    done: Future[None] = Future()

    def run() -> None:
        _until_quiet(adapter, START_QUIET, START_QUIET_MAX)
        inner = code_service.prepare_latest_soon(adapter.db_path, PREPARED_AT_START)
        inner.add_done_callback(lambda f: _settle(done, f))

    threading.Thread(target=run, daemon=True, name="kbtool-start").start()
    return done


def _until_quiet(adapter: _Adapter, quiet: float, at_most: float) -> None:
    """Until no request is being answered and none has come or been answered for ``quiet``
    seconds (at most ``at_most`` seconds)."""
    end = time.monotonic() + at_most
    while time.monotonic() < end and (
        adapter.requests.active or time.monotonic() - adapter.last_request < quiet
    ):
        time.sleep(0.02)


def _settle(done: Future[None], f: Future[None]) -> None:
    error = f.exception()
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def _prepare_now(db_path: str, version_id: int) -> None:
    """The panel's version made ready for its first screen of code: its light module
    (:mod:`kbtool.services.code_first`, from the kept preparation: ~50 ms), else the
    version prepared (the first screen's answer prepares it in the background after)."""
    try:
        conn = open_ro(db_path)
    except Exception:  # noqa: BLE001 - the code request itself says why
        return
    try:
        with code_prepared.answering():
            if code_prepared.is_cached(conn, version_id):
                return
            if code_first.light_module(conn, version_id) is None:
                code_prepared.code_module(conn, version_id)
    except Exception:  # noqa: BLE001 - likewise (an unknown version: a 404 there)
        pass
    finally:
        conn.close()


def _answer(db_path: str, path: str, query: dict, method: str) -> router.Response:
    """:func:`router.route` on a worker thread; a version being prepared in the background
    (at start, or ahead of a page) waits meanwhile: the request is what a person waits for."""
    with code_prepared.answering():
        return router.route(db_path, path, query, method)


def create_app(
    db_path: str,
    *,
    host: str = DEFAULT_HOST,
    allow_hosts: Iterable[str] = (),
    expensive_limit: int = EXPENSIVE_LIMIT,
    expensive_wait: float = EXPENSIVE_WAIT,
    request_limit: int | None = None,
    request_wait: float | None = None,
    prepare_ahead: bool = False,
    prepare_at_start: bool = False,
) -> Starlette:
    """The dashboard and JSON API as a Starlette app serving ``db_path`` read-only.

    ``host`` is the address the server is bound to (it decides which Host headers are
    answered); ``allow_hosts`` adds names, e.g. a reverse proxy's. At most
    ``expensive_limit`` expensive requests compute at once; one more waits up to
    ``expensive_wait`` seconds for a slot, then gets 503 with ``Retry-After``. Likewise at
    most ``request_limit`` requests of any route (default :data:`REQUEST_LIMIT`,
    ``KBTOOL_WEB_MAX_REQUESTS``) are answered at once, one more waiting up to ``request_wait``
    seconds (:data:`REQUEST_WAIT`, ``KBTOOL_WEB_REQUEST_WAIT``). ``prepare_ahead``
    (``kbtool serve``): a version's function list (what a page opens first) prepares that
    version for the code routes on a background thread, so the first code page does not
    parse the module (``app.state.adapter.prepared``: the last preparation).
    ``prepare_at_start`` (``kbtool serve``): the function lists (whole and as heatmap
    cells) of the newest version and the one before it (:data:`PREPARED_AT_START`) are
    encoded and kept before this returns (``list_routes.warm``, ~0.1 s on ffmpeg), so are
    their light modules for the first screens of code (``code_first.warm``, ~0.1 s a
    version on ffmpeg; none without a kept preparation), and both
    versions are prepared for the code routes at once, as the TUI and the MCP server do: a
    page opened a moment later on either shows code without waiting (a request preparing
    another version meanwhile goes first).
    """
    adapter = _Adapter(
        db_path,
        HostCheck(host, allow_hosts),
        WorkLimit(expensive_limit),
        expensive_wait,
        WorkLimit(REQUEST_LIMIT if request_limit is None else max(1, request_limit)),
        REQUEST_WAIT if request_wait is None else request_wait,
    )
    adapter.prepare_ahead = prepare_ahead
    if prepare_at_start:
        # the function lists the dashboard opens first, encoded before the first request
        list_routes.warm(adapter.db_path, PREPARED_AT_START)
        # and their first screens of code, from the kept preparations (code_first: ~0.1 s
        # a version on ffmpeg): a page opened at once shows any function's first lines
        adapter.light = code_first.warm(adapter.db_path, PREPARED_AT_START)
        adapter.prepared = _prepare_when_quiet(adapter)
    app = Starlette(routes=[Route("/{path:path}", adapter)])
    app.state.adapter = adapter
    return app


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else ("::1" if host == "::" else host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; a clear ``OSError`` message when the port is taken.

    The socket is created with ``IPPROTO_TCP`` (not protocol 0, as ``socket.create_server``
    does) and ``TCP_NODELAY``: asyncio only sets ``TCP_NODELAY`` on accepted sockets whose
    protocol is ``IPPROTO_TCP``, and without it Nagle's algorithm meets the client's delayed
    ACK on keep-alive connections (about 40 ms per request instead of 2 ms).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise OSError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (pick another port with --port)"
        ) from None
    sock.set_inheritable(True)
    return sock


def serve(
    db_path: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_hosts: Iterable[str] = (),
    echo=None,
) -> None:
    """Serve the dashboard and API on ``host:port`` until interrupted; prints the URL once."""

    echo = echo or (lambda msg: print(msg, flush=True))
    open_ro(db_path).close()  # fail fast on a missing or foreign file
    heap.enable()  # a long-lived process: no full collection walks its caches (services.heap)
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
    app = create_app(
        db_path, host=host, allow_hosts=allow_hosts, prepare_ahead=True, prepare_at_start=True
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    echo(f"kbtool dashboard on {url_for(host, port)} (KB {db_path}; Ctrl-C to stop)")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
