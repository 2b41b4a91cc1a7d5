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
from kbtool.services.ingest_classify import flags_for, pairing_from
from tests.support.kb_rows import table_rows
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


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
ingest.ingest_file(conn, Path(a), label="a")
used, real_child_report = [], ingest.child_report
def child_report(*a):
    pg, classes = real_child_report(*a)
    used.append(pg is not None)
    if classes is not None:
        def spied(pg, defined):
            got = classes(pg, defined)
            used.append(got is not None)
            return got
        return pg, spied
    used.append(False)
    return pg, classes
def broken(*a):
    raise RuntimeError("flags broke")
ingest.child_report = child_report
from kbtool.identity import pairing
real_review = pairing.review_pairing
def review(pg):  # (in either process: each appends to the file)
    got = real_review(pg)
    with open(db + ".reviews", "a") as fh:
        fh.write(f"{got}\\n")
    return got
pairing.review_pairing = review
if mode == "fail":
    ingest_classify.child_flags = broken
ingest_match._cores = lambda: 2
ingest.ingest_file(conn, Path(b), label="b")
conn.close()
print(json.dumps({"used": used}))
"""


def _fresh(tmp_path, mode: str) -> tuple[dict, list, list]:
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
    reviews = (tmp_path / f"{mode}.db.reviews").read_text().split()
    conn = sqlite3.connect(db)
    rows = table_rows(conn, by_rowid=False)
    conn.close()
    return rows, used, reviews


def test_the_childs_flags_give_the_same_kb_and_report(tmp_path) -> None:
    conn = open_rw(tmp_path / "here.db")  # (in this threaded process: no child)
    ingest_file(conn, Z55, label="a")
    ingest_file(conn, Z56, label="b")
    here = table_rows(conn, by_rowid=False)
    conn.close()
    assert here["diffs"]  # the stored report is compared too
    child, used, reviews = _fresh(tmp_path, "child")
    assert used == [True, True]  # the child's pairing and flags
    assert reviews == ["True"]  # one review of the pairing: the child's, its verdicts reused
    assert child == here
    other, used, reviews = _fresh(tmp_path, "fail")  # paired and classified here: the same KB
    assert used == [False, False]
    assert reviews == ["True"]  # (here, with the verdicts the child gave with its answer)
    assert other == here


def _row(i: int, sid: str, imported: bool = False) -> dict:
    return {"index": i, "stable_id": sid, "imported": imported}


def test_the_childs_pairing_is_refused_when_a_new_id_is_an_old_one() -> None:
    class _R:
        def __init__(self, i: int) -> None:
            self.index = i

    old = [_row(0, "a"), _row(1, "b")]
    new = [_row(0, "a"), _row(1, "fresh")]
    answer = ([(0, 0, 1.0, "identity", False, True), (1, 1, 0.7, "body", True, False)], b"")
    recs = [_R(0), _R(1)]
    pg = pairing_from(answer, 1, 2, old, new, recs, recs, {0: "carried"})
    assert [(p.old_index, p.new_index, p.score, p.review) for p in pg.by_new.values()] == [
        (0, 0, 1.0, False),
        (1, 1, 0.7, True),
    ]
    assert pg.by_old[1] is pg.by_new[1] and (pg.from_version_id, pg.to_version_id) == (1, 2)
    clash = [_row(0, "a"), _row(1, "b")]  # new 1 not carried, yet its id is an old one
    assert pairing_from(answer, 1, 2, old, clash, recs, recs, {0: "carried"}) is None


def test_flags_are_taken_only_for_exactly_the_childs_pairs() -> None:
    def pairing(pairs: dict[int, int]) -> tuple[Pairing, list[Pair]]:
        rows = {i: {"index": i, "imported": False} for i in range(4)}
        pg = Pairing(0, 0, rows, dict(rows), {}, {})
        for o, n in pairs.items():
            pg.by_old[o] = pg.by_new[n] = Pair(o, n, 1.0, "body", False, False)
        return pg, pg.defined_pairs()

    answer = ([(0, 0, 1.0, "body", False, False), (1, 2, 1.0, "body", False, False)], b"\x01\x02")
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 2})) == bytes([1, 2])
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 3})) is None  # another pair
    assert flags_for(lambda: answer)(*pairing({0: 0, 1: 2, 3: 3})) is None  # one more
    assert flags_for(lambda: None)(*pairing({0: 0, 1: 2})) is None  # no answer
