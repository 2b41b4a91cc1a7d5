"""Small KBs for tests and benchmarks, written through the real code paths.

Rows go through ``kbtool.kb.store`` (named columns, so a new schema column cannot shift
values), names through ``kbtool.kb.gate``. Nothing here writes positional SQL.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction
from kbtool.services.demo import build_demo

DEMO_TIME = "2026-01-01T00:00:00.000000Z"


@contextmanager
def frozen_time(stamp: str = DEMO_TIME) -> Iterator[None]:
    """Pin ``kbtool.kb.db.now()`` to ``stamp`` while the block runs."""
    old = os.environ.get("KBTOOL_FROZEN_TIME")
    os.environ["KBTOOL_FROZEN_TIME"] = stamp
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("KBTOOL_FROZEN_TIME", None)
        else:
            os.environ["KBTOOL_FROZEN_TIME"] = old


def function_row(version_id: int, idx: int, stable_id: str, **cols: Any) -> dict[str, Any]:
    """A ``functions`` row of a defined function with no body facts (override any column)."""
    return {
        "version_id": version_id,
        "idx": idx,
        "stable_id": stable_id,
        "imported": 0,
        "type_sig": "() -> ()",
        **cols,
    }


def facts_row(version_id: int, idx: int, **cols: Any) -> dict[str, Any]:
    """A ``facts`` row of a function that calls, references and loops over nothing."""
    return {
        "version_id": version_id,
        "idx": idx,
        "calls": "[]",
        "call_indirect": 0,
        "ref_funcs": "[]",
        "consts": "[]",
        "strings": "[]",
        "globals_used": "[]",
        "mem_ops": "[]",
        "atomic_sites": 0,
        "loops": 0,
        "ops": b"",
        "table_slots": "[]",
        **cols,
    }


def bare_kb(path: Path, stable_ids: list[str], label: str = "v1") -> sqlite3.Connection:
    """A KB with one version whose defined functions carry ``stable_ids`` (index order);
    returns the open read-write connection."""
    conn = open_rw(path)
    with transaction(conn):
        vid = store.insert_version(
            conn,
            {
                "label": label,
                "sha256": "x",
                "size": 0,
                "imported_functions": 0,
                "defined_functions": len(stable_ids),
                "exported_functions": 0,
            },
        )
        store.insert_functions(conn, (function_row(vid, i, s) for i, s in enumerate(stable_ids)))
        store.insert_facts(conn, (facts_row(vid, i) for i in range(len(stable_ids))))
    return conn


def build_empty_kb(path: Path, stamp: str = DEMO_TIME) -> Path:
    """A KB with the schema and nothing else."""
    with frozen_time(stamp):
        open_rw(path).close()
    return path


def checkpoint(path: Path) -> None:
    """Fold the WAL into the main file, so a plain file copy is the whole KB."""
    conn = open_rw(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def build_demo_kb(path: Path, stamp: str = DEMO_TIME) -> Path:
    """The demo KB of ``kbtool demo`` (two real zstd releases), timestamps pinned, WAL folded."""
    with frozen_time(stamp):
        build_demo(path, echo=lambda _msg: None)
        checkpoint(path)
    return path
