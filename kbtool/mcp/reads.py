"""Read-only KB connections for the MCP read tools, reused within one server process.

Opening a KB connection costs a file check, the ``mode=ro`` open, two pragmas and the
schema check on every call; a server answering an agent's stream of calls pays it each
time. :class:`ReadPool` keeps the read-only connections it opened and hands each to one
call at a time (a connection is never shared by two threads at once), so concurrent calls
use as many connections as there are calls in flight, and sequential calls reuse one.

Why this is safe:

- the connections are :func:`kbtool.kb.db.open_ro`'s: ``mode=ro`` plus ``PRAGMA
  query_only``; nothing can write through them (the gated writes open their own
  read-write connection, one transaction each);
- they run in autocommit mode and no read transaction is left open between calls (one is
  rolled back if a query left it open), so each call's statements read the newest
  committed state: in WAL mode every new read transaction starts at the last commit, and
  writes made by other processes (``kbtool`` commands, another server) are seen by the
  next call;
- a KB file replaced under the server (a new file at the same path) is noticed by its
  inode: the old connections are closed, not reused.

``KBTOOL_MCP_REUSE=0`` turns reuse off (a fresh connection per call, as before), for
comparison (``benchmarks/mcp.py``) or as an escape hatch.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbtool.kb.db import open_ro
from kbtool.kb.errors import KBError

MAX_IDLE = 8  # idle connections kept; more concurrent calls open (and then close) extra ones


def reuse_enabled() -> bool:
    """Reuse unless ``KBTOOL_MCP_REUSE`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get("KBTOOL_MCP_REUSE", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


class ReadPool:
    """Read-only connections to one KB file, handed out one call at a time."""

    def __init__(self, db_path: str | os.PathLike[str], *, reuse: bool | None = None) -> None:
        self.path = Path(db_path)
        self.reuse = reuse_enabled() if reuse is None else reuse
        self._idle: list[tuple[sqlite3.Connection, tuple[int, int]]] = []
        self._lock = threading.Lock()
        self.opened = 0  # connections opened so far (tests and the benchmark read it)

    def read(self, query: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``query(conn, *args, **kwargs)`` on a read-only connection."""
        ident = self._ident()
        conn = self._take(ident)
        healthy = False
        try:
            result = query(conn, *args, **kwargs)
            healthy = True
            return result
        except KBError:  # an unknown id and the like: the connection is fine
            healthy = True
            raise
        finally:
            self._give_back(conn, ident, healthy)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def _ident(self) -> tuple[int, int]:
        try:
            st = self.path.stat()
        except OSError:
            return (-1, -1)  # open_ro reports the missing file
        return (st.st_dev, st.st_ino)

    def _take(self, ident: tuple[int, int]) -> sqlite3.Connection:
        stale: list[sqlite3.Connection] = []
        conn = None
        if self.reuse:
            with self._lock:
                while self._idle and conn is None:
                    c, cid = self._idle.pop()
                    if cid == ident:
                        conn = c
                    else:
                        stale.append(c)
        for c in stale:
            c.close()
        if conn is None:
            conn = open_ro(self.path)
            with self._lock:
                self.opened += 1
        return conn

    def _give_back(self, conn: sqlite3.Connection, ident: tuple[int, int], healthy: bool) -> None:
        if healthy and self.reuse:
            try:
                if conn.in_transaction:  # never keep a snapshot between calls
                    conn.rollback()
            except sqlite3.Error:
                healthy = False
            else:
                with self._lock:
                    if len(self._idle) < MAX_IDLE:
                        self._idle.append((conn, ident))
                        return
        conn.close()


_POOLS: dict[str, ReadPool] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(db_path: str | os.PathLike[str]) -> ReadPool:
    """The process's pool for the KB at ``db_path`` (one per resolved path)."""
    key = str(Path(db_path).resolve())
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ReadPool(key)
        return pool
