"""Undo that undoes (issue #23 point 7): revert restores the earlier record exactly; a rename
to the unchanged name writes nothing (CLI and TUI); a stray key on the heatmap cannot write a
locked human name."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.gate import revert, set_lock, upsert_symbol
from testkit.kb import bare_kb
from tests.support.tui import make_app, settle

SID = "00000000000000aa"


@pytest.fixture
def kb(tmp_path):
    db = tmp_path / "kb.db"
    bare_kb(db, [SID, "00000000000000bb"]).close()
    return db


def record(db, sid=SID):
    conn = open_ro(db)
    try:
        sym = queries.get_symbol(conn, sid)
        events = queries.annotation_events(conn, sid)
    finally:
        conn.close()
    return sym, events


def test_revert_after_a_rename_restores_the_oracle_name_exactly(kb, capsys):
    from kbtool.kb.db import open_rw

    conn = open_rw(kb)
    upsert_symbol(
        conn,
        SID,
        "ZSTD_decompress",
        provenance="oracle",
        confidence=0.6,
        actor="oracle:zstd",
        summary="from the oracle",
        evidence={"match": "body"},
    )
    before, _ = record(kb)
    conn.close()
    assert main(["--db", str(kb), "set-name", SID, "my_name"]) == 0
    assert main(["--db", str(kb), "revert", SID]) == 0
    out = capsys.readouterr().out
    assert "oracle 0.60" in out
    after, events = record(kb)
    keys = ("name", "summary", "type_signature", "provenance", "confidence", "locked", "evidence")
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}
    last = events[-1]
    assert (last["kind"], last["actor"], last["written"]) == ("revert", "human:cli", True)
    # reverting the revert redoes the rename, as it was: human, locked
    assert main(["--db", str(kb), "revert", SID]) == 0
    redo, _ = record(kb)
    assert (redo["name"], redo["provenance"], redo["locked"]) == ("my_name", "human", True)


def test_revert_of_the_first_name_clears_it_and_any_writer_may_name_it_again(kb):
    from kbtool.kb.db import open_rw

    conn = open_rw(kb)
    upsert_symbol(conn, SID, "agent_guess", provenance="agent", confidence=0.3, actor="agent:t")
    d = revert(conn, SID, actor="human:test")
    assert d["written"] and "cleared" in d["reason"]
    assert queries.get_symbol(conn, SID) is None
    assert revert(conn, SID, steps=1)["written"]  # redo: the agent name is back
    assert queries.get_symbol(conn, SID)["provenance"] == "agent"
    assert revert(conn, SID)["written"]  # undo the redo: unnamed again
    assert queries.get_symbol(conn, SID) is None
    assert upsert_symbol(
        conn, SID, "carried", provenance="diff-carry", confidence=0.5, actor="carry"
    )["written"]
    conn.close()


def test_revert_keeps_a_lock_and_an_unlock_as_they_were(kb):
    from kbtool.kb.db import open_rw

    conn = open_rw(kb)
    upsert_symbol(conn, SID, "mine", provenance="human", confidence=0.8, actor="h", lock=False)
    upsert_symbol(conn, SID, "better", provenance="oracle", confidence=0.95, actor="o")
    revert(conn, SID)
    sym = queries.get_symbol(conn, SID)
    assert (sym["name"], sym["provenance"], sym["locked"]) == ("mine", "human", False)
    set_lock(conn, SID, True)
    upsert_symbol(conn, SID, "mine2", provenance="human", confidence=1.0, actor="h")
    revert(conn, SID)
    assert queries.get_symbol(conn, SID)["locked"] is True
    conn.close()


def test_set_name_with_the_unchanged_name_writes_nothing(kb, capsys):
    from kbtool.kb.db import open_rw

    conn = open_rw(kb)
    upsert_symbol(conn, SID, "ZSTD_decompress", provenance="oracle", confidence=0.6, actor="o")
    conn.close()
    _, before = record(kb)
    assert main(["--db", str(kb), "set-name", SID, "ZSTD_decompress"]) == 0
    assert "nothing written" in " ".join(capsys.readouterr().out.split())
    sym, events = record(kb)
    assert (sym["provenance"], sym["confidence"], sym["locked"]) == ("oracle", 0.6, False)
    assert len(events) == len(before)  # no event either
    assert main(["--db", str(kb), "set-name", SID, "ZSTD_decompress", "--confirm"]) == 0
    sym, _ = record(kb)
    assert (sym["provenance"], sym["locked"]) == ("human", True)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_tui_rename_confirmed_unchanged_and_stray_keys_write_nothing(tui_kb, anyio_backend):
    app = make_app(tui_kb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # find a named, non-human function and put the cursor on it
        conn = open_ro(tui_kb)
        rows = app.screen._rows
        pos = next(i for i, r in enumerate(rows) if r[2] and r[3] not in (None, "human"))
        before = queries.change_token(conn)
        sid = rows[pos][1]
        old = queries.get_symbol(conn, sid)
        app.screen.query_one("#grid").move_to(pos)
        await settle(pilot)
        await pilot.press("n", "enter")  # a stray n, then enter
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.query_one(Input).value == old["name"]
        await pilot.press("enter")
        await settle(pilot)
        for key in "hjklu[]":  # every other single key of the heatmap
            await pilot.press(key)
            await settle(pilot)
        assert queries.change_token(conn) == before
        now = queries.get_symbol(conn, sid)
        conn.close()
    assert (now["provenance"], now["confidence"], now["locked"]) == (
        old["provenance"],
        old["confidence"],
        old["locked"],
    )
