"""`kbtool deep`: raw C, cleaned C that still compiles, understanding, events, idempotence."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError, UnknownVersionError
from kbtool.lift import prelude_path
from kbtool.services.deep import run_deep


@pytest.fixture()
def demo_db(tmp_path):
    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _s: None)
    return db


def test_deep_records_compile_and_rename(demo_db, tmp_path):
    conn = open_rw(demo_db)
    res = run_deep(conn, 2, max_functions=25)
    assert res["considered"] == 25 and res["done"] + res["truncated"] == 25 and not res["failed"]
    assert res["renamed_variables"] > 0
    records = []
    for f in res["functions"]:
        a = queries.get_analysis(conn, f["stable_id"])
        assert {"raw_c", "clean_c", "understanding", "rename_map", "status", "confidence"} <= set(a)
        assert a["status"] in ("done", "truncated") and 0.0 <= a["confidence"] <= 1.0
        assert a["understanding"] and a["raw_c"].count("{") == a["clean_c"].count("{")
        for old, new in a["rename_map"].items():
            assert old not in a["clean_c"].split() and new in a["clean_c"]
        records.append(a)
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    src = tmp_path / "clean.c"
    src.write_text("\n".join(r["clean_c"] for r in records))
    out = subprocess.run(
        ["gcc", "-fsyntax-only", "-fwrapv", "-include", str(prelude_path()), str(src)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[:2000]


def test_deep_is_idempotent_and_emits_events(demo_db):
    conn = open_rw(demo_db)
    before = queries.events_since(conn, None)["last_id"]
    first = run_deep(conn, 2, functions=[60, 61])
    assert first["done"] + first["truncated"] == 2
    feed = queries.events_since(conn, before)
    ids = [e["id"] for e in feed["events"]]
    assert ids == sorted(ids) and feed["last_id"] == ids[-1]
    kinds = [e["kind"] for e in feed["events"]]
    assert kinds[0] == "deep-pass-started" and kinds[-1] == "deep-pass-done"
    assert {"deep-started", "lifted", "cleaned", "deep-done"} <= set(kinds)
    again = run_deep(conn, 2, functions=[60, 61])
    assert again["skipped_existing"] == 2 and again["done"] == 0
    forced = run_deep(conn, 2, functions=[60], force=True)
    assert forced["done"] + forced["truncated"] == 1
    assert queries.events_since(conn, feed["last_id"])["events"]  # the feed moved on
    empty = queries.events_since(conn, 10**9)
    assert empty == {"last_id": 10**9, "events": []}


def test_deep_errors(demo_db):
    conn = open_rw(demo_db)
    with pytest.raises(UnknownVersionError):
        run_deep(conn, 42)
    with pytest.raises(KBError, match="no defined function 99999"):
        run_deep(conn, 2, functions=[99999])
    r = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "deep", "2", "-f", "0", "--db", str(demo_db)],
        capture_output=True,
        text=True,
    )
    # function 0 of the demo is an import: no code, one clear line
    conn2 = open_ro(demo_db)
    imported = queries.get_function(conn2, 2, 0)["imported"]
    if imported:
        assert r.returncode == 1 and "no defined function 0" in r.stderr
        assert "Traceback" not in r.stderr


def test_deep_proposes_names_through_the_gate(demo_db):
    conn = open_rw(demo_db)
    picked = [f["index"] for f in queries.list_functions(conn, 2) if f["name"] is None][:40]
    res = run_deep(conn, 2, functions=picked)
    naming = res["naming"]
    assert naming["backend"] == "offline" and naming["considered"] == len(picked)
    writes = [d for d in naming["details"] if d["kind"] == "write"]
    assert naming["written"] == len(writes) > 0
    for d in writes:  # only the functions deep read are named, as agent names through the gate
        assert d["index"] in picked
        sym = queries.get_symbol(conn, d["stable_id"])
        assert (sym["name"], sym["provenance"]) == (d["name"], "agent")
    quiet = run_deep(conn, 2, functions=picked[:3], force=True, name=False)
    assert "naming" not in quiet
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbtool.cli",
            "deep",
            "2",
            "-f",
            str(picked[0]),
            "--backend",
            "provider_b",
            "--force",
            "--db",
            str(demo_db),
        ],
        capture_output=True,
        text=True,
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith("PROVIDER_B")},
    )
    assert r.returncode == 1 and "PROVIDER_B_API_KEY" in r.stderr and "Traceback" not in r.stderr
