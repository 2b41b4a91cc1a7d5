"""A version's data references as packed columns (kbtool/kb/datarefs.py, schema 10): every
reader answers what the old table (a row per reference, read by SQL) answered, on arbitrary
rows (ties, references from data, negative and 64-bit targets, wide widths, several chunks);
a schema-9 KB's rows migrate with each reader's answers unchanged; bad rows are refused with
a one-line error and nothing written."""

from __future__ import annotations

import sqlite3
from operator import itemgetter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.kb import datamodel as dm
from kbtool.kb import datarefs, schema
from kbtool.kb.db import open_rw

ROW = st.tuples(
    st.integers(-1, 5),
    st.integers(0, 40),
    st.sampled_from(datarefs.KINDS),
    st.sampled_from(datarefs.TARGET_KINDS),
    st.one_of(st.integers(-3, 12), st.sampled_from([2**31 - 1, 2**31, 2**40, -(2**40)])),
    st.one_of(st.integers(0, 8), st.just(300), st.just(70000)),
)


def _kb(path, versions: int = 2) -> sqlite3.Connection:
    conn = open_rw(str(path), create=True)
    for v in range(1, versions + 1):
        conn.execute(
            "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
            " exported_functions, ingested_at) VALUES (?, 'x', 0, 0, 1, 0, 't')",
            (f"v{v}",),
        )
    return conn


def _expected(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=itemgetter(0, 1))  # the stored order: (function, offset), stable


def _answers(conn, vid: int, probes: list[tuple]) -> list:
    """What every reader returns for ``probes`` (a target kind, target, range end)."""
    out: list = [dm.model_info(conn, vid)["refs"] if dm.model_info(conn, vid) else None]
    for tk, t, hi in probes:
        out.append(dm.refs_to(conn, vid, tk, t, limit=1000))
        out.append(dm.refs_to(conn, vid, tk, t, limit=2, offset=1))
        out.append(dm.refs_to(conn, vid, tk, t, hi, limit=1000))
        out.append(dm.refs_to(conn, vid, tk, t, hi, limit=3, offset=2))
    for f in range(-2, 7):
        out.append(dm.refs_from(conn, vid, f))
        out.append(dm.refs_from(conn, vid, f, limit=2))
    return out


def _reference(rows: list[tuple], probes: list[tuple]) -> list:
    """The answers of the old table, computed from the rows (its SQL's semantics)."""
    stored = _expected(rows)

    def ref(r):
        return dict(
            zip(("func_index", "offset", "kind", "target_kind", "target", "width"), r, strict=True)
        )

    def page(found, limit, offset=0):
        return [ref(r) for r in found[offset : offset + limit]], len(found)

    out: list = [len(rows)]
    for tk, t, hi in probes:
        one = [r for r in stored if r[3] == tk and r[4] == t]
        # a range: by (function, offset), one instruction's references by target (the
        # old SQL: the target index's order, then sorted on function and offset)
        rng = sorted((r for r in stored if r[3] == tk and t <= r[4] < hi), key=itemgetter(0, 1, 4))
        out += [page(one, 1000), page(one, 2, 1), page(rng, 1000), page(rng, 3, 2)]
    for f in range(-2, 7):
        mine = [ref(r) for r in stored if r[0] == f]
        out += [mine, mine[:2]]
    return out


PROBES = [
    (tk, t, hi)
    for tk in (*datarefs.TARGET_KINDS, "nothing")
    for t, hi in ((0, 1), (-3, 5), (2, 9), (2**31 - 1, 2**40 + 1), (-(2**40), 0), (7, 7))
]


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, max_size=40), st.lists(ROW, max_size=10), st.sampled_from([1, 3, 1024]))
def test_every_reader_answers_as_the_old_table(tmp_path_factory, rows, other, chunk):
    old = datarefs.CHUNK
    datarefs.CHUNK = chunk  # (several chunks on a few rows: the format's constant, both ways)
    try:
        conn = _kb(tmp_path_factory.mktemp("kb") / "kb.db")
        with conn:
            datarefs.write(conn, 1, list(rows))
            datarefs.write(conn, 2, list(other))  # another version's rows around them
            conn.execute(
                "INSERT INTO data_models(version_id, data_start, data_end, built_at)"
                " VALUES (1, 0, 0, 't'), (2, 0, 0, 't')"
            )
        assert _answers(conn, 1, PROBES) == _reference(list(rows), PROBES)
        assert datarefs.all_refs(conn, 1) == _expected(list(rows))
        assert datarefs.all_refs(conn, 2) == _expected(list(other))
        conn.close()
    finally:
        datarefs.CHUNK = old


def test_a_bad_reference_is_refused_in_one_line_and_nothing_written(tmp_path):
    conn = _kb(tmp_path / "kb.db")
    for bad, what in (
        ((0, 1, "poke", "data", 5, 0), "unknown data reference kind 'poke'"),
        ((0, 1, "load", "heap", 5, 0), "unknown data reference target kind 'heap'"),
        ((0, 1, "load", "data", 2**70, 0), "does not fit in 64 bits"),
    ):
        with pytest.raises(ValueError, match=what) as exc, conn:
            datarefs.write(conn, 1, [(0, 0, "addr", "data", 1, 0), bad])
        assert "\n" not in str(exc.value)
        assert conn.execute("SELECT count(*) FROM data_ref_chunks").fetchone()[0] == 0
    conn.close()


def _schema_9_kb(path, rows_by_version: dict[int, list[tuple]]) -> None:
    """A KB as kbtool wrote it at schema 9 (migrations 1-9 only), with ``data_refs`` rows."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("BEGIN")
    for n in range(1, 10):
        schema.MIGRATIONS[n](raw)
    raw.execute(
        "INSERT INTO meta(key, value) VALUES ('kind', ?), ('schema_version', '9')",
        (schema.KB_KIND,),
    )
    for vid, rows in sorted(rows_by_version.items()):
        raw.execute(
            "INSERT INTO versions (id, label, sha256, size, imported_functions,"
            " defined_functions, exported_functions, ingested_at)"
            " VALUES (?, ?, 'x', 0, 0, 1, 0, 't')",
            (vid, f"v{vid}"),
        )
        raw.execute(
            "INSERT INTO data_models(version_id, data_start, data_end, built_at)"
            " VALUES (?, 0, 0, 't')",
            (vid,),
        )
        raw.executemany(
            "INSERT INTO data_refs(version_id, func_index, offset, kind, target_kind, target,"
            f" width) VALUES ({vid:d},?,?,?,?,?,?)",
            _expected(rows),  # as schema-9 ingest wrote them: in (function, offset) order
        )
    raw.execute("COMMIT")
    raw.close()


def _old_answers(path, vid: int, probes: list[tuple]) -> list:
    """The schema-9 readers' SQL (kbtool/kb/datamodel.py before schema 10), verbatim."""
    conn = sqlite3.connect(path)
    cols = "func_index, offset, kind, target_kind, target, width"

    def ref(r):
        return dict(zip(cols.split(", "), r, strict=True))

    def to(tk, lo, hi, limit, offset):
        if hi is None:
            cond, args, order = "target = ?", [lo], "rowid"
        else:
            cond, args, order = "target >= ? AND target < ?", [lo, hi], "func_index, offset"
        base = f"FROM data_refs WHERE version_id = ? AND target_kind = ? AND {cond}"
        total = conn.execute(f"SELECT count(*) {base}", [vid, tk, *args]).fetchone()[0]
        rows = conn.execute(
            f"SELECT {cols} {base} ORDER BY {order} LIMIT ? OFFSET ?",
            [vid, tk, *args, limit, offset],
        ).fetchall()
        return [ref(r) for r in rows], total

    def frm(f, limit=2000):
        return [
            ref(r)
            for r in conn.execute(
                f"SELECT {cols} FROM data_refs WHERE version_id = ? AND func_index = ?"
                " ORDER BY offset LIMIT ?",
                (vid, f, limit),
            )
        ]

    out: list = [
        conn.execute("SELECT count(*) FROM data_refs WHERE version_id = ?", (vid,)).fetchone()[0]
    ]
    for tk, t, hi in probes:
        out += [to(tk, t, None, 1000, 0), to(tk, t, None, 2, 1)]
        out += [to(tk, t, hi, 1000, 0), to(tk, t, hi, 3, 2)]
    for f in range(-2, 7):
        out += [frm(f), frm(f, 2)]
    conn.close()
    return out


@settings(max_examples=25, deadline=None)
@given(st.lists(ROW, max_size=60), st.lists(ROW, max_size=20))
def test_a_schema_9_kb_migrates_with_every_answer_unchanged(tmp_path_factory, v1, v2):
    path = tmp_path_factory.mktemp("kb") / "old.db"
    _schema_9_kb(path, {1: list(v1), 2: list(v2)})
    before = {v: _old_answers(path, v, PROBES) for v in (1, 2)}
    conn = open_rw(str(path))  # migrates
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION
    assert "data_refs" not in {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert {v: _answers(conn, v, PROBES) for v in (1, 2)} == before
    assert datarefs.all_refs(conn, 1) == _expected(list(v1))
    conn.close()
