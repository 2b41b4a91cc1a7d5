"""Ingest through the compiled twins (decoder, data walk) stores exactly what the pure
path stores: every table of two fresh KBs, row by row in rowid order (times left out).

    python benchmarks/ingest_equal.py                      # every corpus module + ffmpeg when cached
    python benchmarks/ingest_equal.py --file X.wasm ...    # these modules
    python benchmarks/ingest_equal.py --smoke              # the bundled demo release only

Each side is one ``kbtool ingest`` in a fresh process: ``KBTOOL_DECODE`` and
``KBTOOL_DATASCAN`` set to ``compiled`` (an error when a twin is not built) or ``pure``.
Prints one line per module (rows compared, CPU seconds of each side) and exits non-zero on
the first difference, naming the table and the first differing row.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
BIG = Path.home() / ".cache" / "kbtool-big" / "package" / "dist" / "esm" / "ffmpeg-core.wasm"
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


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
        raise SystemExit(f"{module.name}: {mode} ingest failed: {r.stderr.strip()[-400:]}")
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
    order = "rowid" if _has_rowid(conn, table) else ", ".join(_pk(conn, table)) or "1"
    sql = f"SELECT {', '.join(keep)} FROM {table} ORDER BY {order}"  # noqa: S608
    return keep, conn.execute(sql).fetchall()


def _pk(conn: sqlite3.Connection, table: str) -> list[str]:
    info = sorted((r[5], r[1]) for r in conn.execute(f"PRAGMA table_info({table})") if r[5])
    return [name for _, name in info]


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", nargs="*", type=Path, help="modules to check")
    ap.add_argument("--smoke", action="store_true", help="the bundled demo release only")
    args = ap.parse_args(argv)
    if args.smoke:
        mods = [DEMO]
    elif args.file:
        mods = args.file
    else:
        mods = sorted(CORPUS.rglob("*.wasm"), key=lambda p: p.stat().st_size)
        if BIG.is_file():
            mods.append(BIG)
    bad = 0
    for m in mods:
        with tempfile.TemporaryDirectory() as tmp:
            dc, dp = Path(tmp) / "compiled.db", Path(tmp) / "pure.db"
            tc = ingest(m, dc, "compiled")
            tp = ingest(m, dp, "pure")
            n, diff = compare(dc, dp)
        status = "identical" if diff is None else f"DIFFERENT: {diff}"
        print(f"{m.name:<52} {n:>9} rows  cpu compiled {tc:6.2f} s  pure {tp:6.2f} s  {status}")
        bad += diff is not None
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
