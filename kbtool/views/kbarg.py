"""Accept either a KB path or an open connection in library views (read-only when a path)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from kbtool.kb.db import open_ro


@contextmanager
def connection(kb: str | os.PathLike[str] | sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Yield a connection: ``kb`` itself, or a fresh read-only one closed afterwards."""
    if isinstance(kb, sqlite3.Connection):
        yield kb
        return
    conn = open_ro(kb)
    try:
        yield conn
    finally:
        conn.close()
