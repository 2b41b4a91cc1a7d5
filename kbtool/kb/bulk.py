"""The first load of a KB file created for it: one rollback-journal write instead of the WAL's
two (issue 30.4).

In WAL mode every page of a transaction is written to the ``-wal`` file and copied into the
KB by the checkpoint that follows: ffmpeg's first ingest writes its 130 MB twice (~0.1 s CPU,
mostly the kernel's copies). A KB that holds nothing yet needs no WAL for that first write:
the pages it adds have no earlier content to keep, so a rollback journal records next to
nothing and each page is written once. The KB is switched back to WAL right after (and
:func:`kbtool.kb.db.open_rw` puts any KB it opens in WAL mode anyway).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from kbtool.kb.db import BUSY_TIMEOUT_MS


def _journal_mode(conn: sqlite3.Connection, mode: str) -> bool:
    """Switch without waiting (another connection holding the file keeps the mode as it is:
    correct either way); whether the KB is now in ``mode``."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        row = conn.execute(f"PRAGMA journal_mode = {mode}").fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return bool(row) and str(row[0]).lower() == mode.lower()


@contextmanager
def first_load(conn: sqlite3.Connection, fresh: bool) -> Iterator[None]:
    """Run the block's writes in rollback-journal mode when ``fresh`` (the KB file was created
    for this load and holds no version), in WAL mode as always otherwise; WAL again after."""
    if not fresh or conn.in_transaction or not _journal_mode(conn, "DELETE"):
        yield
        return
    try:
        yield
    finally:
        if conn.in_transaction:  # (the caller's unit failed: its rollback first)
            conn.execute("ROLLBACK")
        _journal_mode(conn, "WAL")
