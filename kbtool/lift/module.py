"""Whole-module lifting and disassembly, over a process pool on every core by default.

The pool forks only from a single-threaded process (a threaded one lifts in-process) and
its workers die with this process (:mod:`kbtool.wasm.workers`)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from kbtool.wasm.errors import WasmFormatError

from . import active
from .context import LiftModule
from .disasm import Listing, disassemble_function

if TYPE_CHECKING:
    from .lifter import LiftResult

_STATE: dict = {}
#: below this many defined functions (or body bytes) a pool costs more than it saves
MIN_PARALLEL_FUNCTIONS = 64
MIN_PARALLEL_BYTES = 200_000


def _work(rng: tuple[int, int]) -> list:
    lm, kw, one = _STATE["lm"], _STATE["kw"], _STATE["one"]
    out = [one(lm, i, **kw) for i in range(*rng)]
    pack = _STATE.get("pack")
    return out if pack is None else pack(out)


def _lift_pack(results: list) -> list:
    """A worker's lift results as plain tuples for the pipe to the parent: pickling a
    dataclass goes through ``__reduce_ex__`` and a dict per object (both ways), a tuple of
    ints and strings is a few opcodes (on ffmpeg ~3x less pickling in the workers and ~5x
    less unpickling in the parent). A result of another class (the pure lifter's, when the
    compiled one handed it a function) crosses as itself."""
    res_cls, stats_cls = active.IMPL.LiftResult, active.IMPL.LiftStats
    names = _stats_fields(stats_cls)
    return [
        (r.func_index, r.text, r.truncated, r.reason, tuple([getattr(r.stats, n) for n in names]))
        if type(r) is res_cls and type(r.stats) is stats_cls
        else r
        for r in results
    ]


def _lift_unpack(items: list) -> list:
    """:func:`_lift_pack`'s tuples made the lifter's results again (equal to the sent ones)."""
    res_cls, stats_cls = active.IMPL.LiftResult, active.IMPL.LiftStats
    return [
        res_cls(x[0], x[1], x[2], x[3], stats_cls(*x[4])) if type(x) is tuple else x for x in items
    ]


def _stats_fields(stats_cls: type) -> tuple[str, ...]:
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(stats_cls))


def _lift_one(lm: LiftModule, i: int, **kw) -> LiftResult:
    return active.lift_function(lm, i, **kw)


def _disasm_one(lm: LiftModule, i: int, render=None, **kw):
    """One function's :class:`Listing` (``render(listing)`` when given); a body the decoder
    rejects is a listing with ``error`` set instead."""
    try:
        listing = disassemble_function(lm, i, **kw)
    except WasmFormatError as exc:
        listing = Listing(i, lm.func_display(i) or None, "", error=str(exc))
    return listing if render is None else render(listing)


def default_workers() -> int:
    """Worker processes for a whole-module lift: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _ranges(lm: LiftModule, first: int, parts: int) -> list[tuple[int, int]]:
    """Consecutive function ranges of about equal body size (a size proxy for work)."""
    m = lm.module
    imp = m.num_func_imports
    sizes = [e - s for s, e in m.code[first - imp :]]
    target = max(1, sum(sizes) // parts)
    out: list[tuple[int, int]] = []
    a = first
    acc = 0
    for k, sz in enumerate(sizes):
        acc += sz
        if acc >= target:
            out.append((a, first + k + 1))
            a = first + k + 1
            acc = 0
    if a < m.num_functions:
        out.append((a, m.num_functions))
    return out


def lift_module(
    lm: LiftModule, *, workers: int | None = None, imports: bool = False, **kw
) -> Iterator[LiftResult]:
    """Lift every defined function (and import prototypes if ``imports``), in index order.

    ``workers`` processes (default :func:`default_workers`, i.e. every usable core) lift
    ranges of about equal body size; the children are forked, so they share the prepared
    module without copying it. ``workers=1``, a small module or a process running several
    threads (a fork there can deadlock) lifts in this process. ``kw`` goes to
    :func:`lift_function`.
    """
    return _map_functions(lm, _lift_one, workers, imports, kw, 8, (_lift_pack, _lift_unpack))


def disassemble_module(
    lm: LiftModule,
    *,
    workers: int | None = None,
    imports: bool = False,
    render: Callable[[Listing], Any] | None = None,
    **kw,
) -> Iterator:
    """Every defined function's :class:`Listing` (and import headers if ``imports``), in
    index order, on ``workers`` processes like :func:`lift_module`; with ``render`` what it
    makes of each listing (computed in the workers, e.g. the text); ``kw`` goes to
    :func:`disassemble_function`. A body the decoder rejects gives a listing with ``error``."""
    # a listing is ~3x the C: smaller ranges keep fewer finished ones waiting in memory
    return _map_functions(lm, _disasm_one, workers, imports, dict(kw, render=render), 32)


def _map_functions(
    lm: LiftModule,
    one,
    workers: int | None,
    imports: bool,
    kw: dict,
    per_worker: int,
    packing: tuple[Callable[[list], list], Callable[[list], list]] | None = None,
) -> Iterator:
    m = lm.module
    first = 0 if imports else m.num_func_imports
    n = m.num_functions
    if workers is None:
        workers = default_workers()
    from concurrent.futures import ProcessPoolExecutor  # here: one-function users need no pool

    from kbtool.wasm.workers import kill_workers, pool_context, signals_deferred, worker_init

    small = n - first < MIN_PARALLEL_FUNCTIONS or sum(e - s for s, e in m.code) < MIN_PARALLEL_BYTES
    mpctx = None if workers <= 1 or small else pool_context()
    if mpctx is None:
        for i in range(first, n):
            yield one(lm, i, **kw)
        return
    for i in range(first, m.num_func_imports):  # import prototypes / headers: cheap
        yield one(lm, i, **kw)
    ranges = _ranges(lm, max(first, m.num_func_imports), workers * per_worker)
    _STATE["lm"], _STATE["kw"], _STATE["one"] = lm, kw, one
    if packing is not None:  # what crosses the pipe: packed in the worker, unpacked here
        _STATE["pack"] = packing[0]
    unpack = None if packing is None else packing[1]
    ex = ProcessPoolExecutor(
        workers, mp_context=mpctx, initializer=worker_init, initargs=(os.getpid(),)
    )
    try:
        # a window of ranges in flight (not all of them): finished ranges wait for the
        # slower one before them in memory, so the window bounds what waits
        todo = iter(ranges)
        with signals_deferred():  # the first submit forks the workers
            window = deque(ex.submit(_work, r) for r in islice(todo, workers * 2))
        while window:
            res = window.popleft().result()
            if unpack is not None:
                res = unpack(res)
            nxt = next(todo, None)
            if nxt is not None:
                window.append(ex.submit(_work, nxt))
            yield from res
    except BaseException:  # an error, SIGTERM (raised by the CLI) or a closed generator
        kill_workers(ex)
        raise
    else:
        ex.shutdown(wait=True)
    finally:
        _STATE.clear()
