"""8 processes x 200 proposals on the same symbols: no lost update, one event per proposal."""

from __future__ import annotations

import multiprocessing as mp
import random

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from testkit.kb import bare_kb

SIDS = [f"c0ffee{i:010d}" for i in range(5)]
HUMAN_SID = SIDS[0]
PROCS, PER_PROC = 8, 200


def _plan(worker: int) -> list[tuple[str, str, float]]:
    rng = random.Random(worker)
    return [
        (rng.choice(SIDS), f"name_w{worker}_{k}", round(rng.random(), 6)) for k in range(PER_PROC)
    ]


def _worker(path: str, worker: int) -> None:
    conn = open_rw(path)
    for sid, name, conf in _plan(worker):
        upsert_symbol(
            conn, sid, name, provenance="agent", confidence=conf, actor=f"agent:w{worker}"
        )
    conn.close()


def test_concurrent_agents(tmp_path):
    path = tmp_path / "kb.db"
    conn = bare_kb(path, SIDS)
    upsert_symbol(conn, HUMAN_SID, "human_name", provenance="human", confidence=1.0, actor="h")
    conn.close()

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(str(path), w)) for w in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0

    conn = open_rw(path)
    proposals = [p for w in range(PROCS) for p in _plan(w)]
    for sid in SIDS:
        sym = queries.get_symbol(conn, sid)
        evs = [e for e in queries.annotation_events(conn, sid) if e["actor"].startswith("agent:")]
        mine = [p for p in proposals if p[0] == sid]
        # every proposal is accounted for: one event each, or counted on a bounded refusal row
        # (a caller's refusals beyond the per-minute cap share one row with a repeat count)
        assert sum(e.get("repeats", 1) for e in evs) == len(mine), "every proposal is recorded"
        if sid == HUMAN_SID:
            assert sym["name"] == "human_name" and sym["provenance"] == "human"
            assert not any(e["written"] for e in evs)
            continue
        best = max(mine, key=lambda p: p[2])
        # the sequential rule: the highest-confidence proposal wins (ties: the first one seen)
        assert sym["confidence"] == best[2]
        winners = [p for p in mine if p[2] == best[2]]
        assert sym["name"] in {w[1] for w in winners}
    conn.close()
