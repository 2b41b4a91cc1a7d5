"""Pure modules imported as if mypyc's runtime library (``librt``) were not installed, and the
decoders a decoder test runs on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def import_without_librt(
    monkeypatch: pytest.MonkeyPatch, path: str | Path, name: str
) -> ModuleType:
    """A fresh copy of the module at ``path``, imported as ``name`` where ``librt`` is not
    installed (its imports raise ImportError); undone with ``monkeypatch``."""
    for lib in ("librt", "librt.strings", "librt.vecs"):
        monkeypatch.setitem(sys.modules, lib, None)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod


def decoder_variants(monkeypatch: pytest.MonkeyPatch, name: str) -> list[ModuleType]:
    """The pure decoder, a copy of it without ``librt`` (imported as ``name``) and the
    compiled twin when it is built."""
    from kbtool.wasm import active, decoder

    compiled = active.load_compiled()
    bare = import_without_librt(monkeypatch, decoder.__file__, name)
    return [decoder, bare] + ([compiled] if compiled is not None else [])
