"""Connections to a KB file: read-write (WAL, busy timeout) and read-only (by construction)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from kbtool.kb.errors import KBError, KBLockedError, KBMissingError
from kbtool.kb.schema import check_schema, ensure_schema

DEFAULT_DB = "kbtool.db"
BUSY_TIMEOUT_MS = 30_000


def default_db_path() -> str:
    """``$KBTOOL_DB`` or ``./kbtool.db``."""
    return os.environ.get("KBTOOL_DB") or DEFAULT_DB


def now() -> str:
    """UTC timestamp for records; ``KBTOOL_FROZEN_TIME`` pins it (tests, snapshots)."""
    frozen = os.environ.get("KBTOOL_FROZEN_TIME")
    if frozen:
        return frozen
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def open_rw(path: str | os.PathLike[str], *, create: bool = True) -> sqlite3.Connection:
    """Open (and create/migrate) a KB for writing. Autocommit mode: callers use ``transaction``."""
    p = Path(path)
    if not create and not p.exists():
        raise KBMissingError(f"no KB at {p} (create one with `kbtool ingest FILE` or `kbtool demo`)")
    if p.exists() and p.is_dir():
        raise KBError(f"{p} is a directory, not a KB file")
    try:
        conn = sqlite3.connect(str(p), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                               check_same_thread=False)
        _configure(conn)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            conn.close()
            raise _translate(exc, p) from None
        except sqlite3.DatabaseError:
            conn.close()
            from kbtool.kb.errors import NotAKBError
            raise NotAKBError(f"{p} is not a kbtool KB (not an SQLite database)") from None
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        try:
            ensure_schema(conn, str(p))
        except sqlite3.OperationalError as exc:
            conn.close()
            raise _translate(exc, p) from None
        except BaseException:
            conn.close()
            raise
        return conn
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None


def open_ro(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open a KB read-only: ``mode=ro`` URI plus ``PRAGMA query_only``; nothing can write."""
    p = Path(path)
    if not p.exists():
        raise KBMissingError(f"no KB at {p} (create one with `kbtool ingest FILE` or `kbtool demo`)")
    if p.is_dir():
        raise KBError(f"{p} is a directory, not a KB file")
    uri = "file:" + quote(str(p.resolve())) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                               timeout=BUSY_TIMEOUT_MS / 1000)
        _configure(conn)
        conn.execute("PRAGMA query_only = ON")
        check_schema(conn, str(p))
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None
    except BaseException:
        raise
    return conn


def _translate(exc: sqlite3.OperationalError, p: Path) -> KBError:
    msg = str(exc)
    if "locked" in msg or "busy" in msg:
        return KBLockedError(f"{p} is locked by another process; try again when it finishes")
    return KBError(f"cannot open {p}: {msg}")


@contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool = True) -> Iterator[sqlite3.Connection]:
    """One atomic unit: ``BEGIN IMMEDIATE`` at top level, a SAVEPOINT when nested."""
    if conn.in_transaction:
        name = f"sp_{id(conn)}_{os.getpid()}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    try:
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    except sqlite3.OperationalError as exc:
        raise _translate(exc, Path("KB")) from None
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def connection(kb: str | os.PathLike[str] | sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Accept a KB path or an open connection: yield ``kb`` itself, or a fresh read-only one
    closed afterwards (library views take either)."""
    if isinstance(kb, sqlite3.Connection):
        yield kb
        return
    conn = open_ro(kb)
    try:
        yield conn
    finally:
        conn.close()
