"""A later ingest's report pair flags shared by the early match child and this process
(issue #30, session 30): the child sends the pairs, then the head's codes, then the rest's;
this process classifies the rest itself meanwhile, or takes the child's when it cannot; the
KB (the stored report included) is the same either way."""

from __future__ import annotations

from kbtool.services.ingest_classify import split_at
from tests.support.later_ingest import ingested_here, spied_later
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"

# Z55, then Z56 in a fresh single-threaded process (a test runner's threads rule out a
# fork), the early match child forced; MODE "mine": this process classifies the rest;
# "theirs": its classification of the rest fails (the child's codes are taken). Prints
# whether this process's codes were made, whether the child's rest was read, and whether
# the report took the child's flags.
_LATER = """
import json, sys
from pathlib import Path
from kbtool.kb.db import open_rw
from kbtool.services import ingest, ingest_classify, ingest_match
db, a, b, mode = sys.argv[1:5]
conn = open_rw(Path(db))
ingest.ingest_file(conn, Path(a), label="a")
seen = {"mine": [], "rest": [], "used": []}
real_tail, real_rest = ingest_classify.tail_codes, ingest_match.MatchJob.rest
def tail_codes(pg, inputs):
    got = real_tail(pg, inputs) if mode == "mine" else None
    seen["mine"].append(got is not None)
    return got
def rest(self):
    got = real_rest(self)
    seen["rest"].append(got is not None)
    return got
real_report = ingest.child_report
def child_report(*args):
    pg, classes = real_report(*args)
    if classes is None:
        return pg, classes
    def spied(pg_, defined):
        got = classes(pg_, defined)
        seen["used"].append(got is not None)
        return got
    return pg, spied
ingest_classify.tail_codes, ingest_match.MatchJob.rest = tail_codes, rest
ingest.child_report = child_report
ingest_match._cores = lambda: 2
ingest.ingest_file(conn, Path(b), label="b")
conn.close()
print(json.dumps(seen))
"""


def _fresh(tmp_path, mode: str) -> tuple[dict, dict]:
    env = {"KBTOOL_PARALLEL_MATCH_BYTES": "0", "KBTOOL_EARLY_MATCH": "1"}
    return spied_later(_LATER, tmp_path / f"{mode}.db", str(Z55), str(Z56), mode, env=env)


def _here(tmp_path) -> dict:
    return ingested_here(tmp_path / "here.db", (Z55, "a"), (Z56, "b"))


def test_the_rest_of_the_flags_made_here_or_by_the_child_give_the_same_kb(tmp_path) -> None:
    here = _here(tmp_path)
    assert here["diffs"]
    mine, seen = _fresh(tmp_path, "mine")
    # this process classified the rest; the child's rest was not read; the flags were taken
    assert seen == {"mine": [True], "rest": [], "used": [True]}
    assert mine == here
    theirs, seen = _fresh(tmp_path, "theirs")
    assert seen == {"mine": [False], "rest": [True], "used": [True]}
    assert theirs == here


def test_the_split_point() -> None:
    for n in (0, 1, 2, 3, 5, 10, 7156):
        k = split_at(n)
        assert 0 <= k <= n and (n == 0 or k >= 1)
    assert split_at(10) == 6  # (the child classifies three in five first)
