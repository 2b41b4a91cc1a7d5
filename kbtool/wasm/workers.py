"""Process pools that are safe to start anywhere and never outlive their parent.

Two rules for every ``ProcessPoolExecutor`` in kbtool (the decode pool of
:mod:`kbtool.wasm.facts`, the lift pool of :mod:`kbtool.lift.module`):

* :func:`pool_context` forks only from a single-threaded process. A fork copies only the
  calling thread, so a lock another thread held at that moment (the MCP server's stdio or
  worker threads, a progress bar's refresh thread) stays locked forever in the child.
  A threaded process gets ``None``: the caller does the work in-process. (A ``spawn`` or
  ``forkserver`` pool would re-run the main script of a caller that lacks the
  ``if __name__ == "__main__"`` guard, and pay a fresh interpreter per worker.)
* :func:`worker_init` (the pool's initializer) makes each worker exit when the process
  that started the pool dies: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, and on every
  platform a daemon thread that polls the parent's pid, so a SIGKILLed ``kbtool`` leaves no
  worker behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_SECONDS = 0.5


def pool_context() -> Any | None:
    """The ``fork`` multiprocessing context when this process runs a single thread and can
    fork, else ``None`` (run the work in this process)."""
    import multiprocessing as mp

    if threading.active_count() == 1 and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return None


DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the pool forks its workers: a handler that raises (Ctrl-C,
    kbtool's SIGTERM handler) inside the interpreter's at-fork callbacks is swallowed
    ("Exception ignored"), and the signal would be lost. Delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def worker_init(parent_pid: int) -> None:
    """Pool initializer: die with ``parent_pid`` (the process that made the pool)."""
    if hasattr(signal, "pthread_sigmask"):  # forked inside signals_deferred: take them again
        signal.pthread_sigmask(signal.SIG_UNBLOCK, DEFERRED_SIGNALS)
    arm_parent_death(parent_pid)


def arm_parent_death(parent_pid: int) -> None:
    """Exit this worker when ``parent_pid`` (or its direct parent, if another) dies."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no usable libc
            pass
    direct = os.getppid()
    if not _alive(parent_pid) or (direct == 1 and parent_pid != 1):
        os._exit(1)  # the parent died before the death signal was armed
    threading.Thread(
        target=_watch_parent, args=(parent_pid, direct), daemon=True, name="kbtool-parent-watch"
    ).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - exists, another user's
        return True
    return True


def _watch_parent(parent_pid: int, direct: int) -> None:
    while True:
        time.sleep(PARENT_POLL_SECONDS)
        if os.getppid() != direct or not _alive(parent_pid):
            os._exit(1)


def kill_workers(executor: Any) -> None:
    """Stop a pool at once (an exception, SIGTERM or a closed generator while it works):
    kill the workers instead of waiting for their ranges, then shut the pool down.

    A worker killed while sending a result leaves half a message in the result pipe, and
    the pool's manager thread would wait for the rest forever (this process holds a write
    end too, so no end-of-file comes): closing that write end once the workers are gone
    turns the wait into an end-of-file, which the pool treats as a broken worker."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, AttributeError, ValueError):  # pragma: no cover - already gone
            pass
    for p in procs:
        try:
            p.join(timeout=5)
        except (OSError, AttributeError, AssertionError, ValueError):  # pragma: no cover
            pass
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    if writer is not None:
        try:
            writer.close()
        except OSError:  # pragma: no cover
            pass
    try:
        executor.shutdown(wait=True, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a broken pool after the kill: nothing left to stop
        pass
