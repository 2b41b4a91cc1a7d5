"""Thread workers that let go of their screen once finished.

Textual runs a thread worker's callable on the event loop's default executor after setting
its ``active_worker`` context variable in that thread's context; nothing resets it, so the
finished :class:`textual.worker.Worker` (its node, the bound method and arguments of its
work, its result) stays referenced from an idle executor thread until another worker happens
to run there. A closed screen was kept alive that way (its widgets, a diff report, a
changelog), and was frozen with the rest by :func:`kbtool.services.heap.freeze_pending`.
:class:`ReleasingWorkers` wraps every thread work of a node so that the thread forgets its
worker when the work returns or raises.

A thread work also holds its screen while it runs (its frames: the bound method, ``self``),
beyond the collector's sight: a closed screen whose worker was still reading survived the
collection that was to free it (issue 30: 85-95 % of the TUI's freeze tries failed that
way). :func:`running_on` says whether a thread work of a screen is under way, so the app
waits for it before that collection (``KbApp._closing_screens``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from functools import wraps
from inspect import isawaitable, iscoroutinefunction
from typing import Any

from textual.worker import Worker, active_worker

__all__ = ["ReleasingWorkers", "releasing", "running_on"]

_LOCK = threading.Lock()
_RUNNING: Counter[int] = Counter()  # id of a screen -> its thread works under way


def running_on(screen: object) -> bool:
    """A thread work started by ``screen`` or one of its widgets is under way (its thread
    holds the screen until it returns)."""
    return _RUNNING.get(id(screen), 0) > 0


def releasing(work: Callable[[], Any], screen: object | None = None) -> Callable[[], Any]:
    """``work`` that, run in a worker thread, leaves no worker in that thread's context;
    counted for :func:`running_on` while it runs, when ``screen`` is given (the id is
    counted: the running work holds the screen, so the id is not reused meanwhile)."""
    key = None if screen is None else id(screen)

    @wraps(work)
    def run() -> Any:
        if key is not None:
            with _LOCK:
                _RUNNING[key] += 1
        try:
            return work()
        finally:
            active_worker.set(None)  # type: ignore[arg-type]  # the thread's, not a task's
            if key is not None:
                with _LOCK:
                    _RUNNING[key] -= 1
                    if _RUNNING[key] <= 0:
                        del _RUNNING[key]

    return run


def _screen_of(node: object) -> object | None:
    """The screen a node is on (itself for a screen); None for the app or a node not mounted."""
    from textual.app import App
    from textual.screen import Screen

    if isinstance(node, Screen):
        return node
    if isinstance(node, App):  # its .screen is the one on top, not the worker's
        return None
    try:
        return node.screen  # type: ignore[attr-defined]
    except Exception:  # the app, or a widget not on a screen
        return None


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
            work = releasing(work, _screen_of(self))
        return super().run_worker(work, *args, thread=thread, **kwargs)  # type: ignore[misc]
