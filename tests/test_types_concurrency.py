"""The concurrent-writers test of names (tests/test_gate_concurrency.py) for the type kinds
(type, local_type, data_type): 8 processes x 120 agent proposals on the same annotations, plus
one locked human annotation per kind. No lost update (the highest confidence wins, as sequentially), one event per proposal,
the human annotation never overwritten: 0 violations."""

from __future__ import annotations

import multiprocessing as mp
import random

from kbtool.kb import knowledge as kn
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_knowledge
from tests.support.kb import bare_kb

SIDS = [f"c0ffee{i:010d}" for i in range(3)]
HUMAN_SID = SIDS[0]
PROCS, PER_PROC = 8, 120
KINDS = {  # kind -> (key, value maker)
    "type": ("", lambda w, k: {"text": f"struct s {{ int f_w{w}_{k}; }};", "kind": "struct", "name": "s",
                               "size": 4, "align": 4,
                               "fields": [{"name": f"f_w{w}_{k}", "offset": 0, "size": 4, "type": "int"}]}),
    "local_type": ("0", lambda w, k: {"text": f"struct t_w{w}_{k} *"}),
    "data_type": ("", lambda w, k: {"text": f"struct d_w{w}_{k}"}),
}


def _targets(kind: str) -> list[str]:
    if kind == "type":
        return ["struct s", "struct t", "union u"]
    return [f"d:{i:016x}" for i in range(3)] if kind == "data_type" else SIDS


def _plan(worker: int) -> list[tuple[str, str, dict, float]]:
    rng = random.Random(worker)
    out = []
    for k in range(PER_PROC):
        kind = rng.choice(sorted(KINDS))
        target = rng.choice(_targets(kind))
        out.append((kind, target, KINDS[kind][1](worker, k), round(rng.random(), 6)))
    return out


def _worker(path: str, worker: int) -> None:
    conn = open_rw(path)
    for kind, target, value, conf in _plan(worker):
        upsert_knowledge(conn, kind, target, KINDS[kind][0], value, provenance="agent",
                         confidence=conf, actor=f"agent:w{worker}", version_id=1)
    conn.close()


def test_concurrent_agents_every_kind(tmp_path):
    path = tmp_path / "kb.db"
    conn = bare_kb(path, SIDS)
    for kind in KINDS:
        human_target = _targets(kind)[0]
        d = upsert_knowledge(conn, kind, human_target, KINDS[kind][0], KINDS[kind][1](99, 1),
                             provenance="human", confidence=1.0, actor="h", version_id=1)
        assert d["written"], d
    conn.close()

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(str(path), w)) for w in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0

    conn = open_rw(path)
    proposals = [p for w in range(PROCS) for p in _plan(w)]
    violations = 0
    for kind, (key, make) in KINDS.items():
        for target in _targets(kind):
            rec = kn.get(conn, kind, target, key)
            evs = [e for e in kn.events(conn, target, kind) if e["actor"].startswith("agent:")]
            mine = [p for p in proposals if p[0] == kind and p[1] == target]
            # every proposal leaves exactly one event (all values differ: never "no change")
            violations += int(len(evs) != len(mine))
            if target == _targets(kind)[0]:
                violations += int(rec["provenance"] != "human"
                                  or kn.display(kind, rec["value"]) != kn.display(kind, make(99, 1)))
                violations += sum(1 for e in evs if e["written"])
                continue
            best = max(p[3] for p in mine)
            violations += int(rec["confidence"] != best)
            violations += int(kn.display(kind, rec["value"])
                              not in [kn.display(kind, p[2]) for p in mine if p[3] == best])
    assert violations == 0
    conn.close()

