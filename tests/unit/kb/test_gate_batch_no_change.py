"""``upsert_symbols`` decides a proposal that changes nothing itself (issue 30.4, session 29
S: a later version's carried names, ~0.5k of them for a named zstd): the same decisions,
records and events as one ``upsert_symbol`` call per proposal over random mixes of current
records (every provenance, locked or not, confidences above, equal and below), repeated ids,
and refusals; and those decisions call no ``upsert_symbol``."""

from __future__ import annotations

import random

import pytest

from kbtool.kb import gate
from kbtool.kb.gate import set_lock, upsert_symbol, upsert_symbols
from testkit.kb import bare_kb, frozen_time

SIDS = [f"cccc{i:012x}" for i in range(40)]
PROVS = ("human", "oracle", "export", "agent", "diff-carry")
NAMES = ("alpha", "beta", "gamma", "", "bad\x1bname")
CONFS = (0.3, 0.5, 0.95, 1.0, 2.0)


def _dump(conn) -> dict[str, list[tuple]]:
    return {
        "symbols": [tuple(r) for r in conn.execute("SELECT * FROM symbols ORDER BY rowid")],
        "events": [tuple(r) for r in conn.execute("SELECT * FROM annotation_events ORDER BY id")],
    }


def _seed(conn, rnd: random.Random) -> None:
    for sid in SIDS:
        if rnd.random() < 0.75:
            prov = rnd.choice(PROVS)
            upsert_symbol(
                conn,
                sid,
                rnd.choice(NAMES[:3]),
                provenance=prov,
                confidence=rnd.choice(CONFS[:4]),
                actor="t",
            )
            if prov == "human" and rnd.random() < 0.5:
                set_lock(conn, sid, rnd.random() < 0.5)


@pytest.mark.parametrize("seed", range(12))
def test_random_mixes_equal_one_call_each(tmp_path, seed):
    rnd = random.Random(seed)
    # (not "human": the batch's fresh path writes unlocked records, upsert_symbol locked
    # ones, before this change as after; the batch's callers propose export names)
    provenance = PROVS[1 + seed % (len(PROVS) - 1)]
    proposals = [
        (rnd.choice(SIDS), rnd.choice(NAMES), rnd.choice(CONFS), {"source": "export", "n": i})
        for i in range(60)
    ]
    with frozen_time():
        one = bare_kb(tmp_path / "one.db", SIDS)
        many = bare_kb(tmp_path / "many.db", SIDS)
        try:
            for c in (one, many):
                _seed(c, random.Random(seed))
            assert _dump(one) == _dump(many)
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
                for s, n, k, e in proposals
            ]
            got = upsert_symbols(
                many, proposals, provenance=provenance, actor="ingest", version_id=1
            )
            assert got == expected
            assert _dump(many) == _dump(one)
        finally:
            one.close()
            many.close()


def test_no_change_calls_no_upsert_symbol(tmp_path, monkeypatch):
    with frozen_time():
        conn = bare_kb(tmp_path / "kb.db", SIDS[:4])
        try:
            for sid in SIDS[:4]:
                upsert_symbol(conn, sid, "same", provenance="export", confidence=0.9, actor="t")
            before = _dump(conn)
            calls: list[str] = []
            real = gate.upsert_symbol
            monkeypatch.setattr(
                gate,
                "upsert_symbol",
                lambda c, sid, *a, **k: calls.append(sid) or real(c, sid, *a, **k),
            )
            proposals = [
                (SIDS[0], "same", 0.9, {}),  # equal: no change
                (SIDS[1], "same", 0.5, {}),  # lower: no change
                (SIDS[2], "other", 0.95, {}),  # a new name: written, by upsert_symbol
                (SIDS[0], "same", 0.9, {}),  # proposed twice: upsert_symbol
            ]
            got = upsert_symbols(conn, proposals, provenance="export", actor="ingest", version_id=1)
            assert [d["reason"] for d in got][:2] == ["no change", "no change"]
            assert got[2]["written"] and got[3] == {"written": False, "reason": "no change"}
            assert calls == [SIDS[2], SIDS[0]]
            after = _dump(conn)
            assert (
                after["symbols"][0] == before["symbols"][0]
                and after["symbols"][1] == before["symbols"][1]
            )
            assert len(after["events"]) == len(before["events"]) + 1
        finally:
            conn.close()
