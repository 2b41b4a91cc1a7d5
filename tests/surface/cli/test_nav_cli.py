"""CLI navigation: `kbtool show V:INDEX` / `show INDEX`, `kbtool search --string/--const/#INDEX`."""

from __future__ import annotations

import json

import pytest

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import nav


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def kb(demo_kb_master):
    conn = open_ro(str(demo_kb_master))
    yield demo_kb_master, conn
    conn.close()


def test_show_by_version_and_index(kb, capsys):
    db, conn = kb
    for arg, version in (("1:51", 1), ("2:51", 2), ("51", 2), ("#51", 2)):
        code, out, _ = run(capsys, "show", arg, "--json", "--db", str(db))
        assert code == 0, arg
        assert json.loads(out)["stable_id"] == queries.get_function(conn, version, 51)["stable_id"]
    code, out, _ = run(capsys, "show", "1:51", "--db", str(db))
    assert code == 0 and "appears in" in out and "v1#51" in out
    code, _out, err = run(capsys, "show", "99999", "--db", str(db))
    assert code == 1 and "has no function 99999" in err
    code, _out, err = run(capsys, "show", "9:1", "--db", str(db))
    assert code == 1 and "unknown version" in err


def test_show_prefers_a_real_stable_id(kb, capsys):
    db, conn = kb
    sid = queries.get_function(conn, 2, 139)["stable_id"]
    code, out, _ = run(capsys, "show", sid, "--json", "--db", str(db))
    assert code == 0 and json.loads(out)["stable_id"] == sid


def test_search_by_string_and_const(kb, capsys):
    db, conn = kb
    facts = queries.get_function_facts(conn, 2, 51)
    needle = facts["referenced_strings"][1]
    code, out, _ = run(capsys, "search", "--string", needle, "--json", "--db", str(db))
    rows = json.loads(out)
    assert code == 0 and 51 in [r["index"] for r in rows]
    assert all(any(needle in s for s in r["strings"]) for r in rows)
    value = max(c for c in facts["constants"] if isinstance(c, int))
    code, out, _ = run(capsys, "search", "--const", hex(value), "--json", "--db", str(db))
    assert code == 0 and 51 in [r["index"] for r in json.loads(out)]
    code, out, _ = run(capsys, "search", "--const", hex(value), "--version", "1", "--db", str(db))
    assert code == 0 and "v1#" in out
    code, _out, err = run(capsys, "search", "--const", "nope", "--db", str(db))
    assert code == 1 and "not an integer" in err
    code, _out, err = run(capsys, "search", "--db", str(db))
    assert code == 1 and "exactly one" in err


def test_search_by_index(kb, capsys):
    db, conn = kb
    code, out, _ = run(capsys, "search", "#51", "--json", "--db", str(db))
    assert (
        code == 0
        and json.loads(out)[0]["stable_id"] == queries.get_function(conn, 2, 51)["stable_id"]
    )


def test_const_spellings():
    assert nav.parse_const("0x5f3759df") == 0x5F3759DF
    assert nav.parse_const("-1") == -1
    assert -1 in nav.const_values(0xFFFFFFFF) and 0xFFFFFFFF in nav.const_values(-1)
    assert nav.const_values(7) == (7,)
    assert all(-(1 << 63) <= v < (1 << 63) for v in nav.const_values(1 << 70))
    with pytest.raises(ValueError):
        nav.parse_const("12abc")


def test_classify():
    assert nav.classify("#12") == nav.NavQuery("index", "#12", index=12)
    assert nav.classify("2:12").version_id == 2
    assert nav.classify('"database is locked"') == nav.NavQuery("string", "database is locked")
    assert nav.classify("=0x10").values == (16,)
    assert nav.classify("ZSTD_x").kind == "name"
