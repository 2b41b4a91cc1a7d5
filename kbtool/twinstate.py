"""The state of a package's compiled twin on disk, shared by the twins' pickers
(:mod:`kbtool.wasm.active`, :mod:`kbtool.analysis.datawalk_active`,
:mod:`kbtool.identity.matcher_active`) and the build (:mod:`kbtool.lift._build`): standard
library only, so each picker stays cheap to import.

:func:`package_digest` hashes the sources only when they may have changed since it last did:
it keeps, per package, each part's (size, mtime_ns, ctime_ns, inode) beside the digest they
gave (``$KBTOOL_TWIN_CACHE_DIR``, default ``$XDG_CACHE_HOME/kbtool/twins``; ``off`` turns it
off) and returns that digest while every part still stats the same. An edit changes the
ctime (which no ``touch`` sets back) even when it keeps the size and the mtime; a part whose
times are within :data:`RACY_NS` of the moment it was recorded is not trusted (a coarse
clock could give the same times to an edit made just after), so it is hashed again until it
is older. No record, an unreadable one or a read-only cache: it hashes, as it always did."""

from __future__ import annotations

import importlib.machinery
import os
import time
from pathlib import Path

_EXT = (".so", ".pyd")
CACHE_ENV = "KBTOOL_TWIN_CACHE_DIR"
#: a part changed this close to (or after) its record's time is hashed again (coarse clocks)
RACY_NS = 3_000_000_000
_MAGIC = "kbtool-twinstate 1"


def _parts(pkg: Path) -> list[Path]:
    return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)


def _hash(pkg: Path, parts: list[Path]) -> str:
    """SHA-256 over ``parts``: each one's path (relative to ``pkg``) and bytes."""
    import hashlib

    h = hashlib.sha256()
    for f in parts:
        data = f.read_bytes()
        h.update(f.relative_to(pkg).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _record_path(pkg: Path) -> Path | None:
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "no", "false", "none"):
            return None
        base = Path(env)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(cache) / "kbtool" / "twins"
    import hashlib  # (not zlib's crc32: an extension module nothing else on the ingest loads)

    key = os.path.abspath(pkg).encode("utf-8", "surrogateescape")
    return base / f"{pkg.name}-{hashlib.sha256(key).hexdigest()[:8]}-{len(key)}.txt"


def _stats(pkg: Path, parts: list[Path]) -> list[str] | None:
    """One line per part (path, size, mtime_ns, ctime_ns, inode), or None when a path
    cannot be written on a line."""
    out = []
    cut = len(str(pkg)) + 1  # each part's str() starts with the package's and a separator
    for f in parts:
        name = str(f)
        rel = name[cut:].replace(os.sep, "/") if os.sep != "/" else name[cut:]
        if "\t" in rel or "\n" in rel or "\r" in rel:
            return None
        st = os.stat(name)
        out.append(f"{rel}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_ctime_ns}\t{st.st_ino}")
    return out


def _recorded(path: Path, pkg: Path, lines: list[str]) -> str | None:
    """The digest recorded for exactly these ``lines``, if none of them is racy."""
    try:
        head, at, digest, *rest = path.read_text(encoding="utf-8").split("\n")
    except (OSError, ValueError):
        return None
    if head != f"{_MAGIC}\t{os.path.abspath(pkg)}" or rest != [*lines, ""] or not at.isdigit():
        return None
    young = int(at) - RACY_NS
    for line in lines:
        _rel, _size, mtime, ctime, _ino = line.split("\t")
        if int(mtime) >= young or int(ctime) >= young:
            return None
    return digest


def _keep(path: Path, pkg: Path, at: int, digest: str, lines: list[str]) -> None:
    text = "\n".join([f"{_MAGIC}\t{os.path.abspath(pkg)}", str(at), digest, *lines, ""])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache: hash next time too
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def package_digest(pkg: Path) -> str:
    """SHA-256 over every part of the package ``pkg``: each part's path (relative to the
    package) and bytes, so renaming, adding or editing a part counts. Read from the record
    of a previous call while every part stats the same (module docstring)."""
    parts = _parts(pkg)
    path = _record_path(pkg)
    lines = _stats(pkg, parts) if path is not None else None
    if path is None or lines is None:
        return _hash(pkg, parts)
    digest = _recorded(path, pkg, lines)
    if digest is not None:
        return digest
    at = time.time_ns()
    digest = _hash(pkg, parts)
    if _stats(pkg, parts) == lines:  # unchanged while it was read
        _keep(path, pkg, at, digest, lines)
    return digest


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
