"""Offline names below calibrated confidence 0.5 are not written: they are kept as
suggestions a person lists, accepts (through the gate) or dismisses (issue #23.5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.agent_pass import run_agent_pass

CLI = [sys.executable, "-m", "kbtool.cli"]
OFFLINE = {"PATH": os.environ.get("PATH", "")}


def cli(kb, *args):
    return subprocess.run(
        [*CLI, "--db", str(kb), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVIDER_A_API_KEY": "", "PROVIDER_B_API_KEY": ""},
    )


@pytest.fixture
def conn(demo_kb):
    c = open_rw(demo_kb, create=False)
    yield c
    c.close()


def agent_names(conn):
    return conn.execute(
        "SELECT stable_id, name, confidence FROM symbols WHERE provenance = 'agent'"
    ).fetchall()


def test_a_pass_writes_no_name_below_the_floor_and_keeps_them_as_suggestions(conn):
    s = run_agent_pass(conn, 2, "offline", env=OFFLINE)
    assert s["written"] > 0 and s["suggested"] > 0
    assert all(c >= 0.5 for _sid, _n, c in agent_names(conn))
    page = queries.suggestions(conn, 2)
    assert page["total"] == s["suggested"]
    kept = {d["stable_id"]: d for d in s["details"] if d["kind"] == "suggest"}
    for item in page["items"]:
        d = kept[item["stable_id"]]
        assert (item["name"], item["confidence"], item["backend"]) == (
            d["name"],
            d["confidence"],
            "offline",
        )
        assert item["confidence"] < 0.5 and item["evidence"]["reasons"] and item["created_at"]
        assert queries.get_symbol(conn, item["stable_id"]) is None or item["current"]
    # a lower floor writes them as before
    low = run_agent_pass(conn, 2, "offline", env=OFFLINE, min_confidence=0.0)
    # (each name written once: two functions suggested the same name get it once, as a pass
    # never writes one name twice; or refused for its own reason)
    refused = low["rejected_by_verifier"] + low["rejected_by_economy"]
    names = {d["name"] for d in kept.values()}
    # (the specialist's names, __main_void, are counted apart)
    done = low["written"] + low["specialist_written"] + refused
    assert low["suggested"] == 0 and done >= len(names), {
        k: v for k, v in low.items() if k != "details"
    }
    with pytest.raises(ValueError, match="min_confidence"):
        run_agent_pass(conn, 2, "offline", env=OFFLINE, min_confidence=1.5)


def test_dry_run_counts_suggestions_and_stores_none(conn):
    s = run_agent_pass(conn, 2, "offline", env=OFFLINE, dry_run=True)
    assert s["suggested"] > 0 and queries.suggestions(conn, 2)["total"] == 0


def test_cli_lists_accepts_and_dismisses(demo_kb):
    r = cli(demo_kb, "agent", "2", "-b", "offline")
    assert r.returncode == 0 and "kept as suggestions" in r.stdout
    page = json.loads(cli(demo_kb, "suggestions", "2", "--json").stdout)
    assert page["total"] >= 3
    first, second = page["items"][0], page["items"][1]
    shown = cli(demo_kb, "suggestions", "2")
    assert shown.returncode == 0 and first["stable_id"] in shown.stdout

    ok = cli(demo_kb, "suggestions", "accept", first["stable_id"])
    assert ok.returncode == 0, ok.stderr
    conn = open_rw(demo_kb, create=False)
    sym = queries.get_symbol(conn, first["stable_id"])
    assert (sym["name"], sym["provenance"], sym["locked"]) == (first["name"], "human", True)
    assert sym["evidence"][0]["accepted_suggestion"]["backend"] == "offline"

    assert cli(demo_kb, "suggestions", "dismiss", second["stable_id"]).returncode == 0
    assert queries.get_symbol(conn, second["stable_id"]) is None or (
        queries.get_symbol(conn, second["stable_id"])["name"] != second["name"]
    )
    again = cli(demo_kb, "suggestions", "accept", second["stable_id"])
    assert again.returncode == 1 and "no open suggestion" in again.stderr
    assert "Traceback" not in again.stderr
    # a re-run does not bring a dismissed name back
    cli(demo_kb, "agent", "2", "-b", "offline", "--all")
    left = {
        i["stable_id"]
        for i in json.loads(cli(demo_kb, "suggestions", "2", "--json").stdout)["items"]
    }
    assert second["stable_id"] not in left and first["stable_id"] not in left

    bulk = json.loads(
        cli(demo_kb, "suggestions", "accept", "2", "--all-above", "0.1", "--json").stdout
    )
    assert bulk and all(d["written"] for d in bulk)
    for d in bulk:
        sym = queries.get_symbol(conn, d["stable_id"])
        assert sym["provenance"] == "agent" and sym["confidence"] < 0.5
    assert json.loads(cli(demo_kb, "suggestions", "2", "--json").stdout)["total"] == 0
    conn.close()
    for bad in (
        ["suggestions"],
        ["suggestions", "x"],
        ["suggestions", "99"],
        ["suggestions", "accept", "--all-above", "0.2"],
    ):
        r = cli(demo_kb, *bad)
        assert r.returncode != 0 and "Traceback" not in r.stderr, bad


def test_mcp_list_suggestions_is_bounded_and_read_only(demo_kb):
    from kbtool.mcp import registry

    conn = open_rw(demo_kb, create=False)
    s = run_agent_pass(conn, 2, "offline", env=OFFLINE)
    conn.close()
    tools = {t.name: (t.fn, t.read_only) for t in registry.load()}
    fn, read_only = tools["list_suggestions"]
    assert read_only
    with registry.bound(str(demo_kb)):
        page = fn(2, offset=0, limit=2)
        assert page["total"] == s["suggested"] and len(page["items"]) == 2
        assert page["next_offset"] == 2
        rest = fn(2, offset=2, limit=500)
        assert rest["next_offset"] is None and len(rest["items"]) == s["suggested"] - 2
        assert fn(2, limit=10_000)["limit"] == 500  # the cap holds below the schema too
