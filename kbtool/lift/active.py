"""Which lifter ``kbtool.lift`` runs: the pure package ``lifter/`` or its mypyc-compiled twin.

:data:`IMPL` is the compiled ``kbtool.lift._clifter`` when it is present, loads, was built
from today's lifter sources (SHA-256 over every part of ``lifter/``, in ``_clifter.sha256``)
and ``KBTOOL_LIFT`` is not ``pure``; otherwise the pure module (the reference). ``pip install`` builds the compiled one when it
can (``setup.py``; a C compiler and Python headers), else the pure one runs. Both give
byte-identical output. ``KBTOOL_LIFT=compiled`` turns a missing or stale build into an
error instead of a silent fallback. Build it with ``python -m kbtool.lift.accel build``.
"""

from __future__ import annotations

import gc
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from . import _build

HERE = Path(__file__).resolve().parent
COMPILED_NAME = _build.COMPILED_NAME
STAMP = HERE / _build.STAMP_NAME
ENV = "KBTOOL_LIFT"  # "pure" | "compiled" | unset (auto)


def source_digest() -> str:
    return _build.source_digest(HERE)


def compiled_files() -> list[Path]:
    """The extension modules a build left next to this file (the module and mypyc's runtime)."""
    return _build.compiled_files(HERE)


def compiled_state() -> str:
    """``absent``, ``stale`` (built from other lifter sources or for another interpreter)
    or ``ready``."""
    if not compiled_files() or not STAMP.is_file():
        return "absent"
    return "ready" if _build.ready_files(HERE) else "stale"


def load_pure() -> ModuleType:
    return importlib.import_module(f"{__package__}.lifter")


def load_compiled() -> ModuleType | None:
    """The compiled lifter, or None when absent, stale or not loadable on this interpreter."""
    if compiled_state() != "ready":
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{COMPILED_NAME}")
    except ImportError:
        return None
    return mod if is_compiled(mod) else None


def is_compiled(mod: ModuleType) -> bool:
    return not str(getattr(mod, "__file__", "")).endswith(".py")


def _choose() -> tuple[ModuleType, str]:
    want = os.environ.get(ENV, "").strip().lower()
    if want == "pure":
        return load_pure(), "pure"
    mod = load_compiled()
    if mod is not None:
        return mod, "compiled"
    if want == "compiled":
        raise ImportError(
            f"{ENV}=compiled but the compiled lifter is {compiled_state()}: "
            "run `python -m kbtool.lift.accel build`"
        )
    return load_pure(), "pure"


IMPL, PATH = _choose()


def _with_pure_fallback(compiled: ModuleType) -> Any:
    """``compiled.lift_function`` that hands a function to the pure lifter when the compiled
    code raises a type error: mypyc checks types at run time where Python does not, so an
    input shape no test has met may fail only there. The pure lifter is the reference."""
    fast = compiled.lift_function

    def lift_function(lm: Any, func_index: int, **kw: Any) -> Any:
        try:
            return fast(lm, func_index, **kw)
        except (TypeError, AttributeError) as e:
            import logging

            logging.getLogger("kbtool.lift").warning(
                "compiled lifter failed on function %s (%s); the pure one lifts it", func_index, e
            )
            return load_pure().lift_function(lm, func_index, **kw)

    return lift_function


def _without_gc(lift: Any) -> Any:
    """``lift`` with the cyclic garbage collector paused: a lift allocates many short-lived
    tuples and strings, reference counting frees them all, and the collector's passes over
    them cost about a tenth of the time. The previous state comes back afterwards."""

    def lift_function(lm: Any, func_index: int, **kw: Any) -> Any:
        if not gc.isenabled():
            return lift(lm, func_index, **kw)
        gc.disable()
        try:
            return lift(lm, func_index, **kw)
        finally:
            gc.enable()

    lift_function.__doc__ = getattr(IMPL.lift_function, "__doc__", None)
    return lift_function


# what kbtool.lift calls: the chosen lifter's entry point
lift_function = _without_gc(_with_pure_fallback(IMPL) if PATH == "compiled" else IMPL.lift_function)
