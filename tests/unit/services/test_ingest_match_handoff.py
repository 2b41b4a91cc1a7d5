"""The match child's answer crosses the pipe as field tuples and the version's rows that
need no stable id are written while it runs (issue #30, session 26): the same matches, and
the same KB as an ingest that matches in process."""

from __future__ import annotations

import pickle
import sqlite3

from kbtool.identity.records import Match
from kbtool.kb.db import open_rw
from kbtool.services import data as data_model
from kbtool.services import ingest_match
from kbtool.services.ingest import ingest_file
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"


def test_matches_packed_come_back_equal_in_order() -> None:
    ms = [
        Match(0, 3, 0.9, "callgraph", False),
        Match(2, 1, 1.0, "body", True),
        Match(5, 5, 0.37512, "similarity", True),
    ]
    packed = pickle.loads(pickle.dumps(ingest_match._pack(ms), pickle.HIGHEST_PROTOCOL))
    assert packed[0] is True and all(type(t) is tuple for t in packed[1])
    back = ingest_match._unpack(packed)
    assert back == ms and all(type(m) is Match for m in back)
    assert ingest_match._unpack(ingest_match._pack([])) == []


def test_full_matches_unpacked_only_when_asked() -> None:
    ms = [Match(0, 3, 0.9, "callgraph", False), Match(2, 1, 1.0, "body", True)]
    lazy = ingest_match.Packed(ingest_match._pack(ms))
    assert ingest_match.matches_of(lazy) == ms
    assert ingest_match.matches_of(ms) is ms and ingest_match.matches_of(None) is None


def test_anything_but_a_list_of_matches_goes_as_it_is() -> None:
    for value in (None, [Match(0, 0, 1.0, "body", False), (0, 0)], ("x",)):
        packed = ingest_match._pack(value)
        assert packed == (False, value)
        assert ingest_match._unpack(packed) == value


def _table(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return sorted((tuple(r) for r in conn.execute(f"SELECT * FROM {table}")), key=repr)


def test_refs_written_first_give_the_same_model(tmp_path, monkeypatch) -> None:
    """The data references written before the rest of the model (as a later ingest does
    while its matcher runs) store the same rows as the model written at once."""
    out = {}
    real_build = data_model.build
    for name in ("at_once", "refs_first"):
        conn = open_rw(tmp_path / f"{name}.db")
        if name == "refs_first":

            def build(conn, vid, analysis, data, **kw):
                walked = data_model.prepare(analysis, data, workers=1)
                data_model.write_refs(conn, vid, walked)
                assert walked.refs_written
                return real_build(conn, vid, analysis, data, **{**kw, "walked": walked})

            monkeypatch.setattr(data_model, "build", build)
        ingest_file(conn, Z55, label="a")
        ingest_file(conn, Z56, label="b")
        monkeypatch.undo()
        out[name] = {
            t: _table(conn, t)
            for t in ("data_ref_chunks", "data_ref_targets", "data_items", "data_globals")
        }
        conn.close()
    assert out["at_once"]["data_ref_chunks"]  # (the demo has references)
    assert out["refs_first"] == out["at_once"]
