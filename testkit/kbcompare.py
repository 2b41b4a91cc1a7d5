"""Ingest through the compiled twins (decoder, data walk) and through the pure code, and
compare the two KBs: every table row by row in rowid order (times left out). Used by
``benchmarks/ingest.py --same-as-pure`` and by the tests.

Each side is one ``kbtool ingest`` in a fresh process with ``KBTOOL_DECODE`` and
``KBTOOL_DATASCAN`` set to ``compiled`` (an error when a twin is not built) or ``pure``.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ingest(module: Path, db: Path, mode: str) -> float:
    """CPU seconds (user + sys, children included) of one ingest of ``module`` into ``db``."""
    env = {**os.environ, "KBTOOL_DECODE": mode, "KBTOOL_DATASCAN": mode}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        [sys.executable, "-P", "-m", "kbtool.cli", "--db", str(db), "ingest", str(module)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{module.name}: {mode} ingest failed: {r.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tables(conn: sqlite3.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
    ]


def rows(conn: sqlite3.Connection, table: str) -> tuple[list[str], list[tuple]]:
    cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    keep = [c for c in cols if not c.endswith("_at") and c not in ("created", "updated")]
    order = "rowid" if has_rowid(conn, table) else ", ".join(_pk(conn, table)) or "1"
    sql = f"SELECT {', '.join(keep)} FROM {table} ORDER BY {order}"  # noqa: S608
    return keep, conn.execute(sql).fetchall()


def _pk(conn: sqlite3.Connection, table: str) -> list[str]:
    info = sorted((r[5], r[1]) for r in conn.execute(f"PRAGMA table_info({table})") if r[5])
    return [name for _, name in info]


def has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 1")  # noqa: S608
    except sqlite3.OperationalError:
        return False
    return True


def compare(a: Path, b: Path) -> tuple[int, str | None]:
    """(rows compared, the first difference or None)."""
    ca, cb = sqlite3.connect(a), sqlite3.connect(b)
    n = 0
    try:
        if tables(ca) != tables(cb):
            return n, f"tables differ: {tables(ca)} / {tables(cb)}"
        for t in tables(ca):
            cols, ra = rows(ca, t)
            _, rb = rows(cb, t)
            if len(ra) != len(rb):
                return n, f"{t}: {len(ra)} rows compiled, {len(rb)} pure"
            for x, y in zip(ra, rb, strict=True):
                if x != y:
                    diff = {c: (u, v) for c, u, v in zip(cols, x, y, strict=True) if u != v}
                    return n, f"{t}: first differing row {str(diff)[:300]}"
            n += len(ra)
    finally:
        ca.close()
        cb.close()
    return n, None


def same_as_pure(module: Path, tmp: Path) -> tuple[int, str | None, float, float]:
    """Ingest ``module`` both ways into fresh KBs under ``tmp``: (rows compared, the first
    difference or None, CPU seconds compiled, CPU seconds pure)."""
    dc, dp = tmp / "compiled.db", tmp / "pure.db"
    for d in (dc, dp):
        d.unlink(missing_ok=True)
    tc = ingest(module, dc, "compiled")
    tp = ingest(module, dp, "pure")
    n, diff = compare(dc, dp)
    return n, diff, tc, tp
