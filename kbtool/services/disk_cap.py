"""The bounds of kbtool's on-disk caches (kept diff answers, kept code preparations).

Each cache keeps at most ``per_kb`` files of one KB (the least recently used go first;
other KBs' files stay), and, across all KBs, drops files not used for :data:`MAX_AGE`
seconds and the least recently used beyond ``total_bytes``: a KB deleted or never opened
again stops costing disk space. A read marks its file used (:func:`touch`), so a KB in use
keeps its answers however old they are.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from kbtool.services.detached import OFF

MAX_AGE = 30 * 24 * 3600.0  # a cache file unused this long goes (its KB is likely gone)
STALE_TMP = 3600.0  # a temporary file this old was left by a process that died writing
FRAME_DIGEST = 16  # bytes of the BLAKE2b digest in front of a kept file's payload
MISSING: Any = object()  # read_framed: nothing usable in the file


def cache_dir(env_name: str, name: str) -> Path | None:
    """Where a cache keeps its files: ``$env_name`` if set (None when it says off), else
    ``$XDG_CACHE_HOME/kbtool/<name>`` (``~/.cache`` without it)."""
    env = os.environ.get(env_name)
    if env is not None:
        return None if env.strip().lower() in OFF else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kbtool" / name


def write_framed(path: Path, magic: bytes, value: Any, tmp_prefix: str) -> bool:
    """Keep ``value`` (marshalled) in ``path`` as ``magic + BLAKE2b-128 + payload``,
    atomically (a temporary file in the same directory, renamed; removed if the write
    fails). False when marshal cannot keep it; raises OSError."""
    import hashlib
    import marshal
    import tempfile

    try:
        payload = marshal.dumps(value)
    except (ValueError, TypeError):  # a value marshal cannot keep: nothing is kept
        return False
    digest = hashlib.blake2b(payload, digest_size=FRAME_DIGEST).digest()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=tmp_prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(magic)
            f.write(digest)
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def read_framed(path: Path, magic: bytes) -> Any:
    """The value :func:`write_framed` kept in ``path``; :data:`MISSING` when the file is
    absent, unreadable, foreign (another magic), truncated or damaged (digest)."""
    import hashlib
    import marshal

    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return MISSING
    head = len(magic) + FRAME_DIGEST
    if len(blob) < head or not blob.startswith(magic):
        return MISSING
    payload = memoryview(blob)[head:]
    if hashlib.blake2b(payload, digest_size=FRAME_DIGEST).digest() != blob[len(magic) : head]:
        return MISSING
    try:
        return marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return MISSING


def touch(path: Path) -> None:
    """Mark ``path`` used now (its modification time; errors ignored)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _entries(directory: Path, pattern: str) -> list[tuple[float, int, Path]]:
    out = []
    for p in directory.glob(pattern):
        try:
            st = p.stat()
        except OSError:
            continue  # removed by another process meanwhile
        out.append((st.st_mtime, st.st_size, p))
    out.sort()
    return out


def prune(
    directory: Path,
    *,
    kb_pattern: str,
    all_pattern: str,
    tmp_pattern: str,
    per_kb: int,
    total_bytes: int,
    now: float | None = None,
) -> None:
    """Apply the bounds after a write: the KB's files (``kb_pattern``) down to ``per_kb``;
    every file (``all_pattern``) unused for :data:`MAX_AGE` removed, then the least
    recently used until the rest fit in ``total_bytes``; temporary files (``tmp_pattern``)
    older than :data:`STALE_TMP` removed."""
    now = time.time() if now is None else now
    mine = _entries(directory, kb_pattern)
    for _t, _s, p in mine[: max(0, len(mine) - per_kb)]:
        p.unlink(missing_ok=True)
    every = [e for e in _entries(directory, all_pattern) if e[2].exists()]
    size = sum(s for _t, s, _p in every)
    for t, s, p in every:
        if now - t > MAX_AGE or size > total_bytes:
            p.unlink(missing_ok=True)
            size -= s
    for t, _s, p in _entries(directory, tmp_pattern):
        if now - t > STALE_TMP:
            p.unlink(missing_ok=True)
