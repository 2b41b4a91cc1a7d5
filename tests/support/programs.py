"""Builds of the programs corpus (``python benchmarks/programs.py``) for tests that need
real programs at several optimisation levels; a test skips cleanly where it is not built."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.programs import DEFAULT_OUT


def program_build(name: str) -> Path:
    """The built module ``name`` (e.g. ``lz4-1.9.4.clang.O2.stripped.wasm``), or skip."""
    p = DEFAULT_OUT / name
    if not p.exists():
        pytest.skip("programs corpus not built: python benchmarks/programs.py")
    return p
