"""`import-names` keeps where each name came from (issue #23 point 7), and a human decision
always lands as human, locked (issue #24 point 5)."""

from __future__ import annotations

import shutil

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services import names_io
from testkit.kb import bare_kb

SIDS = [f"{i:016x}" for i in range(6)]


def teammate_export(tmp_path):
    """A teammate's KB with one name of each provenance, exported; and a fresh KB of the
    same module to import into."""
    theirs, mine = tmp_path / "theirs.db", tmp_path / "mine.db"
    bare_kb(theirs, SIDS).close()  # closing checkpoints: the .db file is the whole KB
    shutil.copyfile(theirs, mine)
    conn = open_rw(theirs)
    upsert_symbol(conn, SIDS[0], "teammate_human", provenance="human", confidence=1.0, actor="h")
    upsert_symbol(conn, SIDS[1], "oracle_name", provenance="oracle", confidence=0.6, actor="o")
    upsert_symbol(conn, SIDS[2], "agent_name", provenance="agent", confidence=0.3, actor="a")
    upsert_symbol(conn, SIDS[3], "export_name", provenance="export", confidence=0.95, actor="e")
    upsert_symbol(conn, SIDS[4], "shared_name", provenance="human", confidence=1.0, actor="h")
    text = names_io.export_text(conn, 1)
    conn.close()
    exp = tmp_path / "names.txt"
    exp.write_text(text, encoding="utf-8")
    return exp, mine


def rec(db, sid):
    conn = open_ro(db)
    try:
        return queries.get_symbol(conn, sid)
    finally:
        conn.close()


def test_rows_keep_their_provenance_and_a_teammates_human_name_stays_human(tmp_path, capsys):
    exp, mine = teammate_export(tmp_path)
    conn = open_rw(mine)
    upsert_symbol(
        conn, SIDS[4], "my_own_name", provenance="human", confidence=1.0, actor="me", lock=False
    )
    conn.close()
    assert main(["--db", str(mine), "import-names", str(exp)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "imported 4 name(s): agent 1, export 1, human 1, oracle 1" in out
    assert "1 refused" in out and "human name stays" in out
    got = {sid: rec(mine, sid) for sid in SIDS[:5]}
    assert [(r["name"], r["provenance"], r["confidence"], r["locked"]) for r in got.values()] == [
        ("teammate_human", "human", 1.0, False),  # a teammate's decision: human, not locked
        ("oracle_name", "oracle", 0.6, False),
        ("agent_name", "agent", 0.3, False),
        ("export_name", "export", 0.95, False),
        ("my_own_name", "human", 1.0, False),  # mine is never replaced by an import
    ]
    # the imported human name outranks agents, as any human name does
    conn = open_rw(mine)
    assert not upsert_symbol(
        conn, SIDS[0], "agent_try", provenance="agent", confidence=0.99, actor="agent:mcp"
    )["written"]
    conn.close()
    assert main(["--db", str(mine), "import-names", str(exp)]) == 0
    assert "imported 0 name(s)" in capsys.readouterr().out, "re-import is idempotent"


def test_as_human_lands_as_human_locked_even_with_the_same_name_as_the_agent(tmp_path, capsys):
    exp, mine = teammate_export(tmp_path)
    conn = open_rw(mine)
    upsert_symbol(conn, SIDS[2], "agent_name", provenance="agent", confidence=0.3, actor="agent:x")
    conn.close()
    assert main(["--db", str(mine), "import-names", str(exp), "--as-human"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "imported 5 name(s) (locked): human 5" in out
    same = rec(mine, SIDS[2])
    assert (same["name"], same["provenance"], same["confidence"], same["locked"]) == (
        "agent_name",
        "human",
        1.0,
        True,
    )
    conn = open_rw(mine)  # a later agent proposal cannot undo it
    assert not upsert_symbol(
        conn, SIDS[2], "other_guess", provenance="agent", confidence=0.9, actor="agent:mcp"
    )["written"]
    conn.close()
    assert rec(mine, SIDS[2])["name"] == "agent_name"


def test_as_human_no_lock_leaves_the_names_open(tmp_path, capsys):
    exp, mine = teammate_export(tmp_path)
    assert main(["--db", str(mine), "import-names", str(exp), "--as-human", "--no-lock"]) == 0
    r = rec(mine, SIDS[1])
    assert (r["provenance"], r["locked"]) == ("human", False)
