"""What the data model's references cost to store, per table layout (issue 30 point 4).

    python benchmarks/data_refs_layouts.py --file X.wasm [--repeat 3] [--json]
    python benchmarks/data_refs_layouts.py --smoke      # the bundled demo module, a few seconds

The module is ingested once by this checkout (``kbtool ingest`` in a fresh process); its
data references (``kbtool.kb.datarefs.all_refs``) are then written into a scratch SQLite file (32 KB pages, WAL, as a big
KB) in each candidate layout: CPU s of the rows' preparation in Python, their inserts and
the index builds and commit (best of ``--repeat``), and the file size. Every layout is then
checked to answer the two lookups the query layer makes (references to one target in
(function, offset) order; one function's references by offset) exactly as the schema-9
table does, on the most referenced targets and functions. Layouts:

- ``schema``: the schema-9 table, ``data_refs`` (TEXT kind/target_kind, rowid, indexes on
  target and function)
- ``codes``: small integer codes for kind/target_kind (mapped in Python), same indexes
- ``no_func_index``: the schema's rows; a function's references found through a per-function
  rowid range table instead of the function index
- ``clustered``: WITHOUT ROWID, clustered on (target_kind, target, function, offset, kind),
  rows sorted in Python, an index on function
- ``blobs``: fewer rows: one packed row per target and one per function
- ``packed``: the KB's tables since schema 10 (``kbtool/kb/datarefs.py``: the references as
  packed columns, 1024 per row, in (function, offset) order and by target)
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
COLS = "func_index, offset, kind, target_kind, target, width"
SCHEMA_TABLE = (
    "CREATE TABLE d(version_id INTEGER NOT NULL, func_index INTEGER NOT NULL,"
    " offset INTEGER NOT NULL, kind TEXT NOT NULL, target_kind TEXT NOT NULL,"
    " target INTEGER NOT NULL, width INTEGER NOT NULL DEFAULT 0)"
)
TARGET_INDEX = "CREATE INDEX d_target ON d(version_id, target_kind, target)"
FUNC_INDEX = "CREATE INDEX d_func ON d(version_id, func_index)"

Row = tuple[int, int, str, str, int, int]
Lookups = tuple[Callable[[str, int], list[Row]], Callable[[int], list[Row]]]


def _table_lookups(conn: sqlite3.Connection, target_order: str) -> Lookups:
    """The two lookups on a table ``d`` of the schema's columns: a target's references (in
    ``target_order``) and a function's (by offset)."""
    by_target = (
        f"SELECT {COLS} FROM d WHERE version_id = 1 AND target_kind = ? AND target = ?"  # noqa: S608
        f" ORDER BY {target_order}"
    )
    by_func = f"SELECT {COLS} FROM d WHERE version_id = 1 AND func_index = ? ORDER BY offset"  # noqa: S608
    return (
        lambda tk, t: conn.execute(by_target, (tk, t)).fetchall(),
        lambda f: conn.execute(by_func, (f,)).fetchall(),
    )


def ingest_rows(module: Path) -> list[Row]:
    """The ``data_refs`` rows this checkout stores for ``module`` (in rowid order)."""
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb.db"
        subprocess.run(
            [sys.executable, "-m", "kbtool", "--db", str(kb), "ingest", str(module.resolve())],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        from kbtool.kb import datarefs

        conn = sqlite3.connect(kb)
        try:
            return datarefs.all_refs(conn, 1)
        finally:
            conn.close()


def _scratch(path: Path) -> sqlite3.Connection:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA page_size = 32768")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _size(path: Path) -> int:
    return sum(
        Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists()
    )


# --------------------------------------------------------------------------- layouts
# each: (conn, rows) -> (prep s, write s, lookups); the lookups answer in the query layer's
# order: refs to (target_kind, target) by (function, offset); a function's by offset


def _schema(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    conn.execute(SCHEMA_TABLE)
    t0 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO d VALUES (1,?,?,?,?,?,?)", rows)
    conn.execute(TARGET_INDEX)
    conn.execute(FUNC_INDEX)
    conn.execute("COMMIT")
    write = time.process_time() - t0
    return (
        0.0,
        write,
        _table_lookups(conn, "rowid"),
    )


def _codes(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    kinds = sorted({r[2] for r in rows})
    tks = sorted({r[3] for r in rows})
    conn.execute(SCHEMA_TABLE.replace("TEXT", "INTEGER"))
    t0 = time.process_time()
    kc = {k: i for i, k in enumerate(kinds)}
    tc = {k: i for i, k in enumerate(tks)}
    coded = [(f, o, kc[k], tc[tk], t, w) for f, o, k, tk, t, w in rows]
    t1 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO d VALUES (1,?,?,?,?,?,?)", coded)
    conn.execute(TARGET_INDEX)
    conn.execute(FUNC_INDEX)
    conn.execute("COMMIT")
    write = time.process_time() - t1

    def back(found: list[tuple]) -> list[Row]:
        return [(f, o, kinds[k], tks[tk], t, w) for f, o, k, tk, t, w in found]

    return (
        t1 - t0,
        write,
        (
            lambda tk, t: back(
                conn.execute(
                    f"SELECT {COLS} FROM d WHERE version_id = 1 AND target_kind = ?"  # noqa: S608
                    " AND target = ? ORDER BY rowid",
                    (tc[tk], t),
                ).fetchall()
            ),
            lambda f: back(
                conn.execute(
                    f"SELECT {COLS} FROM d WHERE version_id = 1 AND func_index = ?"  # noqa: S608
                    " ORDER BY offset",
                    (f,),
                ).fetchall()
            ),
        ),
    )


def _no_func_index(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    conn.execute(SCHEMA_TABLE)
    conn.execute(
        "CREATE TABLE r(version_id INTEGER NOT NULL, func_index INTEGER NOT NULL,"
        " first INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (version_id, func_index))"
        " WITHOUT ROWID"
    )
    t0 = time.process_time()
    funcs = list(map(itemgetter(0), rows))  # rows are in (function, offset) order
    ranges = [
        (f, bisect_left(funcs, f) + 1, bisect_right(funcs, f) - bisect_left(funcs, f))
        for f in sorted(set(funcs))
    ]
    t1 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO d VALUES (1,?,?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO r VALUES (1,?,?,?)", ranges)
    conn.execute(TARGET_INDEX)
    conn.execute("COMMIT")
    write = time.process_time() - t1

    def of_func(f: int) -> list[Row]:
        got = conn.execute(
            "SELECT first, n FROM r WHERE version_id = 1 AND func_index = ?", (f,)
        ).fetchone()
        if got is None:
            return []
        return conn.execute(
            f"SELECT {COLS} FROM d WHERE rowid >= ? AND rowid < ? ORDER BY offset",  # noqa: S608
            (got[0], got[0] + got[1]),
        ).fetchall()

    return (
        t1 - t0,
        write,
        (
            lambda tk, t: conn.execute(
                f"SELECT {COLS} FROM d WHERE version_id = 1 AND target_kind = ? AND target = ?"  # noqa: S608
                " ORDER BY rowid",
                (tk, t),
            ).fetchall(),
            of_func,
        ),
    )


def _clustered(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    conn.execute(
        "CREATE TABLE d(version_id INTEGER NOT NULL, target_kind TEXT NOT NULL,"
        " target INTEGER NOT NULL, func_index INTEGER NOT NULL, offset INTEGER NOT NULL,"
        " kind TEXT NOT NULL, width INTEGER NOT NULL DEFAULT 0,"
        " PRIMARY KEY (version_id, target_kind, target, func_index, offset, kind)) WITHOUT ROWID"
    )
    t0 = time.process_time()
    keyed = sorted((tk, t, f, o, k, w) for f, o, k, tk, t, w in rows)
    t1 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO d VALUES (1,?,?,?,?,?,?)", keyed)
    conn.execute(FUNC_INDEX)
    conn.execute("COMMIT")
    write = time.process_time() - t1
    return (
        t1 - t0,
        write,
        _table_lookups(conn, "func_index, offset"),
    )


def _blobs(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    kinds = sorted({r[2] for r in rows})
    tks = sorted({r[3] for r in rows})
    conn.execute(
        "CREATE TABLE t(version_id INTEGER NOT NULL, target_kind INTEGER NOT NULL,"
        " target INTEGER NOT NULL, refs BLOB NOT NULL,"
        " PRIMARY KEY (version_id, target_kind, target)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE f(version_id INTEGER NOT NULL, func_index INTEGER NOT NULL,"
        " refs BLOB NOT NULL, PRIMARY KEY (version_id, func_index)) WITHOUT ROWID"
    )
    t0 = time.process_time()
    kc = {k: i for i, k in enumerate(kinds)}
    tc = {k: i for i, k in enumerate(tks)}
    per_func: dict[int, array] = {}
    per_target: dict[tuple[int, int], array] = {}
    for fi, o, k, tk, t, w in rows:
        code = tc[tk]
        a = per_func.get(fi)
        if a is None:
            a = per_func[fi] = array("q")
        a.extend((o, kc[k], code, t, w))
        b = per_target.get((code, t))
        if b is None:
            b = per_target[(code, t)] = array("q")
        b.extend((fi, o, kc[k], w))
    frows = [(fi, a.tobytes()) for fi, a in per_func.items()]
    trows = [(c, t, b.tobytes()) for (c, t), b in sorted(per_target.items())]
    t1 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO f VALUES (1,?,?)", frows)
    conn.executemany("INSERT INTO t VALUES (1,?,?,?)", trows)
    conn.execute("COMMIT")
    write = time.process_time() - t1

    def to_target(tk: str, t: int) -> list[Row]:
        got = conn.execute(
            "SELECT refs FROM t WHERE version_id = 1 AND target_kind = ? AND target = ?",
            (tc[tk], t),
        ).fetchone()
        v = array("q", got[0] if got else b"")
        return [(v[i], v[i + 1], kinds[v[i + 2]], tk, t, v[i + 3]) for i in range(0, len(v), 4)]

    def of_func(fi: int) -> list[Row]:
        got = conn.execute(
            "SELECT refs FROM f WHERE version_id = 1 AND func_index = ?", (fi,)
        ).fetchone()
        v = array("q", got[0] if got else b"")
        out = [
            (fi, v[i], kinds[v[i + 1]], tks[v[i + 2]], v[i + 3], v[i + 4])
            for i in range(0, len(v), 5)
        ]
        return sorted(out, key=itemgetter(1))

    return t1 - t0, write, (to_target, of_func)


def _packed(conn: sqlite3.Connection, rows: list[Row]) -> tuple[float, float, Lookups]:
    from kbtool.kb import datarefs, schema

    for ddl in schema._V10.split(";"):
        if ddl.strip():
            conn.execute(ddl.replace(" REFERENCES versions(id)", ""))
    t0 = time.process_time()
    chunks, targets = datarefs.pack(datarefs.by_function_and_offset(list(rows)))
    t1 = time.process_time()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO data_ref_chunks(version_id, chunk, n, lo_func, hi_func, cols)"
        " VALUES (1,?,?,?,?,?)",
        chunks,
    )
    conn.executemany(
        "INSERT INTO data_ref_targets(version_id, chunk, n, lo_key, hi_key, cols)"
        " VALUES (1,?,?,?,?,?)",
        targets,
    )
    conn.execute("COMMIT")
    write = time.process_time() - t1
    return (
        t1 - t0,
        write,
        (
            lambda tk, t: datarefs.rows_at(conn, 1, datarefs.positions_to(conn, 1, tk, t, None)),
            lambda f: datarefs.from_function(conn, 1, f, 1 << 62),
        ),
    )


LAYOUTS = {
    "schema": _schema,
    "codes": _codes,
    "no_func_index": _no_func_index,
    "clustered": _clustered,
    "blobs": _blobs,
    "packed": _packed,
}


def _probes(rows: list[Row]) -> tuple[list[tuple[str, int]], list[int]]:
    """The most referenced targets and functions (and a few rare ones)."""
    targets = Counter((r[3], r[4]) for r in rows)
    funcs = Counter(r[0] for r in rows)
    t = [k for k, _ in targets.most_common(20)] + [k for k, _ in targets.most_common()[-5:]]
    f = [k for k, _ in funcs.most_common(20)] + [k for k, _ in funcs.most_common()[-5:]]
    return t, f


def measure(rows: list[Row], repeat: int, tmp: Path) -> dict[str, dict]:
    """Per layout: best prep/write/total CPU s of ``repeat`` runs, bytes, and whether its
    lookups answer as the schema's."""
    probe_t, probe_f = _probes(rows)
    out: dict[str, dict] = {}
    expect: tuple[list, list] | None = None
    for name, layout in LAYOUTS.items():
        best: tuple[float, float] | None = None
        for _ in range(repeat):
            conn = _scratch(tmp / f"{name}.db")
            prep, write, (to_target, of_func) = layout(conn, rows)
            if best is None or prep + write < sum(best):
                best = (prep, write)
            got = ([to_target(tk, t) for tk, t in probe_t], [of_func(f) for f in probe_f])
            size = _size(tmp / f"{name}.db")
            conn.close()
        assert best is not None
        if expect is None:
            expect = got
        out[name] = {
            "prep_s": round(best[0], 3),
            "write_s": round(best[1], 3),
            "total_s": round(sum(best), 3),
            "bytes": size,
            "same_answers": got == expect,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--file", type=Path, help="a .wasm module (default: the demo module)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="the demo module, one run per layout")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    module = DEMO if args.smoke or args.file is None else args.file
    if not module.is_file():
        print(f"error: no such module: {module}", file=sys.stderr)
        return 2
    rows = ingest_rows(module)
    with tempfile.TemporaryDirectory() as tmp:
        res = measure(rows, 1 if args.smoke else max(1, args.repeat), Path(tmp))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.json:
        print(json.dumps({"module": module.name, "rows": len(rows), "load": load, "layouts": res}))
    else:
        print(f"{module.name}: {len(rows):,} data_refs rows; load {load}; CPU s, best of runs")
        print(f"{'layout':<14} {'prep':>6} {'write':>6} {'total':>6} {'MiB':>7}  same answers")
        for name, r in res.items():
            print(
                f"{name:<14} {r['prep_s']:6.3f} {r['write_s']:6.3f} {r['total_s']:6.3f}"
                f" {r['bytes'] / 2**20:7.1f}  {'yes' if r['same_answers'] else 'NO'}"
            )
    return 0 if all(r["same_answers"] for r in res.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
