"""Which matcher runs: the mypyc-compiled twin ``kbtool.identity._cmatcher`` of the package
:mod:`kbtool.identity.matcher` (its stages, review checks and features) or the pure package
(the reference; same pairings, ``tests/unit/identity/test_matcher_twin.py``).

By default (since session 20, issue #30) the twin runs when it is present, loads and was
built from today's ``matcher/`` (SHA-256 over its parts in ``_cmatcher.sha256``, as
``kbtool/lift/_build.py`` writes it), and the pure package otherwise: same pairings for
10-30 % less of the matcher's CPU on ffmpeg (alternated runs with the collector paused as
an ingest runs it; docs/DECISIONS.md, session 20 M). ``KBTOOL_MATCHER=pure``
(or ``KBTOOL_LIFT=pure``) keeps the pure package; ``KBTOOL_MATCHER=compiled`` turns a
missing or stale build into an error; ``auto`` (or unset) is the default. ``pip install``
and ``python -m kbtool.lift.accel build matcher`` build it.

How it is picked: the pure package's ``__init__`` calls :func:`swap` first; when the twin is
chosen, every part of the twin is registered under the pure part's name
(``sys.modules["kbtool.identity.matcher.review"]`` is ``kbtool.identity._cmatcher.review``),
so every importer of ``kbtool.identity.matcher[.part]`` and ``kbtool.identity.features``
gets the compiled code, and one module of each part holds the state (the feature stores,
the review memo). :func:`load_pure` gives the pure package beside it (tests compare both).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from kbtool.twinstate import package_digest, package_state

HERE = Path(__file__).resolve().parent
SOURCE = "matcher"
COMPILED_NAME = "_cmatcher"
STAMP = HERE / f"{COMPILED_NAME}.sha256"
ENV = "KBTOOL_MATCHER"  # "pure" | "compiled" | "auto" (the default, also when unset)
PURE_NAME = f"{__package__}.{SOURCE}"
#: the package's parts (each registered under the pure name when the twin is chosen)
PARTS = (
    "weights",
    "bigrams",
    "features",
    "base",
    "exact",
    "callgraph",
    "similarity",
    "family",
    "review",
    "driver",
)

#: "compiled" or "pure": what ``kbtool.identity.matcher`` is in this process (set by swap)
PATH = "pure"


def compiled_state() -> str:
    """``absent``, ``stale`` (another ``matcher/`` or interpreter) or ``ready``."""
    return package_state(HERE, COMPILED_NAME, STAMP, HERE / SOURCE)


def source_digest() -> str:
    """``kbtool/lift/_build.py``'s digest of a package twin: each part's path and bytes."""
    return package_digest(HERE / SOURCE)


def load_compiled() -> ModuleType | None:
    """The compiled package with all its parts imported, or None when absent, stale or not
    loadable here."""
    if compiled_state() != "ready":
        return None
    name = f"{__package__}.{COMPILED_NAME}"
    try:
        mod = importlib.import_module(name)
        for part in PARTS:
            importlib.import_module(f"{name}.{part}")
    except ImportError:
        return None
    return None if str(getattr(mod, "__file__", "")).endswith(".py") else mod


def wanted() -> str:
    """``pure``, ``compiled`` or ``auto`` (unset or anything else) from the environment."""
    if os.environ.get("KBTOOL_LIFT", "").strip().lower() == "pure":
        return "pure"
    want = os.environ.get(ENV, "").strip().lower()
    return want if want in ("compiled", "pure") else "auto"


def swap(name: str) -> ModuleType | None:
    """Called by the package ``name`` as it starts: for the pure package, when the compiled
    twin is chosen, register the twin and its parts under the pure names and return it (the
    pure ``__init__`` then stops); else None (``name`` runs as itself)."""
    global PATH
    if name != PURE_NAME:  # the twin itself, or the pure package loaded beside it
        return None
    want = wanted()
    if want == "pure":
        return None
    mod = load_compiled()
    if mod is None:
        if want == "compiled":
            raise ImportError(
                f"{ENV}=compiled but the compiled matcher is {compiled_state()}: "
                "run `python -m kbtool.lift.accel build matcher`"
            )
        return None
    for part in PARTS:
        sys.modules[f"{PURE_NAME}.{part}"] = sys.modules[f"{mod.__name__}.{part}"]
    sys.modules[PURE_NAME] = mod
    PATH = "compiled"
    return mod


def load_pure() -> ModuleType:
    """The pure package as its own module ``kbtool.identity._pmatcher`` (with its own parts,
    feature stores and review memo), whatever ``kbtool.identity.matcher`` is: for tests that
    compare the two."""
    name = f"{__package__}._pmatcher"
    got = sys.modules.get(name)
    if got is not None:
        return got
    pkg = HERE / SOURCE
    spec = importlib.util.spec_from_file_location(
        name, pkg / "__init__.py", submodule_search_locations=[str(pkg)]
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
        for part in PARTS:
            importlib.import_module(f"{name}.{part}")
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod
