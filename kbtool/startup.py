"""A short command's start-up: the dataclasses' generated methods compiled once, kept on disk.

``@dataclass`` writes the source of each class's ``__init__``/``__repr__``/``__eq__``... and
compiles it when the class is created; a plain ``kbtool ingest`` creates ~30 dataclasses
(99 functions) on import, and compiling their text is ~7 ms of its ~45 ms of imports. While
:func:`compiled_dataclass_methods` is active, :func:`dataclasses._create_fn` takes the code
compiled from the very same text from a cache file (one per Python bytecode version), and
compiles, then remembers, only a text it has not seen; the function made from it is the one
``exec`` would have made (same code, same globals and closure), so classes behave the same.

The cache (``$KBTOOL_STARTUP_CACHE`` if set, ``off`` to disable; else
``$XDG_CACHE_HOME/kbtool/startup``) is read only when it belongs to this user and no one else
may write it, as Python's own ``__pycache__`` trust rests on the directory's permissions.
Only CPython 3.11's ``_create_fn`` is replaced (its text is built here exactly as there);
another Python runs as before.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: bound on the texts kept (a cache only ever grows by the dataclasses kbtool imports)
MAX_ENTRIES = 4000
_OFF = ("0", "off", "no", "false", "none", "")


def cache_file(profile: str) -> str | None:
    """The cache file of ``profile`` for this Python's bytecode; None when switched off or
    on another Python than CPython 3.11."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return None
    env = os.environ.get("KBTOOL_STARTUP_CACHE")
    if env is not None:
        if env.strip().lower() in _OFF:
            return None
        base = env
    else:
        root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(root, "kbtool", "startup")
    from importlib.util import MAGIC_NUMBER

    return os.path.join(base, f"dataclass-fns-{profile}-{MAGIC_NUMBER.hex()}.marshal")


def _load(path: str) -> dict[str, Any]:
    """The cached ``{text: code}``; empty when missing, unreadable, foreign or writable by others."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return {}
            table = marshal.loads(fh.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    code_type = type(_load.__code__)
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, code_type) for k, v in table.items()
    ):
        return {}
    return table


def _save(path: str, table: dict[str, Any]) -> None:
    """Merge ``table`` into the file (another process may have added texts), atomically."""
    merged = {**_load(path), **table}
    if len(merged) > MAX_ENTRIES:
        merged = dict(list(table.items())[:MAX_ENTRIES])
    import tempfile  # (only when a new text is kept: ~1 ms of imports)

    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".dataclass-fns.", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(marshal.dumps(merged))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _cached_create_fn(table: dict[str, Any], new: dict[str, Any]) -> Any:
    """A ``dataclasses._create_fn`` (CPython 3.11's, line for line) compiling each text once."""
    missing = dataclasses.MISSING

    def _create_fn(name, args, body, *, globals=None, locals=None, return_type=missing):  # noqa: A002
        if locals is None:
            locals = {}
        return_annotation = ""
        if return_type is not missing:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        args = ",".join(args)
        body = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({args}){return_annotation}:\n{body}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        code = table.get(txt)
        if code is None:
            code = table[txt] = new[txt] = compile(txt, "<string>", "exec")
        ns: dict[str, Any] = {}
        exec(code, globals, ns)  # noqa: S102 - the code dataclasses itself would exec
        return ns["__create_fn__"](**locals)

    return _create_fn


class CompiledDataclassMethods:
    """While installed, dataclasses take their generated methods' code from the cache of
    ``profile`` (one file per kind of command: each loads only what it creates); the texts
    compiled meanwhile are added to the file by :meth:`uninstall` (idempotent)."""

    def __init__(self, profile: str) -> None:
        self.path = cache_file(profile)
        self._original: Any = None
        self._table: dict[str, Any] = {}
        self._new: dict[str, Any] = {}

    def install(self) -> CompiledDataclassMethods:
        original = getattr(dataclasses, "_create_fn", None)
        if self.path is not None and original is not None and self._original is None:
            self._original = original
            self._table = _load(self.path)
            dataclasses._create_fn = _cached_create_fn(self._table, self._new)
        return self

    def uninstall(self) -> None:
        if self._original is None:
            return
        dataclasses._create_fn = self._original
        self._original = None
        if self._new and self.path is not None:
            _save(self.path, self._table)
            self._new.clear()


@contextmanager
def compiled_dataclass_methods(profile: str) -> Iterator[None]:
    """:class:`CompiledDataclassMethods` installed for the ``with`` block."""
    cache = CompiledDataclassMethods(profile).install()
    try:
        yield
    finally:
        cache.uninstall()
