"""Named-column writes for every table except ``symbols`` (the gate owns that one).

Services write rows as dicts through these functions (sqlite-utils ``Table.insert`` /
``insert_all`` / ``upsert``; ingest's tables by :func:`_insert_rows`, values taken by name in
one ``executemany``), never positional SQL, so a new column cannot silently shift values.
Every function runs inside the caller's transaction (sqlite-utils nests with a SAVEPOINT
when one is open), so an ingest still lands whole or not at all.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from functools import reduce
from operator import iconcat, itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from kbtool.kb.db import now

if TYPE_CHECKING:
    import sqlite_utils

BATCH = 2000


def _db(conn: sqlite3.Connection) -> sqlite_utils.Database:
    # Imported on the first write, not at start-up: sqlite-utils costs 0.16-0.3 s to import
    # (python -X importtime), more than every read-only command needs in total.
    import sqlite_utils

    return sqlite_utils.Database(conn)


#: A value that binds as SQL NULL, for ingest's hot rows: pysqlite looks every ``None`` (and
#: any value not exactly an int, float, str or bytearray) up in its adapter registry, a tuple
#: key, a dict probe and two failed attribute lookups per value (~0.6 us; ffmpeg's function
#: rows carry 110k of them), while a float binds at once, and SQLite stores a NaN double as
#: NULL (``sqlite3VdbeMemSetDouble``; :func:`null_binds_as_null` checks this SQLite). Only
#: where ``None`` would be bound: the stored row is the same.
NULL = float("nan")

# ``bytes`` is not one of the types pysqlite binds without adapting: for each bytes value it
# probes its adapter registry, misses, and asks the ``PrepareProtocol`` type for
# ``__adapt__``, a failed attribute lookup on a type that formats and drops an
# AttributeError (~2,000 instructions a value: ffmpeg's 22.6k fact rows' op arrays, the
# packed references). An adapter for bytes ends the lookup at the registry: ``bytes.__bytes__``
# hands back the same object (an exact bytes; a subclass is keyed by its own type, so never
# adapted by it) without the argument parsing of a ``bytes(b)`` call (~80 ns less a value).
# The same value is bound, so every stored blob is the same.
sqlite3.register_adapter(bytes, bytes.__bytes__)


def null_binds_as_null(conn: sqlite3.Connection) -> bool:
    """Whether :data:`NULL` is stored as SQL NULL by this SQLite (the tests keep it so)."""
    return conn.execute("SELECT ? IS NULL", (NULL,)).fetchone()[0] == 1


def dumps(value: Any) -> str:
    """Compact JSON of a stored value (orjson: storing facts is a hot path of ingest)."""
    return orjson.dumps(value).decode()


def _insert_all(conn: sqlite3.Connection, table: str, rows: Iterable[dict[str, Any]]) -> None:
    _db(conn)[table].insert_all(rows, batch_size=BATCH)


def _insert_rows(conn: sqlite3.Connection, table: str, rows: Iterable[dict[str, Any]]) -> int:
    """Insert rows that all have the first row's keys (named columns, one ``executemany``:
    the per-value checks of sqlite-utils cost more than the writes on ingest's hot tables;
    each row's values are taken by column name, a missing one raises ``KeyError``, and bound
    in the statement's column order: SQLite's named parameters would make a new string per
    value per row); values must be SQLite's own types. The last row's rowid."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return 0
    cols = list(first)
    sql = (
        f"INSERT INTO {table} ({', '.join(cols)})"  # noqa: S608 (names from this module)
        f" VALUES ({', '.join('?' * len(cols))})"
    )
    values = itemgetter(*cols) if len(cols) > 1 else (lambda r, c=cols[0]: (r[c],))
    cur = conn.execute(sql, values(first))
    cur.executemany(sql, map(values, it))
    return int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])


#: Rows per statement of :func:`insert_rows_batched` (a multi-row ``VALUES``; fewer when
#: SQLite's limit on parameters per statement is lower).
ROWS_PER_INSERT = 100
#: ... for rows of at most :data:`NARROW_ROW` bound values (ingest's call edges): their
#: statements run more rows each, so each row carries less of a statement's own cost
#: (ffmpeg's 47k call edges 17.5 -> 15 ms CPU). Not for wider rows: a statement's list of
#: values grows by reallocation, and past ~2,000 values a real ingest's heap copies it more
#: (500 data items a statement: +70 M instructions of memcpy), and more of the statements
#: lose a literal column (see :func:`insert_rows_batched`).
ROWS_PER_NARROW_INSERT = 500
NARROW_ROW = 4
#: Fewest rows for which :func:`insert_rows_batched` makes multi-row statements: SQLite
#: parses each new statement text (a 100-row ``VALUES`` list of 20 values costs more than
#: ``executemany`` stepping those 100 rows one by one), and only reuse pays that back: by a
#: micro-benchmark (fresh connection, 3, 10 and 20 values a row) the two cost the same
#: near 700-1,200 rows whatever the width. Fewer rows (a small module's tables), and the
#: rows after the last full statement, go through ``executemany`` of the one-row
#: statement, parsed once.
MIN_BATCHED_ROWS = 1000


def _literal(value: Any) -> str | None:
    """The SQL literal storing what binding ``value`` stores, for a short str (without NUL:
    a long one would make a long statement to parse) and SQL NULL (``None``, :data:`NULL`);
    None for anything else."""
    if value is NULL or value is None:
        return "NULL"
    if type(value) is str and len(value) <= 64 and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


def _flat(rows: list[tuple]) -> list[Any]:
    """The rows' values in one list, row after row (each tuple added by ``list += tuple``,
    which copies its items at once: ~1/3 less CPU than ``list(chain.from_iterable(rows))``,
    which steps an iterator through every value)."""
    return reduce(iconcat, rows, [])


def insert_rows_batched(
    conn: sqlite3.Connection,
    head: str,
    one: str,
    rows: list[tuple],
    *,
    lead: bool = False,
    constants: bool = False,
) -> None:
    """``head VALUES one`` for every row of ``rows``, :data:`ROWS_PER_INSERT` rows per
    statement (:data:`ROWS_PER_NARROW_INSERT` for a narrow row; ``one``: a row's ``(?,
    ...)``, a literal allowed among the ``?``; every row binds as many values as ``one`` has
    ``?``, else ``sqlite3.ProgrammingError`` before any row is written). The same rows in
    the same order as ``executemany`` stores them, for less: one statement run per row costs
    SQLite a statement start and halt, a descent from the root to the table's last page and
    pysqlite a reset and a release of the GIL each (ingest's 65k data items, 47k call edges:
    ~20-25% of their writes' instructions). But SQLite parses each new statement text, so
    only reuse pays a multi-row statement back: below :data:`MIN_BATCHED_ROWS` rows every
    row, and otherwise the rows after the last full statement, go through ``executemany``
    of the one-row statement (the same literals): a small module's fresh ingest parsed 8
    statements of up to 7 KB for its ~540 functions, facts, edges and data items.

    Values the same in every row of a statement can go into it as literals instead of being
    bound per row (pysqlite and SQLite spend ~250 instructions binding an int, ~800 a str:
    a copy, a malloc and a free, two mutexes): ``lead``, the first value, an int, for a
    column of INTEGER affinity (ingest's version id: a value equal to the int is stored as
    it in such a column); ``constants``, any value that is a str or SQL NULL (``None``,
    :data:`NULL`) in every row of the first statement (a first version's ``'new'`` match
    method, its NULL scores, the empty JSON lists of columns rarely filled), in each
    statement where it still is."""
    if not rows:
        return
    width = one.count("?")
    if set(map(len, rows)) != {width}:
        bad = next(len(r) for r in rows if len(r) != width)
        raise sqlite3.ProgrammingError(
            f"Incorrect number of bindings supplied. The current statement uses {width},"
            f" and there are {bad} supplied."
        )
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    per = ROWS_PER_NARROW_INSERT if width <= NARROW_ROW else ROWS_PER_INSERT
    n = max(1, min(per, limit // max(width, 1)))
    parts = one.split("?")
    fixed: dict[int, tuple[Any, str]] = {}  # position -> (value, its literal)
    start = _flat(rows[:n])
    for k in range(width) if constants or lead else ():
        v = start[k]
        lit = _literal(v) if constants and k else None
        if lead and not k and type(v) is int and -(2**63) <= v < 2**63:
            lit = f"{v:d}"
        if lit is not None and start[k::width].count(v) == len(start) // width:
            fixed[k] = (v, lit)
    sqls: dict[tuple[tuple[int, ...], int], str] = {}

    def statement(held: tuple[int, ...], count: int) -> str:
        sql = sqls.get((held, count))
        if sql is None:
            marks = [fixed[k][1] if k in held else "?" for k in range(width)]
            row = parts[0] + "".join(m + p for m, p in zip(marks, parts[1:], strict=True))
            sql = sqls[held, count] = f"{head} VALUES {','.join([row] * count)}"
        return sql

    def run(part: list[tuple], one_by_one: bool) -> None:
        vals = _flat(part)
        held = tuple(k for k, (v, _) in fixed.items() if vals[k::width].count(v) == len(part))
        if one_by_one:  # the one-row statement, the same literals
            keep = [k for k in range(width) if k not in held]
            if len(keep) == width:
                values: Iterable[tuple] = part
            elif len(keep) > 1:
                values = map(itemgetter(*keep), part)
            else:
                values = [tuple(r[k] for k in keep) for r in part]
            conn.executemany(statement(held, 1), values)
            return
        at = width
        for k in reversed(held):  # (from the last: the earlier positions stay)
            del vals[k::at]
            at -= 1
        conn.execute(statement(held, len(part)), vals)

    end = len(rows) - len(rows) % n if len(rows) >= MIN_BATCHED_ROWS else 0
    for i in range(0, end, n):
        run(rows[i : i + n], False)
    if end < len(rows):
        run(rows[end:], True)


def _insert_values(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    """Insert rows given as tuples of ``columns``' values, in that order (named columns:
    ingest's hot tables, where a dict per row costs more than its write); the first value
    (an INTEGER column: ingest's version id) and the values the same str or NULL in every
    row of a statement as literals (:func:`insert_rows_batched`). The same rows stored."""
    if not rows:
        return
    head = f"INSERT INTO {table} ({', '.join(columns)})"  # noqa: S608 (names from kbtool)
    insert_rows_batched(
        conn,
        head,
        f"({', '.join('?' * len(columns))})",
        rows,
        lead=True,
        constants=True,
    )


@contextlib.contextmanager
def indexes_built_after(
    conn: sqlite3.Connection, table: str, adding: int, held_per_added: int = 1
) -> Iterator[None]:
    """Around inserting ``adding`` rows into ``table``: when it holds fewer rows than
    ``held_per_added`` times that (1: a fresh KB), its secondary indexes are dropped first
    and created again after, from their own DDL (sorting the rows once costs less than an
    entry per row inserted at a random spot: stable ids, hashes, labels); same indexes
    afterwards. DDL is transactional: a failed ingest keeps them."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT ?)"  # noqa: S608 (our table)
    limit = adding * held_per_added
    few = adding > 0 and conn.execute(sql, (limit,)).fetchone()[0] < limit
    ddl = (
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
            " AND sql IS NOT NULL ORDER BY name",
            (table,),
        ).fetchall()
        if few
        else []
    )
    for name, _ in ddl:
        conn.execute(f'DROP INDEX "{name}"')
    yield
    for _, sql in ddl:
        conn.execute(sql)


# --------------------------------------------------------------------------- versions


def ensure_program(conn: sqlite3.Connection, name: str) -> int:
    """The id of program ``name``, created when new."""
    row = conn.execute("SELECT id FROM programs WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    return _insert_rows(conn, "programs", [{"name": name, "created_at": now()}])


def assign_legacy_program(conn: sqlite3.Connection, program_id: int) -> None:
    """Versions ingested before schema v2 (no program) join program ``program_id``."""
    conn.execute("UPDATE versions SET program_id = ? WHERE program_id IS NULL", (program_id,))


def insert_version(conn: sqlite3.Connection, row: dict[str, Any]) -> int:
    """Insert a ``versions`` row (``ingested_at`` defaults to now); return its id."""
    return _insert_rows(conn, "versions", [{"ingested_at": now(), **row}])


def set_version_carried(conn: sqlite3.Connection, version_id: int, carried: int) -> None:
    """A version's ``carried`` count, once known (a later ingest writes its row while the
    matcher runs)."""
    conn.execute("UPDATE versions SET carried = ? WHERE id = ?", (carried, version_id))


def insert_module_bytes(conn: sqlite3.Connection, version_id: int, data: bytes) -> None:
    """The module's bytes as ``version_id``'s ``modules`` row: a blob of their length made
    in place (``zeroblob``), then written through SQLite's incremental blob I/O (the row's
    rowid is the version id). Bound as a value, the bytes would be copied by pysqlite's bind
    and again into SQLite's record before its pages (ffmpeg: 32.7 MB; 54 -> 27 ms CPU in a
    fresh KB). The same row stored."""
    conn.execute(
        "INSERT INTO modules (version_id, data) VALUES (?, zeroblob(?))",
        (version_id, len(data)),
    )
    if data:
        with conn.blobopen("modules", "data", version_id) as blob:
            blob.write(data)


def insert_functions(conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> None:
    rows = list(rows)
    with indexes_built_after(conn, "functions", len(rows)):
        _insert_rows(conn, "functions", rows)


def insert_facts(conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> None:
    _insert_rows(conn, "facts", rows)


def insert_call_edges(conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> None:
    _insert_rows(conn, "call_edges", rows)


#: at least this many function rows added to a table holding fewer than
#: FUNCTIONS_HELD_PER_ADDED times as many: its indexes built after (ffmpeg's 22.5k rows into
#: 1, 2, 3 releases held: 302 -> 148, 454 -> 212, 545 -> 242 ms CPU, one process
#: alternated; 6 held: 568 -> 364 ms; the first 10k rows into 10k: 71 -> 63 ms, 5k: 29 -> 29,
#: 1.3k: 9 -> 9: a small table's index pages stay in SQLite's cache, nothing to win)
FUNCTIONS_REBUILD_MIN_ROWS = 10_000
FUNCTIONS_HELD_PER_ADDED = 7


def insert_function_values(
    conn: sqlite3.Connection, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    """:func:`insert_functions` for rows as tuples of ``columns``' values (ingest). The
    indexes are built again after the rows also when the table holds up to
    :data:`FUNCTIONS_HELD_PER_ADDED` times as many and the rows are many (a later ingest of a
    big module into a KB of one to six releases of the program: the new rows' stable ids land
    beside the old ones' all over an index larger than SQLite's cache; rebuilding costs about
    half, session 32 S follow-up)."""
    n = len(rows)
    held = FUNCTIONS_HELD_PER_ADDED if n >= FUNCTIONS_REBUILD_MIN_ROWS else 1
    with indexes_built_after(conn, "functions", n, held):
        _insert_values(conn, "functions", columns, rows)


def insert_fact_values(
    conn: sqlite3.Connection, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    """:func:`insert_facts` for rows as tuples of ``columns``' values (ingest)."""
    _insert_values(conn, "facts", columns, rows)


def insert_call_edge_values(
    conn: sqlite3.Connection, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    """:func:`insert_call_edges` for rows as tuples of ``columns``' values (ingest): written
    in the table's key order, ``(version_id, callee, caller)`` (schema 13; from ingest's
    caller order by a stable sort on the callee), so each row lands after the last one
    (SQLite's append path) instead of a search from the root for every row."""
    if "callee" in columns:
        with contextlib.suppress(IndexError):  # (a short row: refused below, nothing written)
            rows = sorted(rows, key=itemgetter(columns.index("callee")))
    _insert_values(conn, "call_edges", columns, rows)


def insert_call_edge_pairs(conn: sqlite3.Connection, version_id: int, values: list[int]) -> None:
    """Version ``version_id``'s call edges given as one flat list ``[callee, caller, ...]``
    in the table's key order (:func:`kbtool.services.ingest_rows.fact_rows` with
    ``flat_edges``): the statements :func:`insert_call_edge_values` runs for those rows (the
    version id a literal, :data:`ROWS_PER_NARROW_INSERT` rows a statement from
    :data:`MIN_BATCHED_ROWS` rows on, the rest one by one), bound from slices of the list:
    no tuple per edge, no flattening. The same rows stored in the same order."""
    if len(values) % 2:
        raise sqlite3.ProgrammingError("call edges: a callee without its caller")
    rows = len(values) // 2
    if not rows:
        return
    head = "INSERT INTO call_edges (version_id, callee, caller) VALUES "
    one = f"({int(version_id):d},?,?)"
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    n = max(1, min(ROWS_PER_NARROW_INSERT, limit // 2))
    end = rows - rows % n if rows >= MIN_BATCHED_ROWS else 0
    if end:
        sql = head + ",".join([one] * n)
        for i in range(0, 2 * end, 2 * n):
            conn.execute(sql, values[i : i + 2 * n])
    if end < rows:
        tail = iter(values[2 * end :])
        conn.executemany(head + one, zip(tail, tail, strict=True))


# --------------------------------------------------------------------------- diffs


def save_diff_report(conn: sqlite3.Connection, a: int, b: int, report: dict[str, Any]) -> None:
    """Store (or replace) the report of the pair ``a`` -> ``b``.

    The statement sqlite-utils' ``upsert`` runs, written out: ingest of a later release
    stores its report here and needs sqlite-utils nowhere else (its import: 0.2-0.3 s CPU)."""
    conn.execute(
        "INSERT INTO diffs (from_version_id, to_version_id, report, created_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (from_version_id, to_version_id) "
        "DO UPDATE SET report = excluded.report, created_at = excluded.created_at",
        (a, b, dumps(report), now()),
    )


def delete_diff_report(conn: sqlite3.Connection, a: int, b: int) -> bool:
    cur = conn.execute("DELETE FROM diffs WHERE from_version_id = ? AND to_version_id = ?", (a, b))
    return cur.rowcount > 0


# --------------------------------------------------------------------------- oracle


def insert_oracle_module(conn: sqlite3.Connection, row: dict[str, Any]) -> int:
    return int(_db(conn)["oracle_modules"].insert({"created_at": now(), **row}).last_pk)


# --------------------------------------------------------------------------- analysis


def replace_thread_facts(
    conn: sqlite3.Connection, version_id: int, facts: list[dict[str, Any]]
) -> None:
    """The thread facts of a version, replacing earlier ones."""
    conn.execute("DELETE FROM thread_facts WHERE version_id = ?", (version_id,))
    _insert_all(
        conn,
        "thread_facts",
        (
            {
                "version_id": version_id,
                "seq": i,
                "kind": str(f.get("kind", "")),
                "func_index": f.get("func_index"),
                "payload": dumps(f),
            }
            for i, f in enumerate(facts)
        ),
    )


def replace_structs(
    conn: sqlite3.Connection, version_id: int, structs: list[dict[str, Any]]
) -> None:
    """The recovered structs of a version, replacing earlier ones."""
    conn.execute("DELETE FROM structs WHERE version_id = ?", (version_id,))
    _insert_all(
        conn,
        "structs",
        (
            {
                "version_id": version_id,
                "name": s["name"],
                "source_function": s.get("source_function"),
                "fields": dumps(s.get("fields", [])),
                "members": dumps(s.get("members", [])),
            }
            for s in structs
        ),
    )


def upsert_analysis(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    """A deep-analysis record, keyed by ``stable_id``."""
    rec = {"updated_at": now(), **row}
    if isinstance(rec.get("rename_map"), dict):
        rec["rename_map"] = dumps(rec["rename_map"])
    _db(conn)["analyses"].upsert(rec, pk="stable_id")


def record_run(
    conn: sqlite3.Connection, version_id: int, kind: str, summary: dict[str, Any]
) -> int:
    return int(
        _db(conn)["analysis_runs"]
        .insert(
            {"version_id": version_id, "kind": kind, "summary": dumps(summary), "created_at": now()}
        )
        .last_pk
    )


# --------------------------------------------------------------------------- feed


def append_event(
    conn: sqlite3.Connection,
    kind: str,
    *,
    stable_id: str | None = None,
    version_id: int | None = None,
    payload: dict[str, Any] | None = None,
) -> int:
    """One event of the studio's feed (ids grow monotonically); returns its id."""
    return int(
        _db(conn)["events"]
        .insert(
            {
                "kind": kind,
                "stable_id": stable_id,
                "version_id": version_id,
                "payload": dumps(payload or {}),
                "created_at": now(),
            }
        )
        .last_pk
    )


# --------------------------------------------------------------------------- suggestions


def save_suggestion(conn: sqlite3.Connection, row: dict[str, Any]) -> bool:
    """Keep an agent name below the write floor for a person (one per version and function).

    ``row`` has version_id, stable_id, func_index, name, confidence, backend, model, rule,
    source, evidence (dict). A suggestion a person already accepted or dismissed under the
    same name stays decided (a re-run does not bring it back); otherwise the row is replaced
    by the newer proposal, open. Returns True when the row was stored.
    """
    from kbtool.kb.db import transaction

    with transaction(conn):
        cur = conn.execute(
            "SELECT name, status FROM suggestions WHERE version_id = ? AND stable_id = ?",
            (row["version_id"], row["stable_id"]),
        ).fetchone()
        if cur is not None and cur[1] != "open" and cur[0] == row["name"]:
            return False
        rec = {
            **row,
            "evidence": dumps(row.get("evidence") or {}),
            "status": "open",
            "created_at": now(),
            "decided_at": None,
        }
        _db(conn)["suggestions"].upsert(rec, pk=("version_id", "stable_id"))
    return True


def decide_suggestion(
    conn: sqlite3.Connection, version_id: int, stable_id: str, status: str
) -> bool:
    """Mark an open suggestion ``accepted`` or ``dismissed``; False when none was open."""
    if status not in ("accepted", "dismissed"):
        raise ValueError(f"unknown suggestion status {status!r}")
    from kbtool.kb.db import transaction

    with transaction(conn):
        n = conn.execute(
            "UPDATE suggestions SET status = ?, decided_at = ? "
            "WHERE version_id = ? AND stable_id = ? AND status = 'open'",
            (status, now(), version_id, stable_id),
        ).rowcount
    return n > 0


def save_agent_answer(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    """Keep one provider answer as it arrives (its own short transaction, so an interrupted
    pass keeps every answer it paid for). ``row``: backend, model, prompt_hash, version_id,
    func_index, variant, answer, tokens_in, tokens_out, prompt_tokens."""
    from kbtool.kb.db import transaction

    with transaction(conn):
        conn.execute(
            "INSERT OR REPLACE INTO agent_answers (backend, model, prompt_hash, version_id,"
            " func_index, variant, answer, tokens_in, tokens_out, prompt_tokens, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["backend"],
                row.get("model") or "",
                row["prompt_hash"],
                row.get("version_id"),
                row.get("func_index"),
                row.get("variant"),
                row["answer"],
                row.get("tokens_in"),
                row.get("tokens_out"),
                row.get("prompt_tokens"),
                now(),
            ),
        )
