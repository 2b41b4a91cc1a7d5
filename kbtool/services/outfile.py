"""Safe output files: every command that writes a file (``export -o``, ``export --wasm``,
``code --all -o``, ``backup``) goes through here.

    check_output_path(out, kb_path, force)     # refuse the KB (and its -wal/-shm/-journal,
                                               # by path, link or inode) and, without
                                               # force, any existing SQLite database
    with atomic_output(out) as fh: fh.write(...)   # the old file, or the whole new one
    write_atomic(out, data)                        # the same for bytes/str at hand
    with terminate_raises(): ...                   # SIGTERM runs the cleanups (exit 143)

The temporary lives in the target's directory and is never predictable nor followed: a
``tempfile.mkstemp`` file (``O_CREAT|O_EXCL``: a planted file or symbolic link makes it pick
another name, never write through), ``.NAME.kbtool-PID-RANDOM.tmp``, renamed over the target
only once complete, flushed and fsynced. It is removed on every exit path (an exception, a
full disk, SIGINT, SIGTERM); after a SIGKILL, the next write of the same target removes the
temporaries of dead processes. An existing target that is not a regular
file (``/dev/null``, a FIFO, ``/dev/stdout``) is written in place: there is nothing to
replace atomically. A target that is a symbolic link is replaced by the new file (the
link's destination is not written through).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kbtool.kb.errors import KBError

SQLITE_MAGIC = b"SQLite format 3\x00"
KB_SIDE_FILES = ("-wal", "-shm", "-journal")
SIGTERM_EXIT = 128 + signal.SIGTERM


class OutputRefused(KBError):
    """The output path would destroy the KB or another database (one-line message)."""


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread so ``finally`` blocks and pools clean up."""

    def __init__(self) -> None:
        super().__init__(SIGTERM_EXIT)


def is_sqlite_file(path: str | Path) -> bool:
    """Whether ``path`` is a regular file starting with the SQLite header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def check_output_path(out: str | Path, kb_path: str | Path | None, force: bool = False) -> None:
    """Raise :class:`OutputRefused` when writing ``out`` could destroy data a user cannot
    get back: the KB file itself or its ``-wal``/``-shm``/``-journal`` (by any path, a
    symbolic link or a hard link to the same inode), a directory, or, unless ``force``, an
    existing SQLite database (another KB, a browser profile...)."""
    p = Path(out)
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputRefused(f"cannot write {p}: {exc.strerror or exc}") from None
    if kb_path is not None:
        kb = Path(kb_path)
        real = os.path.realpath(p)
        for q in [kb, *(kb.with_name(kb.name + s) for s in KB_SIDE_FILES)]:
            same = real == os.path.realpath(q)
            if not same and st is not None:
                with contextlib.suppress(OSError):
                    same = os.path.samestat(st, os.stat(q))
            if same:
                what = "the KB" if q == kb else f"the KB's {q.name[len(kb.name) :]} file"
                raise OutputRefused(
                    f"refusing to write {p}: it is {what} ({kb}); choose another output file"
                )
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"cannot write {p}: it is a directory")
    if stat.S_ISREG(st.st_mode) and not force and is_sqlite_file(p):
        raise OutputRefused(
            f"refusing to replace {p}: it is a SQLite database (a KB?); give --force to replace it"
        )


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` (exit status 143) in the main
    thread, so ``finally`` blocks remove temporaries and stop worker pools; the previous
    handler comes back on exit. Outside the main thread (or when a handler other than the
    default one is installed) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends at once
        raise Terminated()

    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _tmp_prefix(name: str) -> str:
    return f".{name}.kbtool-"


def _remove_stale(directory: str, name: str) -> None:
    """Remove temporaries of ``name`` left by killed kbtool processes (pid no longer alive)."""
    prefix = _tmp_prefix(name)
    try:
        entries = [e for e in os.listdir(directory) if e.startswith(prefix) and e.endswith(".tmp")]
    except OSError:
        return
    for e in entries:
        pid = e[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        path = os.path.join(directory, e)
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


@contextlib.contextmanager
def atomic_output(
    out: str | Path, *, binary: bool = False, encoding: str = "utf-8"
) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``out`` only when the ``with`` block ends
    without an error (written, flushed and fsynced first); on any error or signal the old
    file stays as it was and no temporary remains. See the module docstring."""
    p = Path(out)
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    mode = "wb" if binary else "w"
    kw: dict[str, Any] = {} if binary else {"encoding": encoding}
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        with terminate_raises(), open(p, mode, **kw) as direct:  # /dev/null, a FIFO...
            yield direct
        return
    directory = os.path.dirname(os.path.abspath(p)) or "."
    perms = (st.st_mode & 0o777) if st is not None and not p.is_symlink() else _umask_mode()
    with terminate_raises():
        _remove_stale(directory, p.name)
        fd, named = tempfile.mkstemp(
            prefix=f"{_tmp_prefix(p.name)}{os.getpid()}-", suffix=".tmp", dir=directory
        )
        tmp: str | None = named
        fh = None
        try:
            os.fchmod(fd, perms)
            fh = os.fdopen(fd, mode, **kw)
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            os.replace(named, p)
            tmp = None
            _sync_dir(directory)
        finally:
            if fh is not None:
                with contextlib.suppress(OSError):
                    fh.close()
            else:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _sync_dir(directory: str) -> None:
    """Make the rename durable (best effort: not every platform opens directories)."""
    if sys.platform.startswith("win"):  # pragma: no cover
        return
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def write_atomic(out: str | Path, data: bytes | str, *, encoding: str = "utf-8") -> None:
    """Replace ``out`` with ``data`` atomically (see :func:`atomic_output`)."""
    with atomic_output(out, binary=isinstance(data, bytes), encoding=encoding) as fh:
        fh.write(data)
