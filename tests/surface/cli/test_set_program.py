"""``kbtool set-program VERSION PROGRAM`` (issue 23): a version already in the KB moves into
another program, its lineage says so, names follow from that program's most related version
through the gate (a locked human name stays), the pair is a same-program pair for ``kbtool
diff``, and every refusal is one line with the KB unchanged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.paths import DEMO_DIR
from tests.support.programs import program_build

OLD = DEMO_DIR / "zstd-1.5.5.wasm"
NEW = DEMO_DIR / "zstd-1.5.6.wasm"


def ok(*args: str) -> str:
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def js(*args: str):
    return json.loads(ok(*args, "--json"))


def dump(db: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def two_programs(tmp_path: Path) -> str:
    """Two releases of one program, the second put in a program of its own at ingest."""
    db = str(tmp_path / "kb.db")
    ok("--db", db, "ingest", str(OLD), "--label", "a")
    ok("--db", db, "ingest", str(NEW), "--label", "b", "--program", "other")
    return db


def unnamed_pairs(db: str, n: int) -> list[dict]:
    """``n`` well-matched pairs of versions 1 -> 2 whose functions have no name yet."""
    d = js("--db", db, "diff", "1", "2", "--cross-program")
    pairs = [
        c
        for c in d["changes"]
        if c.get("from_index") is not None
        and c.get("to_index") is not None
        and c["name"] is None
        and c["score"] >= 0.9
        and not c["review"]
    ]
    assert len(pairs) >= n
    return pairs[:n]


def by_index(db: str, version: int) -> dict[int, dict]:
    return {f["index"]: f for f in js("--db", db, "functions", str(version))}


def test_a_version_moves_into_a_program_and_names_follow(tmp_path):
    db = two_programs(tmp_path)
    p1, p2, p3 = unnamed_pairs(db, 3)
    ok("--db", db, "set-name", p1["from_stable_id"], "frame_header_parse")
    ok("--db", db, "set-name", p2["from_stable_id"], "block_decode")
    ok("--db", db, "set-name", p3["from_stable_id"], "their_name")
    ok("--db", db, "set-name", p3["to_stable_id"], "my_own_name")  # locked human, on the moved
    assert run_cli("--db", db, "diff", "1", "2").returncode == 2  # cross-program: refused

    out = " ".join(ok("--db", db, "set-program", "2", "zstd").split())
    assert "version 2 (b) moved from program other to zstd" in out
    assert "parent version 1 (most related" in out
    assert "names carried from version 1:" in out and "1 refused" in out
    assert "program other has no version left: removed" in out

    versions = js("--db", db, "versions")
    assert [(v["id"], v["program"], v["parent_version_id"]) for v in versions] == [
        (1, "zstd", None),
        (2, "zstd", 1),
    ]
    funcs = by_index(db, 2)
    for pair, name in ((p1, "frame_header_parse"), (p2, "block_decode")):
        f = funcs[pair["to_index"]]
        assert (f["name"], f["provenance"]) == (name, "diff-carry")
        ev = js("--db", db, "show", f["stable_id"])["evidence"]
        assert any(e.get("from_version_id") == 1 for e in ev), ev
    kept = funcs[p3["to_index"]]
    assert (kept["name"], kept["provenance"]) == ("my_own_name", "human")

    conn = sqlite3.connect(db)
    lineage = json.loads(conn.execute("SELECT lineage FROM versions WHERE id = 2").fetchone()[0])
    programs = [r[0] for r in conn.execute("SELECT name FROM programs ORDER BY id")]
    conn.close()
    assert lineage["method"] == "program"
    assert lineage["moved"]["from_program"] == "other" and lineage["moved"]["by"] == "human:cli"
    assert lineage["moved"]["at"]
    assert programs == ["zstd"]
    # now a same-program pair: no --cross-program needed, no warning
    d = js("--db", db, "diff", "1", "2")
    assert d["from_program"] == d["to_program"] == "zstd" and "warning" not in d


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("9", "zstd"), "error: unknown version id 9"),
        (("2", "nope"), "error: unknown program 'nope' (programs: other, zstd); add --create"),
        (("2", "other"), "error: version 2 (b) is already in program 'other': nothing to do"),
        (("2", "  "), "error: the program name is empty"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(tmp_path, args, message):
    db = two_programs(tmp_path)
    before = dump(db)
    res = run_cli("--db", db, "set-program", *args)
    assert res.returncode != 0
    assert res.stderr.strip().startswith(message), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert dump(db) == before


def test_create_starts_a_new_program(tmp_path):
    db = two_programs(tmp_path)
    out = " ".join(ok("--db", db, "set-program", "2", "zstd-os", "--create").split())
    assert "moved from program other to zstd-os (new program)" in out
    assert "no version of zstd-os to carry names from" in out
    versions = js("--db", db, "versions")
    assert [(v["program"], v["parent_version_id"]) for v in versions] == [
        ("zstd", None),
        ("zstd-os", None),
    ]


def test_a_version_sharing_identities_with_its_program_is_refused(tmp_path):
    db = str(tmp_path / "kb.db")
    ok("--db", db, "ingest", str(OLD), "--label", "a")
    ok("--db", db, "ingest", str(NEW), "--label", "b")  # same program: identities carried
    before = dump(db)
    res = run_cli("--db", db, "set-program", "2", "elsewhere", "--create")
    assert res.returncode != 0
    assert "shares function identities (hence names) with version(s) 1 of program 'zstd'" in (
        res.stderr
    )
    assert dump(db) == before


def test_the_optlevel_hint_names_the_command_that_joins_an_ingested_build(tmp_path):
    o2 = program_build("lz4-1.9.4.clang.O2.stripped.wasm")
    os_ = program_build("lz4-1.9.4.clang.Os.stripped.wasm")
    db = str(tmp_path / "kb.db")
    ok("--db", db, "ingest", str(o2))
    hint = " ".join(ok("--db", db, "ingest", str(os_)).split())
    assert "(already ingested: kbtool set-program 2 lz4)" in hint
    out = " ".join(ok("--db", db, "set-program", "2", "lz4").split())
    assert "moved from program lz4-2 to lz4" in out
    assert "parent version 1 (most related, overlap 2.9%; under the 5% ingest joins" in out
    assert [v["program"] for v in js("--db", db, "versions")] == ["lz4", "lz4"]
    assert js("--db", db, "diff", "1", "2")["to_program"] == "lz4"
