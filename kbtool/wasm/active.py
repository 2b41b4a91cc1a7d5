"""Which decoder loop :mod:`kbtool.wasm.facts` runs: the pure package ``decoder/`` (the
loop in its ``__init__``, the data map in ``dmap``) or its mypyc-compiled twin ``_cdecoder``.

:data:`IMPL` is the compiled ``kbtool.wasm._cdecoder`` when it is present, loads, was built
from today's ``decoder/`` (SHA-256 over its parts in ``_cdecoder.sha256``, as
``kbtool/lift/_build.py`` computes it) and ``KBTOOL_DECODE`` is not ``pure``; otherwise the
pure package (the reference). :data:`DMAP` is the same side's ``dmap`` module (the
:class:`DataMap` :mod:`kbtool.wasm.datamap` gives everyone). ``pip install`` builds the twin when it
can (the build table in ``kbtool/lift/_build.py``, run by ``setup.py`` and by
``python -m kbtool.lift.accel build``). Both give identical facts
(``tests/unit/wasm/test_decode_accel.py``). ``KBTOOL_DECODE=compiled`` turns a missing or stale build
into an error instead of a silent fallback.

Standard library only: this layer cannot import :mod:`kbtool.lift` (the build code lives
there), so the stamp check is repeated here (same file names, same digest).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from kbtool.twinstate import package_digest

HERE = Path(__file__).resolve().parent
SOURCE = "decoder"  # a package: every .py part counts
COMPILED_NAME = "_cdecoder"
STAMP = HERE / f"{COMPILED_NAME}.sha256"
ENV = "KBTOOL_DECODE"  # "pure" | "compiled" | unset (auto)


def source_digest() -> str:
    """``_build.source_digest`` of a package twin: each part's relative path and bytes."""
    return package_digest(HERE / SOURCE)


def compiled_files() -> list[Path]:
    """Extension modules of the twin next to this file (any interpreter's): mypyc's shared
    library and the package's parts in ``_cdecoder/``."""
    ext = (".so", ".pyd")
    top = [f for f in sorted(HERE.glob(f"{COMPILED_NAME}*")) if f.is_file() and f.suffix in ext]
    sub = HERE / COMPILED_NAME
    inner = sorted(f for f in sub.rglob("*") if f.suffix in ext) if sub.is_dir() else []
    return top + inner


def compiled_state() -> str:
    """``absent``, ``stale`` (built from another ``decoder/`` or for another interpreter)
    or ``ready``."""
    files = compiled_files()
    if not files or not STAMP.is_file():
        return "absent"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if not any(f == HERE / COMPILED_NAME / ("__init__" + suffix) for f in files):
        return "stale"
    return "ready" if STAMP.read_text().strip() == source_digest() else "stale"


def load_pure() -> ModuleType:
    return importlib.import_module(f"{__package__}.decoder")


def _dmap_of(mod: ModuleType) -> ModuleType:
    return importlib.import_module(f"{mod.__name__}.dmap")


def is_compiled(mod: ModuleType) -> bool:
    return not str(getattr(mod, "__file__", "")).endswith(".py")


def load_compiled() -> ModuleType | None:
    """The compiled decoder, or None when absent, stale or not loadable here."""
    if compiled_state() != "ready":
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{COMPILED_NAME}")
        _dmap_of(mod)
    except ImportError:
        return None
    return mod if is_compiled(mod) else None


def _choose() -> tuple[ModuleType, str]:
    want = os.environ.get(ENV, "").strip().lower()
    if want == "pure":
        return load_pure(), "pure"
    mod = load_compiled()
    if mod is not None:
        return mod, "compiled"
    if want == "compiled":
        raise ImportError(
            f"{ENV}=compiled but the compiled decoder is {compiled_state()}: "
            "run `python -m kbtool.lift.accel build`"
        )
    return load_pure(), "pure"


IMPL, PATH = _choose()
DMAP = _dmap_of(IMPL)


def analyze_range(
    ctx: Any,
    first: int,
    last: int,
    progress: Any = None,
    total_done: int = 0,
    total: int = 0,
    step: int = 1 << 20,
) -> list[tuple[Any, ...]]:
    """The chosen decoder's :func:`kbtool.wasm.decoder.analyze_range`. A type error from the
    compiled code (mypyc checks types at run time where Python does not) hands the range to
    the pure decoder, the reference; a malformed body raises the same WasmFormatError on both."""
    if PATH != "compiled":
        return IMPL.analyze_range(ctx, first, last, progress, total_done, total, step)
    try:
        return IMPL.analyze_range(ctx, first, last, progress, total_done, total, step)
    except (TypeError, AttributeError) as e:
        import logging

        logging.getLogger("kbtool.wasm").warning(
            "compiled decoder failed on functions %s..%s (%s); the pure one decodes them",
            first,
            last,
            e,
        )
        return load_pure().analyze_range(ctx, first, last, progress, total_done, total, step)
