"""Which decoder loop :mod:`kbtool.wasm.facts` runs: the pure ``decoder.py`` or its
mypyc-compiled twin ``_cdecoder``.

:data:`IMPL` is the compiled ``kbtool.wasm._cdecoder`` when it is present, loads, was built
from today's ``decoder.py`` (SHA-256 in ``_cdecoder.sha256``) and ``KBTOOL_DECODE`` is not
``pure``; otherwise the pure module (the reference). ``pip install`` builds the twin when it
can (the build table in ``kbtool/lift/_build.py``, run by ``setup.py`` and by
``python -m kbtool.lift.accel build``). Both give identical facts
(``tests/unit/wasm/test_decode_accel.py``). ``KBTOOL_DECODE=compiled`` turns a missing or stale build
into an error instead of a silent fallback.

Standard library only: this layer cannot import :mod:`kbtool.lift` (the build code lives
there), so the stamp check is repeated here (same file names, same digest).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = "decoder.py"
COMPILED_NAME = "_cdecoder"
STAMP = HERE / f"{COMPILED_NAME}.sha256"
ENV = "KBTOOL_DECODE"  # "pure" | "compiled" | unset (auto)


def source_digest() -> str:
    return hashlib.sha256((HERE / SOURCE).read_bytes()).hexdigest()


def compiled_files() -> list[Path]:
    """Extension modules of the twin next to this file (any interpreter's)."""
    return sorted(HERE.glob(f"{COMPILED_NAME}*.so")) + sorted(HERE.glob(f"{COMPILED_NAME}*.pyd"))


def compiled_state() -> str:
    """``absent``, ``stale`` (built from another ``decoder.py`` or for another interpreter)
    or ``ready``."""
    files = compiled_files()
    if not files or not STAMP.is_file():
        return "absent"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if not any(f.name == COMPILED_NAME + suffix for f in files):
        return "stale"
    return "ready" if STAMP.read_text().strip() == source_digest() else "stale"


def load_pure() -> ModuleType:
    return importlib.import_module(f"{__package__}.decoder")


def is_compiled(mod: ModuleType) -> bool:
    return not str(getattr(mod, "__file__", "")).endswith(".py")


def load_compiled() -> ModuleType | None:
    """The compiled decoder, or None when absent, stale or not loadable here."""
    if compiled_state() != "ready":
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{COMPILED_NAME}")
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
