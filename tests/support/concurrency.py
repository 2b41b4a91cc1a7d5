"""Concurrent writers through the gate: processes proposing the same annotations at once.

``knowledge_race`` is the concurrent-writers test of names (tests/unit/kb/test_gate_concurrency.py)
for other annotation kinds: one locked human annotation per kind, then ``procs`` spawned
processes x ``per_proc`` agent proposals (random kind, target and confidence, every value
distinct), then a count of violations: a lost update (the record is not the highest-confidence
proposal, as sequential writes would leave it), a proposal without its one event, or the human
annotation overwritten. 0 means the gate serialised them all.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbtool.kb import knowledge as kn
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_knowledge
from testkit.kb import bare_kb

#: kind -> (key, value maker(worker, k))
Kinds = dict[str, tuple[str, Callable[[int, int], dict[str, Any]]]]
Proposal = tuple[str, str, str, dict[str, Any], float]  # kind, target, key, value, confidence


def plan(
    kinds: Kinds, targets: Callable[[str], list[str]], worker: int, per_proc: int
) -> list[Proposal]:
    """The proposals of one worker (seeded by its number: the parent can replay them)."""
    rng = random.Random(worker)
    out = []
    for k in range(per_proc):
        kind = rng.choice(sorted(kinds))
        target = rng.choice(targets(kind))
        out.append(
            (kind, target, kinds[kind][0], kinds[kind][1](worker, k), round(rng.random(), 6))
        )
    return out


def _propose(path: str, worker: int, proposals: list[Proposal]) -> None:
    conn = open_rw(path)
    for kind, target, key, value, conf in proposals:
        upsert_knowledge(
            conn,
            kind,
            target,
            key,
            value,
            provenance="agent",
            confidence=conf,
            actor=f"agent:w{worker}",
            version_id=1,
        )
    conn.close()


def spawn_all(target: Callable[..., None], argsets: list[tuple], timeout: float = 180) -> None:
    """Run ``target(*args)`` in one spawned process per argument tuple; each must exit 0."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in argsets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0


def knowledge_race(
    path: Path,
    kinds: Kinds,
    targets: Callable[[str], list[str]],
    sids: list[str],
    *,
    procs: int = 8,
    per_proc: int = 120,
) -> int:
    """The violations of ``procs`` concurrent agents on ``kinds`` (the first target of each
    kind holds a human annotation); see the module docstring."""
    conn = bare_kb(path, sids)
    for kind, (key, make) in kinds.items():
        d = upsert_knowledge(
            conn,
            kind,
            targets(kind)[0],
            key,
            make(99, 1),
            provenance="human",
            confidence=1.0,
            actor="h",
            version_id=1,
        )
        assert d["written"], d
    conn.close()

    plans = [plan(kinds, targets, w, per_proc) for w in range(procs)]
    spawn_all(_propose, [(str(path), w, plans[w]) for w in range(procs)])

    conn = open_rw(path)
    proposals = [p for ps in plans for p in ps]
    violations = 0
    for kind, (key, make) in kinds.items():
        for target in targets(kind):
            rec = kn.get(conn, kind, target, key)
            evs = [e for e in kn.events(conn, target, kind) if e["actor"].startswith("agent:")]
            mine = [p for p in proposals if p[0] == kind and p[1] == target]
            # every proposal leaves exactly one event (all values differ: never "no change")
            violations += int(len(evs) != len(mine))
            if target == targets(kind)[0]:
                violations += int(
                    rec["provenance"] != "human"
                    or kn.display(kind, rec["value"]) != kn.display(kind, make(99, 1))
                )
                violations += sum(1 for e in evs if e["written"])
                continue
            best = max(p[4] for p in mine)
            violations += int(rec["confidence"] != best)
            violations += int(
                kn.display(kind, rec["value"])
                not in [kn.display(kind, p[3]) for p in mine if p[4] == best]
            )
    conn.close()
    return violations
