"""Thread workers that let go of their screen once finished.

Textual runs a thread worker's callable on the event loop's default executor after setting
its ``active_worker`` context variable in that thread's context; nothing resets it, so the
finished :class:`textual.worker.Worker` (its node, the bound method and arguments of its
work, its result) stays referenced from an idle executor thread until another worker happens
to run there. A closed screen was kept alive that way (its widgets, a diff report, a
changelog), and was frozen with the rest by :func:`kbtool.services.heap.freeze_pending`.
:class:`ReleasingWorkers` wraps every thread work of a node so that the thread forgets its
worker when the work returns or raises.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from inspect import isawaitable, iscoroutinefunction
from typing import Any

from textual.worker import Worker, active_worker

__all__ = ["ReleasingWorkers", "releasing"]


def releasing(work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` that, run in a worker thread, leaves no worker in that thread's context."""

    @wraps(work)
    def run() -> Any:
        try:
            return work()
        finally:
            active_worker.set(None)  # type: ignore[arg-type]  # the thread's, not a task's

    return run


def _plain_callable(work: object) -> bool:
    """A synchronous callable (what a thread worker calls directly): not a coroutine
    function (Textual runs those in a fresh event loop of their own), not an awaitable."""
    func = getattr(work, "func", work)
    return callable(work) and not iscoroutinefunction(func) and not isawaitable(work)


class ReleasingWorkers:
    """A mixin for a DOM node (a screen, the app, a widget) whose thread workers release
    their worker when done (see the module)."""

    def run_worker(self, work, *args, thread: bool = False, **kwargs) -> Worker:  # type: ignore[no-untyped-def]
        if thread and _plain_callable(work):
            work = releasing(work)
        return super().run_worker(work, *args, thread=thread, **kwargs)  # type: ignore[misc]
