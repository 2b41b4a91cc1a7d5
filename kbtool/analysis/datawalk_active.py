"""Which reference scan the data model runs: the compiled walk (the mypyc twin
``kbtool.analysis._cdatawalk`` of :mod:`.datawalk`) or the pure regex scan
(:mod:`.datascan`, the reference; same references, ``test_datawalk_accel.py``).

:data:`IMPL` is the compiled module when it is present, loads, was built from today's
``datawalk.py`` (SHA-256 in ``_cdatawalk.sha256``, as ``kbtool/lift/_build.py`` writes it)
and ``KBTOOL_DATASCAN`` is not ``pure``; else None (the pure scan runs).
``KBTOOL_DATASCAN=compiled`` turns a missing or stale build into an error instead.
``pip install`` and ``python -m kbtool.lift.accel build datawalk`` build it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
SOURCE = "datawalk.py"
COMPILED_NAME = "_cdatawalk"
STAMP = HERE / f"{COMPILED_NAME}.sha256"
ENV = "KBTOOL_DATASCAN"  # "pure" | "compiled" | unset (auto)


def compiled_state() -> str:
    """``absent``, ``stale`` (another ``datawalk.py`` or interpreter) or ``ready``."""
    files = sorted(HERE.glob(f"{COMPILED_NAME}*.so")) + sorted(HERE.glob(f"{COMPILED_NAME}*.pyd"))
    if not files or not STAMP.is_file():
        return "absent"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if not any(f.name == COMPILED_NAME + suffix for f in files):
        return "stale"
    digest = hashlib.sha256((HERE / SOURCE).read_bytes()).hexdigest()
    return "ready" if STAMP.read_text().strip() == digest else "stale"


def load_compiled() -> ModuleType | None:
    """The compiled walk, or None when absent, stale or not loadable here."""
    if compiled_state() != "ready":
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{COMPILED_NAME}")
    except ImportError:
        return None
    return None if str(getattr(mod, "__file__", "")).endswith(".py") else mod


def _choose() -> tuple[ModuleType | None, str]:
    want = os.environ.get(ENV, "").strip().lower()
    if want == "pure":
        return None, "pure"
    mod = load_compiled()
    if mod is not None:
        return mod, "compiled"
    if want == "compiled":
        raise ImportError(
            f"{ENV}=compiled but the compiled data walk is {compiled_state()}: "
            "run `python -m kbtool.lift.accel build datawalk`"
        )
    return None, "pure"


IMPL, PATH = _choose()
