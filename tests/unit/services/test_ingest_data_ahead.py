"""A later ingest with a match child (issue #30, session 30): the data model is built and
written during the matcher with the function names expected after it, kept when the names
read after the answer are those, else built again (the same rows either way); the early
child makes the report's new rows from its records and what they lack (equal rows)."""

from __future__ import annotations

from kbtool.identity.records import records_from_analysis, table_slots
from kbtool.services import ingest_rows
from kbtool.wasm import analyze_module
from tests.support.later_ingest import ingested_here, spied_later
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"

# Z55, then Z56 in a fresh single-threaded process (a test runner's threads rule out a
# fork), the match child forced; WRONG: the expected names replaced by wrong ones. Prints
# how many data-model builds ran, how many of them during the matcher, and whether the
# child answered.
_LATER = """
import json, sys
from pathlib import Path
from kbtool.kb.db import open_rw
from kbtool.services import data, ingest, ingest_data, ingest_match
db, a, b, wrong = sys.argv[1:5]
conn = open_rw(Path(db))
ingest.ingest_file(conn, Path(a), label="a")
seen = {"builds": 0, "ahead": 0, "answer": [], "proposals": 0}
real_build, real_ahead, real_result = data.build, ingest.build_ahead, ingest_match.MatchJob.result
real_proposals = ingest._binary_proposals
def proposals(*args, **kw):
    seen["proposals"] += 1
    return real_proposals(*args, **kw)
ingest._binary_proposals = proposals
def build(*args, **kw):
    seen["builds"] += 1
    return real_build(*args, **kw)
def ahead(*args, **kw):
    seen["ahead"] += 1
    return real_ahead(*args, **kw)
def result(self):
    out = real_result(self)
    seen["answer"].append(self.in_child)
    return out
data.build, ingest.build_ahead, ingest_match.MatchJob.result = build, ahead, result
if wrong:
    ingest_data.expected_names = lambda *args: {0: "not its name"}
ingest_match._cores = lambda: 2
ingest.ingest_file(conn, Path(b), label="b")
conn.close()
print(json.dumps(seen))
"""


def _fresh(tmp_path, name: str, wrong: str = "", **env) -> tuple[dict, dict]:
    env = {"KBTOOL_PARALLEL_MATCH_BYTES": "0", **env}
    return spied_later(_LATER, tmp_path / f"{name}.db", str(Z55), str(Z56), wrong, env=env)


def _here(tmp_path) -> dict:
    return ingested_here(tmp_path / "here.db", (Z55, "a"), (Z56, "b"))


def test_the_data_model_built_during_the_matcher_is_the_same(tmp_path) -> None:
    here = _here(tmp_path)
    assert here["data_items"] and here["diffs"]
    for early in ("1", "0"):  # the child forked before the decode, or after the lineage
        got, seen = _fresh(tmp_path, f"ahead{early}", KBTOOL_EARLY_MATCH=early)
        # built once, during the matcher: the names after the answer were the ones expected;
        # the binary's names made once (then, and written after the answer)
        assert seen == {"builds": 1, "ahead": 1, "answer": [True], "proposals": 1}
        assert got == here


def test_other_names_after_the_answer_build_it_again(tmp_path) -> None:
    here = _here(tmp_path)
    got, seen = _fresh(tmp_path, "wrong", wrong="1", KBTOOL_EARLY_MATCH="1")
    assert seen == {"builds": 2, "ahead": 1, "answer": [True], "proposals": 1}
    assert got == here  # (the rows written during the matcher replaced, rowids included)


def test_the_early_childs_rows_from_its_records_are_the_rows() -> None:
    for path in (Z55, Z56):
        a = analyze_module(path.read_bytes())
        want = ingest_rows.matching_rows(a.functions, table_slots(a))
        got = ingest_rows.rows_from_records(
            records_from_analysis(a), ingest_rows.row_extras(a.functions)
        )
        assert got == want
        assert [list(r) for r in got] == [list(r) for r in want]  # (the keys' order too)


def test_the_expected_names() -> None:
    class F:
        def __init__(self, index, imported=False, body_hash=None, field=None, raw=None):
            self.index, self.imported, self.body_hash = index, imported, body_hash
            self.import_module, self.import_field, self.raw_name = "env", field, raw

    funcs = [
        F(0, True, field="a"),  # an import the binary does not name: the old one's name
        F(1, True, field="b"),  # a new import: its field
        F(2, body_hash="h2"),  # the binary names it
        F(3, body_hash="h3"),  # the same body as old 7: its name
        F(4, body_hash="dup"),  # a body two new functions have: no old name
        F(5, body_hash="dup"),
        F(6, body_hash="h6", raw=""),  # nothing: no name
        F(7, body_hash="h9"),  # the binary names it, the old one it continues too: the old
    ]
    old_rows = [
        {"index": 0, "imported": True, "import_name": "env.a", "body_hash": None},
        {"index": 7, "imported": False, "import_name": None, "body_hash": "h3"},
        {"index": 8, "imported": False, "import_name": None, "body_hash": "dup"},
        {"index": 9, "imported": False, "import_name": None, "body_hash": "h9"},
    ]
    old_names = {0: "fd_write", 7: "helper", 8: "twice", 9: "kept"}
    proposals = [(2, "named", 1.0, {}, "export"), (7, "other", 1.0, {}, "name-section")]
    got = ingest_rows.expected_names(funcs, proposals, old_rows, old_names)
    assert got == {0: "fd_write", 1: "b", 2: "named", 3: "helper", 7: "kept"}
