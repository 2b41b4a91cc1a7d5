"""The call-graph stage's gap rule finds the gaps holding one unmatched function of each
side by bisecting their positions; it pairs exactly what the walk over every gap (the
reference below, the rule as first written) pairs, in the same order, with the same work
counted: whole matcher runs on random modules and on the demo releases compare."""

from __future__ import annotations

import random

import pytest

from kbtool.identity.matcher import _Matcher
from kbtool.identity.matcher.base import MatcherBase
from kbtool.identity.records import FuncRecord, records_from_rows
from kbtool.kb import queries
from kbtool.kb.db import open_ro


class _Reference(_Matcher):
    def _resolve_gaps(self, lo, ln) -> None:
        o2n, n2o = self.o2n, self.n2o
        pos_n = {y: j for j, y in enumerate(ln)}
        anchors = []
        last_j = -1
        for i, x in enumerate(lo):
            y = o2n.get(x)
            if y is None:
                continue
            j = pos_n.get(y)
            if j is None or j <= last_j:
                continue
            anchors.append((i, j))
            last_j = j
        if not anchors:
            return
        bounds = [(-1, -1), *anchors, (len(lo), len(ln))]
        OLD, NEW = self.OLD.recs, self.NEW.recs
        for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
            xs = [x for x in lo[i0 + 1 : i1] if x not in o2n and not OLD[x].imported]
            ys = [y for y in ln[j0 + 1 : j1] if y not in n2o and not NEW[y].imported]
            if len(xs) == 1 and len(ys) == 1:
                x, y = xs[0], ys[0]
                if OLD[x].type_sig != NEW[y].type_sig:
                    continue
                s = self.similarity(x, y)
                if s >= self.CG_GAP:
                    self.accept(x, y, self._cg_score(s), "callgraph")


def _run(cls, old, new):
    m = cls(old, new)
    out = m.run_staged(True)
    return out, m.finish_stats()


def _releases(seed: int) -> tuple[list[FuncRecord], list[FuncRecord]]:
    """A random module and a later release of it: functions inserted and dropped, many
    bodies changed a little (other hashes, the same signature and mostly the same code),
    calls kept through the renumbering."""
    rnd = random.Random(seed)
    n = rnd.randint(30, 120)
    sigs = ["(i32)->i32", "(i32,i32)->nil", "()->nil", "(i32)->nil"]
    old = []
    for i in range(n):
        imported = i < 3
        old.append(
            FuncRecord(
                index=i,
                imported=imported,
                import_name=f"env.f{i}" if imported else None,
                type_sig=rnd.choice(sigs),
                body_hash=None if imported else f"b{i}",
                shape_hash=None if imported else f"s{i}",
                calls=() if imported else tuple(rnd.sample(range(n), rnd.randint(0, 16))),
                consts=tuple(rnd.sample(range(60), rnd.randint(0, 5))),
                ops=bytes(rnd.randrange(30) for _ in range(2 * rnd.randint(2, 40))),
                instr_count=rnd.randint(4, 60),
                table_slots=(i,) if rnd.random() < 0.4 else (),
            )
        )
    keep = [r for r in old if r.imported or rnd.random() < 0.9]
    new_of: dict[int, int] = {}
    layout: list[FuncRecord | None] = []
    for r in keep:
        if not r.imported and rnd.random() < 0.08:
            layout.append(None)  # a function new in this release
        layout.append(r)
    for j, r in enumerate(layout):
        if r is not None:
            new_of[r.index] = j
    new = []
    for j, r in enumerate(layout):
        if r is None:
            new.append(
                FuncRecord(
                    index=j,
                    type_sig=rnd.choice(sigs),
                    body_hash=f"n{j}",
                    shape_hash=f"n{j}",
                    ops=bytes(rnd.randrange(30) for _ in range(2 * rnd.randint(2, 40))),
                    instr_count=rnd.randint(4, 60),
                )
            )
            continue
        changed = not r.imported and rnd.random() < 0.6
        ops = bytearray(r.ops)
        if changed and ops:
            ops[rnd.randrange(len(ops))] = rnd.randrange(30)
        new.append(
            FuncRecord(
                index=j,
                imported=r.imported,
                import_name=r.import_name,
                type_sig=r.type_sig,
                body_hash=f"c{r.body_hash}" if changed else r.body_hash,
                shape_hash=f"c{r.shape_hash}" if changed and rnd.random() < 0.8 else r.shape_hash,
                calls=tuple(new_of[c] for c in r.calls if c in new_of),
                consts=r.consts,
                ops=bytes(ops),
                instr_count=r.instr_count + (rnd.randint(-2, 2) if changed else 0),
                table_slots=r.table_slots,
            )
        )
    return old, new


@pytest.mark.parametrize("seed", range(40))
def test_random_releases_pair_alike(seed: int) -> None:
    old, new = _releases(seed)
    (ra, rb), sa = _run(_Reference, old, new)
    (ga, gb), sb = _run(_Matcher, old, new)
    assert (ga, gb) == (ra, rb)
    assert sb.work == sa.work


def test_demo_releases_pair_alike(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        old = records_from_rows(queries.matching_rows(conn, 1))
        new = records_from_rows(queries.matching_rows(conn, 2))
    finally:
        conn.close()
    assert issubclass(_Matcher, MatcherBase)
    for a, b in ((old, new), (new, old)):
        (ra, rb), sa = _run(_Reference, a, b)
        (ga, gb), sb = _run(_Matcher, a, b)
        assert (ga, gb) == (ra, rb) and sb.work == sa.work
