"""A later ingest matches a big module in a second process while it walks the data (issue #30,
session 25): the same KB whether the child answers, dies or is not used (below the
threshold); a matcher error is the same error, and nothing of the version lands."""

from __future__ import annotations

import os

import pytest

from kbtool.identity import pairing
from kbtool.kb.db import open_rw
from kbtool.services import ingest_match
from kbtool.services.ingest import ingest_file
from tests.support.kb_rows import table_rows
from tests.support.later_ingest import spied_later
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


def _later(tmp_path, name: str, monkeypatch, **env) -> tuple[dict, list, list, list]:
    """Ingest Z55 then Z56 into a new KB with ``env`` set for the second; the KB's rows, the
    jobs' ``in_child``, the progress stages seen and the pairing's review reuses."""
    conn = open_rw(tmp_path / f"{name}.db")
    ingest_file(conn, Z55, label="a")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    jobs: list[bool] = []
    real_result = ingest_match.MatchJob.result

    def result(self):
        out = real_result(self)
        jobs.append(self.in_child)
        return out

    reused: list[bool] = []
    real_review = pairing.review_pairing

    def review(pg):
        got = real_review(pg)
        reused.append(got)
        return got

    seen: list[str] = []
    with monkeypatch.context() as m:
        m.setattr(ingest_match.MatchJob, "result", result)
        m.setattr(pairing, "review_pairing", review)
        ingest_file(conn, Z56, label="b", progress=lambda stage, d, t: seen.append(stage))
    for k in env:
        monkeypatch.delenv(k)
    rows = table_rows(conn)
    conn.close()
    return rows, jobs, seen, reused


# the later ingest in a fresh process: a test runner's threads (pytest-xdist's) rule out a
# fork in its own (kbtool.wasm.workers.pool_context), and the child is made to run on a
# single core too (its cores count as two); prints what the spies saw
_LATER_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
from kbtool.identity import pairing
from kbtool.kb.db import open_rw
from kbtool.services import ingest_match
from kbtool.services.ingest import ingest_file
db, a, b = sys.argv[1:4]
conn = open_rw(Path(db))
ingest_file(conn, Path(a), label="a")
jobs, reused, seen = [], [], []
real_result, real_review = ingest_match.MatchJob.result, pairing.review_pairing
def result(self):
    out = real_result(self)
    jobs.append(self.in_child)
    return out
def review(pg):
    got = real_review(pg)
    reused.append(got)
    return got
ingest_match.MatchJob.result, pairing.review_pairing = result, review
ingest_match._cores = lambda: 2
ingest_file(conn, Path(b), label="b", progress=lambda stage, d, t: seen.append(stage))
conn.close()
print(json.dumps({"jobs": jobs, "reused": reused, "seen": sorted(set(seen))}))
"""


def _later_fresh(tmp_path, name: str, **env) -> tuple[dict, dict]:
    """As :func:`_later`, in a fresh single-threaded process with ``env``: the KB's rows and
    what the spies saw."""
    db = tmp_path / f"{name}.db"
    return spied_later(_LATER_IN_A_FRESH_PROCESS, db, str(Z55), str(Z56), env=env)


def test_the_child_matches_a_big_module_and_the_kb_is_the_same(tmp_path, monkeypatch) -> None:
    assert not ingest_match.match_in_child(Z56.stat().st_size)  # the demo: below the default
    here, jobs, seen, reused = _later(tmp_path, "here", monkeypatch)
    assert jobs == [False] and reused == [True]
    child, spied = _later_fresh(tmp_path, "child", KBTOOL_PARALLEL_MATCH_BYTES="0")
    assert spied["jobs"] == [True]
    # the report's pairing was made by the child too, after its answer (no review here:
    # tests/unit/services/test_ingest_classify.py sees the child reuse its verdicts)
    assert spied["reused"] == []
    assert child == here
    assert "match" in spied["seen"] and "data" in spied["seen"]  # progress lines still show
    assert spied["seen"] == sorted(set(seen))


def test_a_child_that_dies_loses_nothing(tmp_path, monkeypatch) -> None:
    here, *_ = _later(tmp_path, "here", monkeypatch)
    died, spied = _later_fresh(
        tmp_path, "died", KBTOOL_PARALLEL_MATCH_BYTES="0", KBTOOL_TEST_MATCH_CHILD_FAIL="1"
    )
    assert spied["jobs"] == [False]  # the matcher ran here instead
    assert died == here


def test_a_matcher_error_is_the_same_error_and_nothing_lands(tmp_path, monkeypatch) -> None:
    from kbtool.identity import matcher

    def broken(old, new, **kw):
        raise RuntimeError("matcher broke")

    monkeypatch.setattr(matcher, "match_functions_staged", broken)
    for env in ("0", str(10**12)):  # in a child (which fails), and here
        monkeypatch.setenv("KBTOOL_PARALLEL_MATCH_BYTES", env)
        conn = open_rw(tmp_path / f"kb{len(env)}.db")
        ingest_file(conn, Z55, label="a")
        before = table_rows(conn)
        with pytest.raises(RuntimeError, match="matcher broke"):
            ingest_file(conn, Z56, label="b")
        assert table_rows(conn) == before  # one transaction: nothing of version b
        conn.close()


def test_the_threshold_reads_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("KBTOOL_PARALLEL_MATCH_BYTES", "100")
    assert ingest_match.match_in_child(101) == (len(os.sched_getaffinity(0)) > 1)
    assert not ingest_match.match_in_child(100)
    monkeypatch.setenv("KBTOOL_PARALLEL_MATCH_BYTES", "junk")
    assert not ingest_match.match_in_child(ingest_match.PARALLEL_MATCH_BYTES)
