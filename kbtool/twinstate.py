"""The state of a package's compiled twin on disk, shared by the twins' pickers
(:mod:`kbtool.wasm.active`, :mod:`kbtool.analysis.datawalk_active`,
:mod:`kbtool.identity.matcher_active`) and the build (:mod:`kbtool.lift._build`): standard
library only, so each picker stays cheap to import."""

from __future__ import annotations

import hashlib
import importlib.machinery
from pathlib import Path

_EXT = (".so", ".pyd")


def package_digest(pkg: Path) -> str:
    """SHA-256 over every part of the package ``pkg``: each part's path (relative to the
    package) and bytes, so renaming, adding or editing a part counts."""
    h = hashlib.sha256()
    for f in sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts):
        data = f.read_bytes()
        h.update(f.relative_to(pkg).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def package_state(here: Path, compiled_name: str, stamp: Path, source: Path) -> str:
    """``absent``, ``stale`` (built from another ``source`` package or for another
    interpreter) or ``ready``: the twin ``compiled_name`` next to ``source`` in ``here``,
    its digest in ``stamp``."""
    files = [f for f in sorted(here.glob(f"{compiled_name}*")) if f.is_file() and f.suffix in _EXT]
    sub = here / compiled_name
    files += sorted(f for f in sub.rglob("*") if f.suffix in _EXT) if sub.is_dir() else []
    if not files or not stamp.is_file():
        return "absent"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if sub / ("__init__" + suffix) not in files:
        return "stale"
    return "ready" if stamp.read_text().strip() == package_digest(source) else "stale"
