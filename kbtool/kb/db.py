"""Connections to a KB file: read-write (WAL, busy timeout) and read-only (by construction)."""

from __future__ import annotations

import atexit
import os
import sqlite3
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from kbtool.kb.errors import (
    KBError,
    KBFullError,
    KBLockedError,
    KBMissingError,
    KBReadOnlyError,
    NotAKBError,
    SchemaVersionError,
)
from kbtool.kb.schema import SCHEMA_VERSION, check_schema, ensure_schema, read_schema_version

DEFAULT_DB = "kbtool.db"
BUSY_TIMEOUT_MS = 30_000
SQLITE_MAGIC = b"SQLite format 3\x00"


def default_db_path() -> str:
    """``$KBTOOL_DB`` or ``./kbtool.db``."""
    return os.environ.get("KBTOOL_DB") or DEFAULT_DB


def now() -> str:
    """UTC timestamp for records; ``KBTOOL_FROZEN_TIME`` pins it (tests, snapshots)."""
    frozen = os.environ.get("KBTOOL_FROZEN_TIME")
    if frozen:
        return frozen
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


CLOSE_BUSY_MS = 2_000  # how long a closing writer waits for readers of an older snapshot


class RWConnection(sqlite3.Connection):
    """A read-write KB connection that checkpoints the WAL into the KB file when it closes.

    SQLite checkpoints on close only when the closing connection is the last one; a reader
    (``kbtool serve``, the TUI, the MCP read pool) still open then, and read-only connections
    never checkpoint, so a name written meanwhile stayed in ``kbtool.db-wal`` after every
    kbtool process had exited. Every writer therefore checkpoints itself: on ``close()``,
    when garbage-collected, and at interpreter exit (:func:`_checkpoint_open_writers`).
    """

    _kb_closed = False

    def close(self) -> None:
        if not self._kb_closed:
            self._kb_closed = True
            _OPEN_RW.discard(self)
            checkpoint(self)
        super().close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a finaliser must not raise
            pass


_OPEN_RW: weakref.WeakSet[RWConnection] = weakref.WeakSet()


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Copy every committed page of the WAL into the KB file; True when nothing is left only
    in the WAL. Never raises (it runs while closing).

    A passive checkpoint first (it never waits); when a reader of an older snapshot kept some
    frames out, a FULL one waiting at most :data:`CLOSE_BUSY_MS` for it; then a TRUNCATE that
    does not wait, so the ``-wal`` file is also emptied when nobody is reading.
    """
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # what closing would do; a checkpoint needs no open unit
        conn.execute("PRAGMA busy_timeout = 0")
        busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if log > 0 and done < log:
            conn.execute(f"PRAGMA busy_timeout = {CLOSE_BUSY_MS}")
            busy, log, done = conn.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
            conn.execute("PRAGMA busy_timeout = 0")
        whole = log <= 0 or done >= log
        if whole:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return whole
    except sqlite3.Error:
        return False


@atexit.register
def _checkpoint_open_writers() -> None:
    """The safety net: writers still open when the interpreter exits checkpoint and close."""
    for conn in list(_OPEN_RW):
        try:
            conn.close()
        except sqlite3.Error:
            pass


def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _unsynced_first_write(conn: sqlite3.Connection) -> None:
    """A file created by this connection and still without a page: its switch to WAL
    (SQLite's one write of page 1, in a rollback-journal transaction of its own) kept in
    memory and written without the journal file's create, four syncs and unlink (~20-40 ms
    wall on a busy disk, issue 30.4). That write protects no content: a crash before the
    first checkpoint leaves an empty file (SQLite then drops the WAL beside it) or, at
    worst, a torn page 1 of a file that held nothing; every committed transaction is synced
    exactly as before (WAL, ``synchronous = NORMAL``: at the checkpoint, which syncs page 1
    with the rest)."""
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA journal_mode = MEMORY")


def open_rw(
    path: str | os.PathLike[str], *, create: bool = True, page_size: int | None = None
) -> sqlite3.Connection:
    """Open (and create/migrate) a KB for writing. Autocommit mode: callers use ``transaction``.

    An existing file is looked at read-only first (:func:`inspect_kb`): a file that is not
    a KB, or a KB of a newer kbtool, is refused byte-for-byte untouched (no WAL switch, no
    ``-wal``/``-shm`` files). With ``create=False`` a missing or empty file is refused too.
    A KB that cannot be written (permissions, immutable file, read-only file system) is
    refused with :class:`KBReadOnlyError` before any write is tried. ``page_size``: that of
    a file created here (SQLite's default otherwise).
    """
    p = Path(path)
    if not create and not p.exists():
        raise KBMissingError(
            f"no KB at {p} (create one with `kbtool ingest FILE` or `kbtool demo`)"
        )
    if p.exists() and p.is_dir():
        raise KBError(f"{p} is a directory, not a KB file")
    created = not p.exists()  # (the file SQLite makes below holds nothing yet)
    if not created:
        inspect_kb(p, allow_empty=create)
    _require_writable(p)
    try:
        conn = sqlite3.connect(
            str(p),
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
            factory=RWConnection,
        )
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None
    _OPEN_RW.add(conn)
    try:
        _configure(conn)
        if page_size:  # a new file only (an existing one keeps its own)
            conn.execute(f"PRAGMA page_size = {int(page_size)}")
        if created and conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            # (still no page: no other process made it a KB since the check above)
            _unsynced_first_write(conn)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        ensure_schema(conn, str(p))
    except sqlite3.OperationalError as exc:
        conn.close()
        raise _translate(exc, p) from None
    except sqlite3.DatabaseError:
        conn.close()
        raise NotAKBError(f"{p} is not a kbtool KB (not an SQLite database)") from None
    except BaseException:
        conn.close()
        raise
    return conn


def inspect_kb(p: Path, *, allow_empty: bool = True) -> int:
    """The schema version of the existing file ``p``, read without changing anything.

    Reads the SQLite header, then the ``meta`` table over a read-only connection (an
    ``immutable`` one when the file is in WAL mode without a ``-wal`` file, so that not
    even a ``-shm`` file is created). Returns 0 for an empty file or database (allowed only
    with ``allow_empty``); raises :class:`NotAKBError` or :class:`SchemaVersionError`.
    """
    try:
        with open(p, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise KBError(f"cannot read {p}: {exc.strerror or exc}") from None
    wal = Path(f"{p}-wal")
    if not head and not (wal.exists() and wal.stat().st_size):
        if allow_empty:
            return 0
        raise NotAKBError(f"{p} is not a kbtool KB (an empty file)")
    if head and not head.startswith(SQLITE_MAGIC):
        raise NotAKBError(f"{p} is not a kbtool KB (not an SQLite database)")
    uri = _peek_uri(p, head)
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None
    try:
        conn.execute("PRAGMA query_only = ON")
        version = read_schema_version(conn)
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None
    except sqlite3.DatabaseError as exc:
        raise NotAKBError(f"{p} is not a kbtool KB ({exc})") from None
    finally:
        conn.close()
    if version is None:
        raise NotAKBError(f"{p} is not a kbtool KB (it has other tables)")
    if version == 0 and not allow_empty:
        raise NotAKBError(f"{p} is not a kbtool KB (an empty database)")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{p} has KB schema {version}, newer than this kbtool ({SCHEMA_VERSION}): upgrade kbtool"
        )
    return version


def _peek_uri(p: Path, head: bytes) -> str:
    """A read-only URI for ``p`` (its first bytes ``head``) that creates nothing beside it:
    ``immutable`` for a WAL-mode file without a ``-wal`` file (a ``mode=ro`` reader would
    make ``-wal``/``-shm``), else ``mode=ro``."""
    immutable = len(head) > 18 and head[18] == 2 and not Path(f"{p}-wal").exists()
    return "file:" + quote(str(p.resolve())) + ("?immutable=1" if immutable else "?mode=ro")


def version_labels(p: Path) -> set[str]:
    """The version labels of the KB file ``p`` at any schema up to this one (every schema
    has ``versions.label``), read without changing anything (:func:`inspect_kb` first): what
    tells a command whose KB an older file is before it migrates it."""
    inspect_kb(p, allow_empty=False)
    try:
        with open(p, "rb") as fh:
            head = fh.read(100)
        conn = sqlite3.connect(
            _peek_uri(p, head), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        try:
            return {r[0] for r in conn.execute("SELECT label FROM versions")}
        finally:
            conn.close()
    except OSError as exc:
        raise KBError(f"cannot read {p}: {exc.strerror or exc}") from None
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None


def _require_writable(p: Path) -> None:
    """Refuse a KB that cannot be written before a write fails halfway through a command.

    ``os.access`` honours what root's permission bypass does not: immutable files and
    read-only file systems. The directory must be writable too while the KB has no
    ``-wal``/``-shm`` files (SQLite creates them beside the KB).
    """
    if p.exists() and not os.access(p, os.W_OK):
        raise KBReadOnlyError(f"{p} is read-only: kbtool cannot write to it")
    parent = p.parent if str(p.parent) else Path(".")
    sidecars = (Path(f"{p}-wal"), Path(f"{p}-shm"))
    if not all(s.exists() for s in sidecars) and not os.access(parent, os.W_OK):
        raise KBReadOnlyError(
            f"{parent} is read-only: kbtool cannot create {p.name} or its -wal/-shm files there"
        )


def open_ro(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open a KB read-only: ``mode=ro`` URI plus ``PRAGMA query_only``; nothing can write."""
    p = Path(path)
    if not p.exists():
        raise KBMissingError(
            f"no KB at {p} (create one with `kbtool ingest FILE` or `kbtool demo`)"
        )
    if p.is_dir():
        raise KBError(f"{p} is a directory, not a KB file")
    if not Path(f"{p}-wal").exists():
        # even a mode=ro reader creates -wal/-shm beside a WAL-mode file: look first, so a
        # foreign file is refused with nothing created next to it
        inspect_kb(p, allow_empty=False)
    uri = "file:" + quote(str(p.resolve())) + ("?immutable=1" if _unwritable_wal(p) else "?mode=ro")
    try:
        conn = sqlite3.connect(
            uri,
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        _configure(conn)
        conn.execute("PRAGMA query_only = ON")
        check_schema(conn, str(p))
    except sqlite3.OperationalError as exc:
        raise _translate(exc, p) from None
    except BaseException:
        raise
    return conn


def _unwritable_wal(p: Path) -> bool:
    """A WAL-mode KB without ``-wal``/``-shm`` files in a directory nobody can write (a
    read-only medium or mount): SQLite cannot create the ``-shm`` a ``mode=ro`` reader needs,
    and no writer can exist, so the file is read as immutable."""
    if Path(f"{p}-wal").exists() or Path(f"{p}-shm").exists():
        return False
    parent = p.parent if str(p.parent) else Path(".")
    if os.access(parent, os.W_OK):
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return False
    return len(head) > 18 and head[18] == 2


def _translate(exc: sqlite3.Error, p: Path | str) -> KBError:
    """A one-line KB error for an SQLite failure (by its result code where SQLite gives one)."""
    msg = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
    code = getattr(exc, "sqlite_errorname", "") or ""
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in msg or "busy" in msg:
        return KBLockedError(f"{p} is locked by another process; try again when it finishes")
    if code.startswith("SQLITE_READONLY") or "readonly database" in msg:
        return KBReadOnlyError(f"{p} is read-only: kbtool cannot write to it ({msg})")
    if code == "SQLITE_FULL" or "disk is full" in msg:
        return KBFullError(f"cannot write {p}: the disk is full; nothing was written")
    if code.startswith("SQLITE_IOERR"):
        return KBError(
            f"cannot write {p}: {msg} (is the disk full or failing?); nothing was written"
        )
    return KBError(f"cannot open {p}: {msg}")


def _db_file(conn: sqlite3.Connection) -> str:
    """The KB path of ``conn`` for messages (``KB`` when SQLite cannot tell)."""
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
        return str(row[2]) if row and row[2] else "KB"
    except sqlite3.Error:
        return "KB"


_TRANSLATED = (sqlite3.OperationalError, sqlite3.DatabaseError)


def _quiet(conn: sqlite3.Connection, sql: str) -> None:
    """Run a rollback statement, ignoring failures: after SQLITE_FULL or an I/O error SQLite
    may already have rolled the transaction back ("cannot rollback - no transaction is
    active"), and the first error is the one worth reporting."""
    try:
        conn.execute(sql)
    except sqlite3.Error:
        pass


def _is_write_failure(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorname", "") or ""
    return code.startswith(
        (
            "SQLITE_READONLY",
            "SQLITE_FULL",
            "SQLITE_IOERR",
            "SQLITE_BUSY",
            "SQLITE_LOCKED",
            "SQLITE_CANTOPEN",
        )
    ) or any(m in str(exc) for m in ("readonly database", "disk is full", "database is locked"))


@contextmanager
def transaction(
    conn: sqlite3.Connection, *, immediate: bool = True
) -> Iterator[sqlite3.Connection]:
    """One atomic unit: ``BEGIN IMMEDIATE`` at top level, a SAVEPOINT when nested.

    On any exception the unit is rolled back (a failing rollback never hides the first
    error); an SQLite write failure (read-only KB, disk full, I/O error, lock timeout)
    leaves as a one-line :class:`KBError` subclass instead of a raw ``sqlite3`` error.
    """
    if conn.in_transaction:
        name = f"sp_{id(conn)}_{os.getpid()}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                _quiet(conn, f"ROLLBACK TO {name}")
                _quiet(conn, f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    try:
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    except sqlite3.OperationalError as exc:
        raise _translate(exc, _db_file(conn)) from None
    try:
        yield conn
    except _TRANSLATED as exc:
        if conn.in_transaction:
            _quiet(conn, "ROLLBACK")
        if _is_write_failure(exc):
            raise _translate(exc, _db_file(conn)) from None
        raise
    except BaseException:
        if conn.in_transaction:
            _quiet(conn, "ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except _TRANSLATED as exc:
        if conn.in_transaction:
            _quiet(conn, "ROLLBACK")
        if _is_write_failure(exc):
            raise _translate(exc, _db_file(conn)) from None
        raise


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


def backup(
    src: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False
) -> dict[str, int | str]:
    """A consistent copy of the KB ``src`` at ``out`` while others read and write it.

    SQLite's online backup API copies every page in one step inside one read transaction of
    a read-only connection: a snapshot of the last commit, WAL included, never blocking
    writers. The copy is written beside ``out`` under a temporary name, checked
    (``PRAGMA integrity_check``, a KB of this schema), then renamed over ``out``. Refuses
    ``out`` being the KB itself (or its ``-wal``/``-shm``), a directory, or an existing file
    unless ``force``. Returns ``{"path", "bytes", "schema_version"}``.
    """
    sp, op = Path(src), Path(out)
    if op.is_dir():
        raise KBError(
            f"{op} is a directory: give the file to write, e.g. {op / 'kbtool-backup.db'}"
        )
    source = open_ro(sp)  # refuses a missing file or a foreign one with one line
    try:
        kb_files = {sp.resolve(), Path(f"{sp}-wal").resolve(), Path(f"{sp}-shm").resolve()}
        if op.resolve() in kb_files or (op.exists() and os.path.samefile(op, sp)):
            raise KBError(f"{op} is the KB itself: give another path for the backup")
        if op.exists() and not force:
            raise KBError(f"{op} exists: pass --force to overwrite it")
        parent = op.parent if str(op.parent) else Path(".")
        if not parent.is_dir():
            raise KBError(f"cannot write {op}: no directory {parent}")
        import tempfile  # (here: ~2 ms of imports every KB opener would pay otherwise)

        fd, tmp_name = tempfile.mkstemp(prefix=f".{op.name}.", suffix=".kbtool-backup", dir=parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            dest = sqlite3.connect(str(tmp), isolation_level=None)
            try:
                source.backup(dest)
                dest.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
                ok = dest.execute("PRAGMA integrity_check").fetchone()[0]
                check_schema(dest, str(op))
                version = read_schema_version(dest) or 0
            finally:
                dest.close()
            if ok != "ok":
                raise KBError(f"the copy failed its integrity check ({ok}); {op} not written")
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, sp.stat().st_mode & 0o777)  # mkstemp made it 0600
            for side in (Path(f"{op}-wal"), Path(f"{op}-shm")):
                # a stale -wal beside the old file would be replayed onto the new one
                side.unlink(missing_ok=True)
            os.replace(tmp, op)
        except sqlite3.Error as exc:
            raise _translate(exc, op) from None
        finally:
            tmp.unlink(missing_ok=True)
    finally:
        source.close()
    return {"path": str(op), "bytes": op.stat().st_size, "schema_version": version}
