"""Speed of ``kbtool functions VERSION`` (the streamed table) on a synthetic version.

Target (issue 14): under 2 s for 22,500 rows. Printed beside, measured in the same run:
``--json`` (same rows as JSON), the ``sqlite3`` shell printing the same columns (a peer
tool, if installed) and the Rich ``Table`` the command used before (in-process, to a file).

    python benchmarks/functions_table.py                 # 22,500 functions
    python benchmarks/functions_table.py --functions 50000
    python benchmarks/functions_table.py --smoke         # 500 functions (the tests run it)
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.tui import build  # noqa: E402

TARGET_S = 2.0
SQL = (
    "SELECT f.idx, f.stable_id, f.type_sig, s.provenance, s.confidence, s.name FROM functions f"
    " LEFT JOIN symbols s ON s.stable_id = f.stable_id WHERE f.version_id = 1 AND f.imported = 0"
    " ORDER BY f.idx"
)


def _timed(cmd: list[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, env=env, check=True)
    return time.perf_counter() - t0, res.stdout.count(b"\n")


def _rich_table(db: Path) -> tuple[float, int]:
    """The pre-issue-14 rendering: a Rich Table of every row, printed to a buffer (80 cols)."""
    from rich.console import Console
    from rich.table import Table

    from kbtool.kb import queries
    from kbtool.kb.db import open_ro
    from kbtool.render.text import lit

    t0 = time.perf_counter()
    conn = open_ro(str(db))
    rows = queries.list_functions(conn, 1)
    t = Table(title="functions of version 1")
    for col in ("index", "stable_id", "type", "name", "provenance", "conf"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            str(r["index"]),
            r["stable_id"],
            lit(r["type"]),
            lit(r["name"]),
            lit(r["provenance"]),
            "" if r["confidence"] is None else f"{r['confidence']:.2f}",
        )
    buf = io.StringIO()
    Console(file=buf, width=80).print(t)
    conn.close()
    return time.perf_counter() - t0, buf.getvalue().count("\n")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--functions", type=int, default=22_500)
    ap.add_argument("--smoke", action="store_true", help="500 functions, no target")
    ap.add_argument("--no-rich", action="store_true", help="skip the (slow) Rich Table reference")
    args = ap.parse_args()
    n = 500 if args.smoke else args.functions
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.db"
        build(db, n, False)
        kb = [sys.executable, "-m", "kbtool.cli", "--db", str(db), "functions", "1"]
        figures = [
            ("kbtool functions (streamed)", *_timed(kb)),
            ("kbtool functions --json", *_timed(kb + ["--json"])),
        ]
        if shutil.which("sqlite3"):
            figures.append(
                ("sqlite3 -column (peer)", *_timed(["sqlite3", "-column", str(db), SQL]))
            )
        if not args.no_rich:
            figures.append(("Rich Table, before (in-process)", *_rich_table(db)))
    print(f"functions {n:,}")
    for label, secs, lines in figures:
        print(f"{label:<34} {secs:7.2f} s  {lines:>7,} lines")
    if not args.smoke:
        ok = figures[0][1] < TARGET_S
        print(f"target streamed < {TARGET_S:.1f} s: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
