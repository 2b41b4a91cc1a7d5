"""The query package loads its modules on first use (issue 30.4, session 29 S): every
re-exported name is still there, the same object as its module's, and a fresh import of the
package loads none of the resource modules until one of their names is used."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from kbtool.kb import queries
from tests.support.paths import ROOT

RESOURCE_MODULES = (
    "agents",
    "analysis",
    "diffs",
    "events",
    "functions",
    "search",
    "symbols",
    "versions",
)


def test_every_exported_name_is_its_modules_object() -> None:
    assert sorted(queries._WHERE.values()) and set(queries._WHERE.values()) == set(RESOURCE_MODULES)
    for name in queries.__all__:
        value = getattr(queries, name)
        where = queries._WHERE.get(name)
        if where is not None:
            assert value is getattr(importlib.import_module(f"kbtool.kb.queries.{where}"), name)
    # nothing lazily loaded is missing from __all__, nothing in __all__ is unknown
    assert set(queries._WHERE) <= set(queries.__all__)
    assert set(queries.__all__) <= set(queries._WHERE) | set(vars(queries))
    assert set(queries.__all__) <= set(dir(queries))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_query'"):
        queries.no_such_query  # noqa: B018
    assert not hasattr(queries, "no_such_query")


def _run(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def test_the_package_loads_a_module_on_first_use_only() -> None:
    loaded = _run(
        "import sys\n"
        "from kbtool.kb import queries\n"
        "mods = ('agents', 'analysis', 'diffs', 'events', 'functions', 'search', 'symbols', 'versions')\n"
        "print(*[m for m in mods if 'kbtool.kb.queries.' + m in sys.modules])\n"
        "print('|')\n"
        "from kbtool.kb.queries import suggestions\n"
        "assert queries.list_versions.__module__ == 'kbtool.kb.queries.versions'\n"
        "print(*[m for m in mods if 'kbtool.kb.queries.' + m in sys.modules])\n"
    )
    before, after = loaded[: loaded.index("|")], loaded[loaded.index("|") + 1 :]
    assert before == []
    assert "agents" in after and "versions" in after
    assert "search" not in after and "events" not in after
