"""Session fixtures shared by every test: the demo KB and the seeded TUI KB, each built once per
session (per xdist worker) and copied for tests that write.

Helpers that tests import live in ``tests/support/`` (never in a test module):
``tests.support.paths`` (demo releases, corpus), ``testkit.kb`` (KB builders through
``kbtool.kb.store`` and the gate), ``tests.support.tui_kb`` (the seeded TUI KB), ``tests.support.tui`` (Pilot helpers).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from testkit.kb import DEMO_TIME, build_demo_kb
from tests.support.tui_kb import build_fixture_kb

_OWN_CACHE: list[str] = []


def pytest_configure(config) -> None:
    """Kept diff answers, code preparations and the twins' stat records go to directories of
    this test run (each xdist worker its own), never to the user's ~/.cache: a test run would
    evict the answers a person prepared."""
    d = tempfile.mkdtemp(prefix="kbtool-test-diffs-")
    _OWN_CACHE.append(d)
    os.environ["KBTOOL_DIFF_CACHE_DIR"] = d
    code = tempfile.mkdtemp(prefix="kbtool-test-code-")  # kept code preparations too
    _OWN_CACHE.append(code)
    os.environ["KBTOOL_CODE_CACHE_DIR"] = code
    twins = tempfile.mkdtemp(prefix="kbtool-test-twins-")  # the twins' stat records too
    _OWN_CACHE.append(twins)
    os.environ["KBTOOL_TWIN_CACHE_DIR"] = twins


def pytest_unconfigure(config) -> None:
    for d in _OWN_CACHE:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def _frozen_time(monkeypatch):
    monkeypatch.setenv("KBTOOL_FROZEN_TIME", DEMO_TIME)
    # no detached diff preparation after a test's `kbtool analyze` (it would outlive the
    # test and write to the user's cache); tests of the preparation turn it on
    monkeypatch.setenv("KBTOOL_DIFF_WARM", "off")
    monkeypatch.setenv("KBTOOL_CODE_WARM", "off")  # nor a detached code preparation


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


@pytest.fixture(scope="session")
def demo_kb_master(tmp_path_factory) -> Path:
    """The demo KB of ``kbtool demo`` (two real zstd releases), built once per session.
    Read-only: copy it with ``demo_kb`` before writing."""
    return build_demo_kb(tmp_path_factory.mktemp("demo") / "demo.db")


@pytest.fixture
def demo_kb(demo_kb_master, tmp_path) -> Path:
    """A private copy of the demo KB."""
    return _copy(demo_kb_master, tmp_path / "demo.db")


@pytest.fixture(scope="session")
def tui_kb_master(tmp_path_factory) -> Path:
    """The seeded TUI KB (``tests.support.tui_kb``), built once per session. Read-only."""
    return build_fixture_kb(tmp_path_factory.mktemp("tui") / "fixture.db")


@pytest.fixture
def tui_kb(tui_kb_master, tmp_path) -> Path:
    """A private copy of the seeded TUI KB (tests may write to it)."""
    return _copy(tui_kb_master, tmp_path / "kb.db")
