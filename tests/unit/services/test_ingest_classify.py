"""A later ingest's report flags made by the matcher's child after its answer (issue #30,
session 28): the report takes them only for exactly the child's pairs, and the KB (the
stored report included) is the same whether they are used, fail or do not fit."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from kbtool.identity.pairing import Pair, Pairing
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from kbtool.services.ingest_classify import flags_for, pair_map
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


def _rows(conn: sqlite3.Connection) -> dict[str, list]:
    """Every table's rows (timestamp columns left out), in a fixed order."""
    out = {}
    for (t,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info('{t}')") if not r[1].endswith("_at")]
        sel = ", ".join(f'"{c}"' for c in cols)
        out[t] = sorted((tuple(r) for r in conn.execute(f"SELECT {sel} FROM '{t}'")), key=repr)
    return out


# the later ingest in a fresh single-threaded process (a fork is ruled out in a test runner's
# threaded one); MODE "fail": the child's flags raise; "misfit": the child's pairs lose one
# pair. Prints whether the report took the child's flags.
_LATER = """
import json, sys
from pathlib import Path
from kbtool.kb.db import open_rw
from kbtool.services import ingest, ingest_classify, ingest_match
db, a, b, mode = sys.argv[1:5]
conn = open_rw(Path(db))
ingest_file = ingest.ingest_file
ingest_file(conn, Path(a), label="a")
used, real_flags_for, real_pair_map = [], ingest.flags_for, ingest_classify.pair_map
def flags_for(answer):
    inner = real_flags_for(answer)
    def classes(pg, defined):
        got = inner(pg, defined)
        used.append(got is not None)
        return got
    return classes
def broken(*a):
    raise RuntimeError("flags broke")
def misfit(*a):
    pg = real_pair_map(*a)
    o = next(iter(pg.by_old))
    del pg.by_new[pg.by_old.pop(o).new_index]
    return pg
ingest.flags_for = flags_for
if mode == "fail":
    ingest_classify.child_flags = broken
if mode == "misfit":
    ingest_classify.pair_map = misfit
ingest_match._cores = lambda: 2
ingest_file(conn, Path(b), label="b")
conn.close()
print(json.dumps({"used": used}))
"""


def _fresh(tmp_path, mode: str) -> tuple[dict, list]:
    db = tmp_path / f"{mode}.db"
    run = subprocess.run(
        [sys.executable, "-c", _LATER, str(db), str(Z55), str(Z56), mode],
        env={**os.environ, "KBTOOL_PARALLEL_MATCH_BYTES": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    used = json.loads(run.stdout.strip().splitlines()[-1])["used"]
    conn = sqlite3.connect(db)
    rows = _rows(conn)
    conn.close()
    return rows, used


def test_the_childs_flags_give_the_same_kb_and_report(tmp_path) -> None:
    conn = open_rw(tmp_path / "here.db")  # (in this threaded process: no child)
    ingest_file(conn, Z55, label="a")
    ingest_file(conn, Z56, label="b")
    here = _rows(conn)
    conn.close()
    assert here["diffs"]  # the stored report is compared too
    child, used = _fresh(tmp_path, "child")
    assert used == [True]
    assert child == here
    for mode in ("fail", "misfit"):  # classified in the parent instead: the same KB
        other, used = _fresh(tmp_path, mode)
        assert used == [False], mode
        assert other == here, mode


def _row(i: int, sid: str, imported: bool = False) -> dict:
    return {"index": i, "stable_id": sid, "imported": imported}


class _M:
    def __init__(self, o: int, n: int, method: str = "body") -> None:
        self.old_index, self.new_index, self.method = o, n, method


def test_pair_map_pairs_carried_identities_then_the_matchers_pairs() -> None:
    old = [_row(0, "imp", True), _row(1, "a"), _row(2, "b"), _row(3, "c")]
    new = [_row(0, None, True), _row(1, None), _row(2, None), _row(3, None), _row(4, None)]
    exact = [_M(0, 0), _M(2, 1)]  # new 1 carries old 2's id
    full = [_M(0, 0), _M(2, 1), _M(2, 3), _M(1, 2), _M(3, 4)]  # old 2 already taken: no pair
    pg = pair_map(old, new, exact, full)
    assert {o: p.new_index for o, p in pg.by_old.items()} == {0: 0, 2: 1, 1: 2, 3: 4}
    assert pg.by_old[2].identity and not pg.by_old[1].identity
    assert [p.new_index for p in pg.defined_pairs()] == [1, 2, 4]


def test_flags_are_taken_only_for_exactly_the_childs_pairs() -> None:
    def pairing(pairs: dict[int, int]) -> tuple[Pairing, list[Pair]]:
        rows = {i: {"index": i, "imported": False} for i in range(4)}
        pg = Pairing(0, 0, rows, dict(rows), {}, {})
        for o, n in pairs.items():
            pg.by_old[o] = pg.by_new[n] = Pair(o, n, 1.0, "body", False, False)
        return pg, pg.defined_pairs()

    answer = ({0: 0, 1: 2}, bytes([1, 2]))
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 2})) == bytes([1, 2])
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 3})) is None  # another pair
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 2, 3: 3})) is None  # one more
    assert flags_for(lambda: None)(*pairing({0: 0, 1: 2})) is None  # no answer
