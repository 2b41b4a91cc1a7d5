"""The pure matcher for tests that spy on, patch or subclass its internals.

The compiled twin (``kbtool.identity._cmatcher``) is the default when it is built; its
native classes call each other directly, so a test's ``monkeypatch.setattr(FeatureCache,
...)`` on it would change nothing the matcher runs. Such tests either take the pure
package's parts directly (:func:`pure_part`) or, when they go through the services
(ingest, pairing), use :func:`use_pure_matcher`: for the test, ``kbtool.identity.matcher``
and its parts (and ``kbtool.identity.features``) are the pure package's, and every name a
loaded kbtool or test module bound to a compiled function, class or part is rebound to the
pure one (restored after the test). Test modules take the parts they patch or subclass from
:func:`pure_part` (a class defined at import cannot subclass a compiled one) and turn
:func:`pure_matcher` on for each test with an autouse fixture."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest

from kbtool.identity import matcher_active


def pure_package() -> ModuleType:
    """The pure package: ``kbtool.identity.matcher`` itself when it runs pure (twin absent,
    stale or ``KBTOOL_MATCHER=pure``), else its copy beside the twin
    (:func:`kbtool.identity.matcher_active.load_pure`)."""
    import kbtool.identity.matcher as active

    return active if matcher_active.PATH != "compiled" else matcher_active.load_pure()


def pure_part(part: str | None = None) -> ModuleType:
    """The pure package (``part`` None) or one of its parts, whatever runs by default."""
    pkg = pure_package()
    return pkg if part is None else sys.modules[f"{pkg.__name__}.{part}"]


@contextmanager
def pure_matcher() -> Iterator[ModuleType]:
    """:func:`use_pure_matcher` with its own patches, undone on leaving (a test's own
    ``monkeypatch.undo()`` leaves them in place)."""
    with pytest.MonkeyPatch.context() as mp:
        yield use_pure_matcher(mp)


def use_pure_matcher(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Make the pure package the matcher for the rest of the test (see the module
    docstring); returns it. Nothing to do when the pure package already runs."""
    import kbtool.identity
    import kbtool.identity.features  # noqa: F401  (registered under its name first)
    import kbtool.identity.matcher as active

    if matcher_active.PATH != "compiled":
        return active
    pure = matcher_active.load_pure()
    names = [matcher_active.PURE_NAME] + [
        f"{matcher_active.PURE_NAME}.{p}" for p in matcher_active.PARTS
    ]
    pairs = [(active, pure)] + [
        (sys.modules[f"{active.__name__}.{p}"], pure_part(p)) for p in matcher_active.PARTS
    ]
    swap: dict[int, tuple[object, object]] = {}
    for comp, pmod in pairs:
        swap[id(comp)] = (comp, pmod)
        for name, obj in vars(comp).items():
            if name.startswith("__") or not (callable(obj) or isinstance(obj, ModuleType)):
                continue
            if getattr(obj, "__module__", comp.__name__).startswith(active.__name__):
                if hasattr(pmod, name):
                    swap[id(obj)] = (obj, getattr(pmod, name))
    for name, (_c, pmod) in zip(names, pairs, strict=True):
        monkeypatch.setitem(sys.modules, name, pmod)
    monkeypatch.setitem(sys.modules, "kbtool.identity.features", pure_part("features"))
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith(("kbtool.", "tests.", "testkit.", "benchmarks.")):
            continue
        if modname.startswith((active.__name__, pure.__name__)):
            continue
        for name, obj in list(vars(mod).items()):
            got = swap.get(id(obj))
            if got is not None and got[0] is obj:
                monkeypatch.setattr(mod, name, got[1])
    return pure
