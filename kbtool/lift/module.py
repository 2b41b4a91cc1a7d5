"""Whole-module lifting (optionally over a fork process pool)."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from .context import LiftModule
from .lifter import LiftResult, lift_function

_STATE: dict = {}


def _work(rng: tuple[int, int]) -> list[LiftResult]:
    lm, kw = _STATE["lm"], _STATE["kw"]
    return [lift_function(lm, i, **kw) for i in range(*rng)]


def lift_module(
    lm: LiftModule, *, workers: int = 1, imports: bool = False, **kw
) -> Iterator[LiftResult]:
    """Lift every defined function (and import prototypes if ``imports``), in index order.

    ``workers > 1`` lifts chunks in forked processes; ``kw`` goes to :func:`lift_function`.
    """
    m = lm.module
    first = 0 if imports else m.num_func_imports
    n = m.num_functions
    if workers <= 1 or n - first < 64:
        for i in range(first, n):
            yield lift_function(lm, i, **kw)
        return

    step = max(16, (n - first) // (workers * 8))
    ranges = [(a, min(a + step, n)) for a in range(first, n, step)]
    _STATE["lm"], _STATE["kw"] = lm, kw
    try:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as ex:
            for res in ex.map(_work, ranges):
                yield from res
    finally:
        _STATE.clear()
