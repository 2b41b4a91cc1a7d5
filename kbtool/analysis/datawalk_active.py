"""Which reference scan the data model runs: the compiled walk (the mypyc twin
``kbtool.analysis._cdatawalk`` of :mod:`.datawalk`) or the pure regex scan
(:mod:`.datascan`, the reference; same references, ``test_datawalk_accel.py``).

:data:`IMPL` is the compiled package when it is present, loads, was built from today's
``datawalk/`` (SHA-256 over its parts in ``_cdatawalk.sha256``, as ``kbtool/lift/_build.py``
writes it) and ``KBTOOL_DATASCAN`` is not ``pure``; else None (the pure scan runs).
:data:`ITEMS` is the data items' cutting (``items``) of the same side; :data:`COLUMNS` the
references' packed columns (``columns``) when compiled, else None (run pure, the store's
own packing is faster).
``KBTOOL_DATASCAN=compiled`` turns a missing or stale build into an error instead.
``pip install`` and ``python -m kbtool.lift.accel build datawalk`` build it.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

from kbtool.twinstate import package_digest, package_state

HERE = Path(__file__).resolve().parent
SOURCE = "datawalk"  # a package: the walk (``__init__``) and the items' cutting (``items``)
COMPILED_NAME = "_cdatawalk"
STAMP = HERE / f"{COMPILED_NAME}.sha256"
ENV = "KBTOOL_DATASCAN"  # "pure" | "compiled" | unset (auto)


def compiled_state() -> str:
    """``absent``, ``stale`` (another ``datawalk/`` or interpreter) or ``ready``."""
    return package_state(HERE, COMPILED_NAME, STAMP, HERE / SOURCE)


def source_digest() -> str:
    """``kbtool/lift/_build.py``'s digest of a package twin: each part's path and bytes."""
    return package_digest(HERE / SOURCE)


def load_compiled() -> ModuleType | None:
    """The compiled walk, or None when absent, stale or not loadable here."""
    if compiled_state() != "ready":
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{COMPILED_NAME}")
        importlib.import_module(f"{__package__}.{COMPILED_NAME}.items")
        importlib.import_module(f"{__package__}.{COMPILED_NAME}.columns")
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
#: :mod:`.datawalk.items` of the same side (the pure one when the walk is not compiled)
ITEMS: ModuleType = importlib.import_module(
    f"{__package__}.{COMPILED_NAME if IMPL is not None else 'datawalk'}.items"
)
#: :mod:`.datawalk.columns` compiled, or None (the pure walk: the KB packs by itself)
COLUMNS: ModuleType | None = (
    importlib.import_module(f"{__package__}.{COMPILED_NAME}.columns") if IMPL is not None else None
)
