"""Runnable C of a version: ``kbtool code VERSION --all --runnable -o DIR``.

    write_runnable(conn, version_id, out_dir, kb_path=..., progress=...)  # -> RunnableInfo

writes ``DIR/module.c`` (exactly the text of :func:`kbtool.services.code.module_c`: the
readable C with the KB's names is what gets compiled), the generated glue
(:func:`kbtool.lift.runnable.runnable_glue`: globals, data and element segments, import
wrappers, ``kb_names.h``), the fixed runtime and WASI shim (kbtool/lift/runtime) and a
``Makefile``; ``make -C DIR`` then builds ``DIR/program``. Every file is written
atomically (:mod:`kbtool.services.outfile`). Errors are one-line KB errors.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.lift.runnable import PROGRAM, RunnableError, runnable_glue, runtime_files
from kbtool.services import code as code_service
from kbtool.services.outfile import atomic_output, check_output_path, write_atomic


class RunnableUnavailableError(KBError):
    """The version cannot be written as a runnable program (one-line message)."""


@dataclass
class RunnableInfo:
    directory: Path
    functions: int
    files: list[str]
    program: str


def write_runnable(
    conn: sqlite3.Connection,
    version_id: int,
    out_dir: str | Path,
    *,
    kb_path: str | Path | None = None,
    workers: int | None = None,
    opt: str = "-O1",
    progress: Callable[[int, int], None] | None = None,
) -> RunnableInfo:
    """Write the runnable C of ``version_id`` into ``out_dir`` (created if missing)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RunnableUnavailableError(f"cannot write {out}: it exists and is not a directory")
    cm = code_service.code_module(conn, version_id)  # unknown version / no bytes: KB errors
    label = str(queries.get_version(conn, version_id).get("label") or "")
    try:
        glue = runnable_glue(cm.lm, label, opt=opt)
    except RunnableError as exc:
        raise RunnableUnavailableError(f"version {version_id}: {exc}") from None
    files = {**runtime_files(), **glue}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunnableUnavailableError(f"cannot create {out}: {exc.strerror or exc}") from None
    for name in ["module.c", *files]:
        check_output_path(out / name, kb_path)
    n = 0
    chunks = code_service.module_c(conn, version_id, workers=workers, progress=progress)
    try:
        with atomic_output(out / "module.c") as fh:
            for chunk in chunks:
                fh.write(chunk)
                n += 1
    finally:
        chunks.close()
    for name, text in files.items():
        write_atomic(out / name, text)
    return RunnableInfo(out, max(n - 1, 0), ["module.c", *files], str(out / PROGRAM))
