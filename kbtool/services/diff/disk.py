"""Computed diff answers kept on disk as JSON files (:mod:`kbtool.services.diff.cache`
describes the key and what is kept); every error is a miss."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from kbtool.services import disk_cap
from kbtool.services.diff.triage import TRIAGE_RULES

__all__ = ["DISK_FILES", "DISK_FORMAT", "DiskAnswers", "disk_dir", "kb_prefix"]

DISK_FILES = 64  # answers kept on disk per KB file (another KB's answers never count here)
TOTAL_BYTES = 4 << 30  # all KBs' answers together (an ffmpeg pair is ~7.5 MB)
DISK_FORMAT = 2  # bump when the answers' shape or the algorithms change


def disk_dir() -> Path | None:
    """Where computed answers are kept (None: not kept; ``KBTOOL_DIFF_CACHE_DIR``)."""
    return disk_cap.cache_dir("KBTOOL_DIFF_CACHE_DIR", "diffs")


class DiskAnswers:
    """Computed diff answers as files (see the module docstring); every error is a miss."""

    def __init__(self, directory: Path | None, max_files: int = DISK_FILES) -> None:
        self.directory = directory
        self.max_files = max_files

    def _path(self, key: tuple, modules: tuple) -> Path | None:
        if self.directory is None:
            return None
        text = json.dumps([DISK_FORMAT, TRIAGE_RULES, list(modules), repr(key)])
        digest = hashlib.sha256(text.encode()).hexdigest()[:40]
        return self.directory / f"{kb_prefix(key[0])}-{digest}.json"

    def get(self, key: tuple, modules: tuple) -> dict[str, Any] | None:
        raw = self.get_bytes(key, modules)
        if raw is None:
            return None
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:  # written by json (a number orjson does not take: NaN, a huge int)
                value = json.loads(raw)
            except ValueError:
                return None
        return value if isinstance(value, dict) else None

    def has(self, key: tuple, modules: tuple) -> bool:
        """An answer's file exists (not read: a preparation only asks what is missing)."""
        path = self._path(key, modules)
        return path is not None and path.is_file()

    def put(self, key: tuple, modules: tuple, value: dict[str, Any]) -> None:
        if self.directory is None:
            return
        try:  # orjson: a ffmpeg report in 10 ms instead of 80
            data = orjson.dumps(value)
        except TypeError:  # an int beyond 64 bits, a key that is not a string
            data = json.dumps(value, separators=(",", ":")).encode()
        self.put_bytes(key, modules, data)

    def get_bytes(self, key: tuple, modules: tuple) -> bytes | None:
        """The kept file's bytes as written by :meth:`put_bytes` (not parsed), or None."""
        path = self._path(key, modules)
        if path is None:
            return None
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        disk_cap.touch(path)
        return raw

    def put_bytes(self, key: tuple, modules: tuple, data: bytes) -> None:
        """Keep ``data`` as the file of ``key`` (atomically: a reader sees all or nothing)."""
        path = self._path(key, modules)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".diff-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._prune(path.name.split("-", 1)[0])
        except OSError:
            pass  # a full or read-only disk only costs the next process a computation

    def _prune(self, prefix: str) -> None:
        """At most ``max_files`` answers of one KB, :data:`TOTAL_BYTES` in all
        (:func:`kbtool.services.disk_cap.prune`)."""
        assert self.directory is not None
        disk_cap.prune(
            self.directory,
            kb_pattern=f"{prefix}-*.json",
            all_pattern="*.json",
            tmp_pattern=".diff-*.tmp",
            per_kb=self.max_files,
            total_bytes=TOTAL_BYTES,
        )


def kb_prefix(db: object) -> str:
    """The file-name prefix of one KB's answers (its path; the cap is per KB)."""
    path = db[0] if isinstance(db, tuple) and db else db
    return hashlib.sha256(repr(path).encode()).hexdigest()[:12]
