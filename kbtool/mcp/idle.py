"""Background work of ``kbtool mcp`` that waits for a quiet moment between requests.

A version's code preparation (:func:`kbtool.services.code.prepare_soon`, ~150 ms of Python
on ffmpeg even when read back from disk) run while requests are served takes the GIL from
them: every hop of a request (stdin, the SDK's worker threads, stdout) waits for it, and a
6 ms call took 50-100 ms. So the work :func:`when_quiet` is given starts only when no
request has been in flight for :data:`QUIET` seconds (an agent thinks for seconds between
calls: the work is done by then), and the stdio guard (:mod:`kbtool.mcp.linebound`) tells
:data:`ACTIVITY` how many requests are in flight. A client that calls back to back never
waits for it: a code tool then prepares its version itself (as on a first call). While the
work runs, the interpreter switches threads more often (:data:`SWITCH`) so that a request
arriving meanwhile waits less for the GIL.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable

log = logging.getLogger("kbtool.mcp")


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, "")) / 1000
    except ValueError:
        return default
    return value if value >= 0 else default


#: how long no request must have been in flight before background work starts
#: (``KBTOOL_MCP_QUIET_MS``, default 100)
QUIET = _env_seconds("KBTOOL_MCP_QUIET_MS", 0.1)
#: the interpreter's thread switch interval while background work runs (default 5 ms)
SWITCH = 0.0005


class Activity:
    """How many requests are in flight, and since when none is (monotonic seconds)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.in_flight = 0
        self.quiet_since = time.monotonic()
        self._jobs: dict[Hashable, Callable[[], object]] = {}
        self._worker: threading.Thread | None = None

    def set_in_flight(self, count: int) -> None:
        """The number of requests passed on to the server and not answered yet."""
        with self.cond:
            if count == 0 and self.in_flight:
                self.quiet_since = time.monotonic()
            self.in_flight = count
            self.cond.notify_all()

    def when_quiet(self, key: Hashable, job: Callable[[], object]) -> None:
        """Run ``job`` on the background thread once the server is quiet (one job per
        ``key``: asked again before it ran, it runs once)."""
        with self.cond:
            self._jobs.setdefault(key, job)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run, name="kbtool-mcp-quiet", daemon=True
                )
                self._worker.start()
            self.cond.notify_all()

    def pending(self) -> int:
        """Jobs not started yet."""
        with self.cond:
            return len(self._jobs)

    def _next_job(self) -> Callable[[], object]:
        with self.cond:
            while True:
                if self._jobs and self.in_flight == 0:
                    left = self.quiet_since + QUIET - time.monotonic()
                    if left <= 0:
                        key = next(iter(self._jobs))
                        return self._jobs.pop(key)
                    self.cond.wait(left)
                else:
                    self.cond.wait()

    def _run(self) -> None:
        while True:
            job = self._next_job()
            before = sys.getswitchinterval()
            sys.setswitchinterval(min(before, SWITCH))
            try:
                job()
            except Exception:  # noqa: BLE001 - the request that needs it says why
                log.debug("background work failed", exc_info=True)
            finally:
                sys.setswitchinterval(before)


ACTIVITY = Activity()
when_quiet = ACTIVITY.when_quiet
