"""``upsert_symbols``: the same decisions, records and events as one ``upsert_symbol`` call per
proposal, in order, whatever the mix (new ids, current records, locks, refusals, repeats)."""

from __future__ import annotations

import pytest

from kbtool.kb.errors import UnknownStableIdError
from kbtool.kb.gate import PROVENANCES, set_lock, upsert_symbol, upsert_symbols
from testkit.kb import bare_kb, frozen_time

SIDS = [f"bbbb{i:012x}" for i in range(12)]


def _seed(conn) -> None:
    """Records the proposals meet: an export name, a locked human name, an agent guess."""
    upsert_symbol(conn, SIDS[1], "old_export", provenance="export", confidence=0.5, actor="t")
    upsert_symbol(conn, SIDS[2], "mine", provenance="human", confidence=1.0, actor="t")
    upsert_symbol(conn, SIDS[3], "guess", provenance="agent", confidence=0.4, actor="t")
    upsert_symbol(conn, SIDS[4], "same", provenance="export", confidence=0.95, actor="t")
    set_lock(conn, SIDS[2], True)


PROPOSALS = [
    (SIDS[0], "fresh_a", 1.0, {"source": "name-section"}),
    (SIDS[1], "new_export", 0.95, {"source": "export", "export": "new_export"}),  # higher
    (SIDS[2], "not_mine", 1.0, {"source": "name-section"}),  # locked: refused
    (SIDS[3], "better", 0.95, {"source": "export"}),  # export outranks agent
    (SIDS[4], "same", 0.95, {"source": "export"}),  # no change
    (SIDS[5], "", 1.0, {"source": "name-section"}),  # invalid: empty
    (SIDS[6], "bad\x1bname", 1.0, {"source": "name-section"}),  # invalid: control
    (SIDS[7], "fresh_b", 1.0, {"source": "import", "module": "env", "aliases": ["x", "y"]}),
    (SIDS[7], "fresh_b_again", 1.0, {"source": "import"}),  # the same id twice
    (SIDS[8], "fresh_c", 2.0, {"source": "export"}),  # invalid confidence
    (SIDS[9], "x" * 2000, 1.0, {"source": "name-section"}),  # too long
    (SIDS[10], "fresh_d", 1.0, {"source": "js-glue", "minified": "a" * 5000}),  # clipped
]


def _dump(conn) -> dict[str, list[tuple]]:
    return {
        "symbols": [
            tuple(r)
            for r in conn.execute(
                "SELECT stable_id, name, summary, type_signature, provenance, confidence, locked,"
                " evidence, version_id, updated_at FROM symbols ORDER BY rowid"
            )
        ],
        "events": [tuple(r) for r in conn.execute("SELECT * FROM annotation_events ORDER BY id")],
    }


@pytest.mark.parametrize("provenance", PROVENANCES)
@pytest.mark.parametrize("seeded", [False, True])
def test_batch_equals_one_call_each(tmp_path, seeded, provenance):
    with frozen_time():
        one = bare_kb(tmp_path / "one.db", SIDS)
        many = bare_kb(tmp_path / "many.db", SIDS)
        try:
            for c in (one, many):
                if seeded:
                    _seed(c)
            expected = [
                upsert_symbol(
                    one,
                    s,
                    n,
                    provenance=provenance,
                    confidence=k,
                    actor="ingest",
                    evidence=e,
                    version_id=1,
                )
                for s, n, k, e in PROPOSALS
            ]
            got = upsert_symbols(
                many, PROPOSALS, provenance=provenance, actor="ingest", version_id=1
            )
            assert got == expected  # (a human name is locked, as upsert_symbol locks it)
            assert sum(d["written"] for d in got) >= 3  # (the batch path ran, not only refusals)
            assert _dump(many) == _dump(one)
        finally:
            one.close()
            many.close()


def test_unknown_id_raises_and_writes_nothing(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", SIDS[:2])
    try:
        with pytest.raises(UnknownStableIdError, match="unknown stable_id"):
            upsert_symbols(
                conn,
                [(SIDS[0], "a", 1.0, {}), ("ffff000000000000", "b", 1.0, {})],
                provenance="export",
                actor="ingest",
                version_id=1,
            )
        assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM annotation_events").fetchone()[0] == 0
    finally:
        conn.close()


def test_unknown_provenance_and_empty(tmp_path):
    conn = bare_kb(tmp_path / "kb.db", SIDS[:1])
    try:
        with pytest.raises(ValueError, match="unknown provenance"):
            upsert_symbols(conn, [], provenance="robot", actor="t", version_id=1)
        assert upsert_symbols(conn, [], provenance="export", actor="t", version_id=1) == []
    finally:
        conn.close()
