"""A later ingest's matcher child forked before the decode (issue #30, session 29): it reads
the expected parent by its own read-only connection while the decode runs and matches the
records sent to it; the KB (the stored report included) is the same whether it is used,
guessed another parent than the lineage's, or died; none is forked inside a transaction."""

from __future__ import annotations

import os

from kbtool.kb.db import open_rw, transaction
from kbtool.services import ingest_match
from kbtool.services.ingest import ingest_file
from tests.support.later_ingest import ingested_here, spied_later
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"

# Z55 as "a", again as "a2" (forced: the same bytes, version 2), then Z56 in a fresh
# single-threaded process (a test runner's threads rule out a fork); GUESS: the parent the
# early child is told to read ("" the default guess). Prints, per ingest of Z56, whether an
# early child was forked, the parent it read, and whether the answer and flags were a child's.
_LATER = """
import json, sys
from pathlib import Path
from kbtool.kb.db import open_rw
from kbtool.services import ingest, ingest_match
db, a, b, guess = sys.argv[1:5]
conn = open_rw(Path(db))
ingest.ingest_file(conn, Path(a), label="a")
ingest.ingest_file(conn, Path(a), label="a2", force=True)
seen = {"early": [], "answer": [], "flags": []}
real_start, real_result = ingest_match.start_early, ingest_match.MatchJob.result
def start_early(*args):
    job = real_start(*args)
    seen["early"].append(None if job is None else job.parent)
    return job
def result(self):
    out = real_result(self)
    seen["answer"].append(self.in_child)
    return out
real_report = ingest.child_report
def child_report(*args):
    pg, classes = real_report(*args)
    seen["flags"].append(classes is not None)
    return pg, classes
if guess:
    ingest_match.expected_parent = lambda *args: int(guess)
from kbtool.identity import matcher
real_staged = matcher.match_functions_staged
def staged(old, new, **kw):  # (in either process: whether the old side was made ahead)
    prep = kw.get("old_prepared")
    with open(db + ".prep", "a") as fh:
        fh.write(f"{prep is not None and prep.old is old}\\n")
    return real_staged(old, new, **kw)
matcher.match_functions_staged = staged
ingest.start_early, ingest_match.MatchJob.result = start_early, result
ingest.child_report = child_report
ingest_match._cores = lambda: 2
ingest.ingest_file(conn, Path(b), label="b")
conn.close()
print(json.dumps(seen))
"""


def _fresh(tmp_path, name: str, guess: str = "", **env) -> tuple[dict, dict]:
    env = {"KBTOOL_PARALLEL_MATCH_BYTES": "0", "KBTOOL_EARLY_MATCH": "1", **env}
    db = tmp_path / f"{name}.db"
    return spied_later(_LATER, db, str(Z55), str(Z56), guess, env=env, by_rowid=False)


def _here(tmp_path) -> dict:
    releases = ((Z55, "a"), (Z55, "a2"), (Z56, "b"))
    return ingested_here(tmp_path / "here.db", *releases, by_rowid=False)


def test_the_early_child_gives_the_same_kb_and_report(tmp_path) -> None:
    here = _here(tmp_path)
    assert here["diffs"]  # the stored report is compared too
    early, seen = _fresh(tmp_path, "early")
    # forked before the decode, reading version 2 (the latest: the lineage's choice), it
    # answered (the matcher's old side made while it waited for the new records) and made
    # the report's pairing flags
    assert seen == {"early": [2], "answer": [True], "flags": [True]}
    assert (tmp_path / "early.db.prep").read_text().split() == ["True"]
    assert early == here


def test_a_wrong_guess_or_a_dead_early_child_loses_nothing(tmp_path) -> None:
    here = _here(tmp_path)
    # told to read version 1: the lineage chose 2, so the child forked after it matches
    wrong, seen = _fresh(tmp_path, "wrong", guess="1")
    assert seen == {"early": [1], "answer": [True], "flags": [True]}
    assert wrong == here
    # a version the KB lacks: the early child fails to read it and dies
    missing, seen = _fresh(tmp_path, "missing", guess="99")
    assert seen["early"] == [99] and seen["answer"] == [True]
    assert missing == here
    died, seen = _fresh(tmp_path, "died", KBTOOL_TEST_MATCH_CHILD_FAIL="1")
    assert seen["answer"] == [False]  # (no child answered: matched here)
    assert died == here


def test_no_early_child_inside_a_transaction_or_below_the_threshold(tmp_path, monkeypatch) -> None:
    conn = open_rw(tmp_path / "kb.db")
    ingest_file(conn, Z55, label="a")
    data = Z56.read_bytes()
    monkeypatch.setattr(ingest_match, "_cores", lambda: 2)
    monkeypatch.setenv("KBTOOL_EARLY_MATCH", "1")
    monkeypatch.setenv("KBTOOL_PARALLEL_MATCH_BYTES", str(len(data)))
    assert ingest_match.start_early(conn, data, "0" * 64, None, None, []) is None
    monkeypatch.setenv("KBTOOL_PARALLEL_MATCH_BYTES", "0")
    with transaction(conn):  # the child would not see this transaction's writes
        assert ingest_match.start_early(conn, data, "0" * 64, None, None, []) is None
    conn.close()


def test_the_expected_parent(tmp_path) -> None:
    conn = open_rw(tmp_path / "kb.db")
    assert ingest_match.expected_parent(conn, None, None, []) is None  # an empty KB
    ingest_file(conn, Z55, label="a")
    ingest_file(conn, Z56, label="b", program="other")
    assert ingest_match.expected_parent(conn, None, None, []) == 2  # the latest
    assert ingest_match.expected_parent(conn, None, 1, []) == 1  # --base
    assert ingest_match.expected_parent(conn, "other", None, []) == 2
    assert ingest_match.expected_parent(conn, "nothing", None, []) is None
    assert ingest_match.expected_parent(conn, None, None, [{"id": 1}]) == 1  # the same bytes
    conn.close()


def test_an_unwanted_child_is_killed_without_the_grace_wait_nor_its_teardown() -> None:
    import multiprocessing
    import time

    class _Closed:
        def close(self) -> None:
            pass

    for kill, least in ((True, 0.0), (False, 0.45)):
        proc = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(60,))
        proc.start()
        job = ingest_match.MatchJob((), ())
        job.proc, job.reader = proc, _Closed()
        t = time.perf_counter()
        job.stop(kill=kill)
        took = time.perf_counter() - t
        assert job.proc is None
        assert took >= least  # (without ``kill``: a 0.5 s grace for the child to leave)
        if kill:  # (killed, its teardown not waited for: reaped later)
            assert took < 0.45
            proc.join(timeout=10)
        assert not proc.is_alive() and proc.exitcode is not None


def test_the_early_child_only_on_a_free_core_unless_told(monkeypatch) -> None:
    monkeypatch.setattr(ingest_match, "_cores", lambda: 2)
    monkeypatch.delenv("KBTOOL_EARLY_MATCH", raising=False)
    for load, want in ((0.3, True), (1.9, True), (2.0, False), (7.5, False)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert ingest_match.early_wanted() is want
        monkeypatch.setenv("KBTOOL_EARLY_MATCH", "1")
        assert ingest_match.early_wanted()
        monkeypatch.setenv("KBTOOL_EARLY_MATCH", "0")
        assert not ingest_match.early_wanted()
        monkeypatch.delenv("KBTOOL_EARLY_MATCH")
