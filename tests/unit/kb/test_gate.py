"""The gate: every row of the authority matrix, both sides of every threshold, events, validation."""

from __future__ import annotations

import re

import pytest

from kbtool.kb import queries
from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.gate import revert, set_lock, upsert_symbol
from testkit.kb import bare_kb
from tests.support.paths import ROOT

SID = "aaaa000000000001"


@pytest.fixture
def conn(tmp_path):
    c = bare_kb(tmp_path / "kb.db", [SID, "aaaa000000000002"])
    yield c
    c.close()


def seed(conn, state: str | None, conf: float) -> None:
    """Put SID into ``state``: None, human-locked, human, oracle, export, agent, diff-carry."""
    if state is None:
        return
    if state == "human-locked":
        d = upsert_symbol(
            conn, SID, "seed_name", provenance="human", confidence=conf, actor="t", lock=True
        )
    elif state == "human":
        d = upsert_symbol(
            conn, SID, "seed_name", provenance="human", confidence=conf, actor="t", lock=False
        )
    else:
        d = upsert_symbol(conn, SID, "seed_name", provenance=state, confidence=conf, actor="t")
    assert d["written"]


def events(conn):
    return queries.annotation_events(conn, SID)


# (current state, writer, existing conf, incoming conf, written?, reason fragment)
MATRIX = [
    (None, "human", 0.0, 1.0, True, "unnamed"),
    (None, "oracle", 0.0, 0.3, True, "unnamed"),
    (None, "export", 0.0, 0.3, True, "unnamed"),
    (None, "agent", 0.0, 0.1, True, "unnamed"),
    (None, "diff-carry", 0.0, 0.1, True, "unnamed"),
    # a human always writes
    ("human-locked", "human", 1.0, 0.2, True, "human edit"),
    ("oracle", "human", 1.0, 0.2, True, "human edit"),
    ("agent", "human", 0.9, 0.1, True, "human edit"),
    # locked: every other writer refused, whatever the confidence
    ("human-locked", "oracle", 0.1, 1.0, False, "locked"),
    ("human-locked", "export", 0.1, 1.0, False, "locked"),
    ("human-locked", "agent", 0.1, 1.0, False, "locked"),
    ("human-locked", "diff-carry", 0.1, 1.0, False, "locked"),
    # unlocked human: agent / diff-carry refused; oracle / export only if strictly more confident
    ("human", "agent", 0.1, 1.0, False, "human name outranks"),
    ("human", "diff-carry", 0.1, 1.0, False, "human name outranks"),
    ("human", "oracle", 0.5, 0.6, True, ">"),
    ("human", "oracle", 0.5, 0.5, False, "not above"),
    ("human", "export", 0.5, 0.6, True, ">"),
    ("human", "export", 0.5, 0.4, False, "not above"),
    # higher authority writes regardless of confidence
    ("diff-carry", "agent", 0.9, 0.1, True, "outranks"),
    ("diff-carry", "export", 0.9, 0.1, True, "outranks"),
    ("diff-carry", "oracle", 0.9, 0.1, True, "outranks"),
    ("agent", "export", 0.9, 0.1, True, "outranks"),
    ("agent", "oracle", 0.9, 0.1, True, "outranks"),
    ("export", "oracle", 0.9, 0.1, True, "outranks"),
    # same authority: strictly greater only
    ("agent", "agent", 0.5, 0.51, True, ">"),
    ("agent", "agent", 0.5, 0.5, False, "not above"),
    ("oracle", "oracle", 0.5, 0.51, True, ">"),
    ("oracle", "oracle", 0.5, 0.5, False, "not above"),
    ("export", "export", 0.5, 0.6, True, ">"),
    ("export", "export", 0.5, 0.5, False, "not above"),
    ("diff-carry", "diff-carry", 0.5, 0.6, True, ">"),
    ("diff-carry", "diff-carry", 0.5, 0.4, False, "not above"),
    # lower authority: strictly greater confidence only (contract: agent over oracle)
    ("oracle", "agent", 0.5, 0.51, True, ">"),
    ("oracle", "agent", 0.5, 0.5, False, "not above"),
    ("export", "agent", 0.5, 0.7, True, ">"),
    ("export", "agent", 0.7, 0.7, False, "not above"),
    ("agent", "diff-carry", 0.5, 0.6, True, ">"),
    ("agent", "diff-carry", 0.5, 0.5, False, "not above"),
    ("oracle", "diff-carry", 0.5, 0.49, False, "not above"),
    ("oracle", "export", 0.5, 0.6, True, ">"),
    ("oracle", "export", 0.5, 0.5, False, "not above"),
]


@pytest.mark.parametrize("state,writer,e,c,written,reason", MATRIX)
def test_matrix(conn, state, writer, e, c, written, reason):
    seed(conn, state, e)
    before = queries.get_symbol(conn, SID)
    n_events = len(events(conn))
    d = upsert_symbol(conn, SID, "new_name", provenance=writer, confidence=c, actor="tester")
    assert d["written"] is written
    assert reason in d["reason"]
    after = queries.get_symbol(conn, SID)
    evs = events(conn)
    assert len(evs) == n_events + 1, "every decision is exactly one event"
    ev = evs[-1]
    assert ev["written"] is written
    assert ev["actor"] == "tester"
    assert ev["new_name"] == "new_name"
    if written:
        assert after["name"] == "new_name" and after["provenance"] == writer
        assert after["confidence"] == pytest.approx(c)
        assert after["evidence"][0]["actor"] == "tester"
        assert ev["kind"] != "rejection"
        assert ev["old_name"] == (before["name"] if before else None)
    else:
        assert after == before
        assert ev["kind"] == "rejection"


def test_human_lock_flags(conn):
    upsert_symbol(conn, SID, "a", provenance="human", confidence=1.0, actor="h")
    assert queries.get_symbol(conn, SID)["locked"] is True
    upsert_symbol(conn, SID, "b", provenance="human", confidence=1.0, actor="h", lock=False)
    assert queries.get_symbol(conn, SID)["locked"] is False


@pytest.mark.parametrize("writer", ["oracle", "export", "agent", "diff-carry", "human"])
def test_idempotent_rerun_is_noop(conn, writer):
    d1 = upsert_symbol(conn, SID, "same", provenance=writer, confidence=0.7, actor="x")
    n = len(events(conn))
    d2 = upsert_symbol(conn, SID, "same", provenance=writer, confidence=0.7, actor="x")
    assert d1["written"] and not d2["written"] and d2["reason"] == "no change"
    assert len(events(conn)) == n


@pytest.mark.parametrize(
    "name,prov",
    [
        ("", "agent"),
        ("has space", "agent"),
        ("1abc", "human"),
        ("a-b", "agent"),
        ("x" * 257, "human"),
        ("ok\nno", "oracle"),
        (" padded", "export"),
        ("x" * 1025, "oracle"),
        (None, "agent"),
    ],
)
def test_invalid_names_refused_with_reason(conn, name, prov):
    d = upsert_symbol(conn, SID, name, provenance=prov, confidence=0.5, actor="x")
    assert not d["written"] and d["reason"].startswith("invalid name")
    assert queries.get_symbol(conn, SID) is None
    assert events(conn)[-1]["kind"] == "rejection"


@pytest.mark.parametrize(
    "name,prov",
    [
        ("ZSTD_compress", "agent"),
        ("ns::Type::method", "human"),
        ("x" * 256, "human"),
        ("<impl core::fmt::Debug for &T>::fmt", "oracle"),
        ("$func", "agent"),
    ],
)
def test_valid_names(conn, name, prov):
    assert upsert_symbol(conn, SID, name, provenance=prov, confidence=0.5, actor="x")["written"]


@pytest.mark.parametrize("conf", [-0.01, 1.01, float("nan"), True, "0.5"])
def test_confidence_outside_range_refused(conn, conf):
    d = upsert_symbol(conn, SID, "fine", provenance="agent", confidence=conf, actor="x")
    assert not d["written"] and "confidence" in d["reason"]
    assert queries.get_symbol(conn, SID) is None


@pytest.mark.parametrize("conf", [0.0, 1.0])
def test_confidence_bounds_accepted(conn, conf):
    assert upsert_symbol(conn, SID, "fine", provenance="agent", confidence=conf, actor="x")[
        "written"
    ]


def test_unknown_stable_id_raises(conn):
    with pytest.raises(UnknownStableIdError):
        upsert_symbol(conn, "nope", "x", provenance="agent", confidence=0.5, actor="x")


def test_unknown_provenance(conn):
    with pytest.raises(ValueError):
        upsert_symbol(conn, SID, "x", provenance="god", confidence=0.5, actor="x")


def test_unlock_then_oracle_can_win(conn):
    upsert_symbol(conn, SID, "mine", provenance="human", confidence=0.8, actor="h")
    assert not upsert_symbol(conn, SID, "ref", provenance="oracle", confidence=0.9, actor="o")[
        "written"
    ]
    assert set_lock(conn, SID, False)["written"]
    assert not set_lock(conn, SID, False)["written"]
    assert upsert_symbol(conn, SID, "ref", provenance="oracle", confidence=0.9, actor="o")[
        "written"
    ]


def test_revert_restores_and_records(conn):
    upsert_symbol(conn, SID, "first", provenance="agent", confidence=0.3, actor="a")
    upsert_symbol(conn, SID, "second", provenance="oracle", confidence=0.9, actor="o")
    upsert_symbol(conn, SID, "third", provenance="human", confidence=1.0, actor="h")
    d = revert(conn, SID, steps=2)
    assert d["written"]
    sym = queries.get_symbol(conn, SID)
    # the record as it was (issue #23.7), not a locked human name
    assert (sym["name"], sym["provenance"], sym["confidence"], sym["locked"]) == (
        "first",
        "agent",
        0.3,
        False,
    )
    assert events(conn)[-1]["kind"] == "revert"
    trail = queries.renames(conn, SID)
    assert [t["to"] for t in trail] == ["first", "third", "second", "first"]


def test_revert_without_earlier_value(conn):
    assert "no earlier value" in revert(conn, SID)["reason"]
    upsert_symbol(conn, SID, "only", provenance="agent", confidence=0.3, actor="a")
    assert "no earlier value" in revert(conn, SID, steps=5)["reason"]
    d = revert(conn, SID)  # back past the first name: cleared, as a recorded human edit
    assert d["written"] and "cleared" in d["reason"]


def test_summary_and_type_kept_when_not_given(conn):
    upsert_symbol(
        conn,
        SID,
        "a",
        provenance="agent",
        confidence=0.3,
        actor="a",
        summary="does a",
        type_signature="int a(void)",
    )
    upsert_symbol(conn, SID, "b", provenance="oracle", confidence=0.9, actor="o")
    sym = queries.get_symbol(conn, SID)
    assert sym["summary"] == "does a" and sym["type_signature"] == "int a(void)"


def test_nothing_else_writes_symbols():
    """Only kbtool/kb/gate.py may INSERT/UPDATE/DELETE/REPLACE the symbols table."""
    pattern = re.compile(
        r"(INSERT\s+(OR\s+\w+\s+)?INTO\s+symbols\b|UPDATE\s+symbols\b|DELETE\s+FROM\s+symbols\b|"
        r"REPLACE\s+INTO\s+symbols\b|\[\s*['\"]symbols['\"]\s*\]|table\(\s*['\"]symbols['\"])",
        re.I,
    )
    root = ROOT / "kbtool"
    offenders = []
    for py in root.rglob("*.py"):
        if py.relative_to(root).as_posix() in ("kb/gate.py", "kb/schema.py"):
            continue
        if pattern.search(py.read_text(encoding="utf-8")):
            offenders.append(str(py))
    assert offenders == []
    assert pattern.search((root / "kb/gate.py").read_text()), (
        "the gate itself must match the pattern"
    )
