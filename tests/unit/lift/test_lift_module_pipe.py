"""What crosses the pipe from a lift worker to the parent: plain tuples, the same results."""

from __future__ import annotations

import dataclasses
import pickle

from kbtool.lift import active, lift_module, prepare
from kbtool.lift import module as lift_mod
from kbtool.lift.active import load_pure
from kbtool.wasm.workers import pool_context
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _without_seconds(r):
    return (r.func_index, r.text, r.truncated, r.reason, dataclasses.replace(r.stats, seconds=0.0))


def test_packed_results_come_back_equal_and_of_the_same_class():
    lm = prepare(DEMO.read_bytes())
    m = lm.module
    sent = [active.lift_function(lm, i) for i in range(m.num_func_imports, m.num_func_imports + 40)]
    sent[3].truncated, sent[3].reason = True, "a reason"  # every field crosses
    pure = load_pure()
    foreign = pure.LiftResult(7, "int f7(void);\n", stats=pure.LiftStats(instructions=3))
    if type(foreign) is not type(sent[0]):  # compiled: a fallback result crosses as itself
        sent.append(foreign)
    packed = lift_mod._lift_pack(sent)
    assert all(type(x) is tuple for x in packed[:40])
    back = lift_mod._lift_unpack(pickle.loads(pickle.dumps(packed, pickle.HIGHEST_PROTOCOL)))
    assert back == sent
    assert [type(r) for r in back] == [type(r) for r in sent]
    assert [type(r.stats) for r in back] == [type(r.stats) for r in sent]
    assert back[3].reason == "a reason" and back[3].truncated
    assert back[0].stats.seconds == sent[0].stats.seconds  # the float exactly


def test_two_workers_give_the_one_process_results(monkeypatch):
    lm = prepare(DEMO.read_bytes())
    one = list(lift_module(lm, workers=1))
    seen: list = []
    unpack = lift_mod._lift_unpack

    def spy(items):
        seen.extend(items)
        return unpack(items)

    monkeypatch.setattr(lift_mod, "_lift_unpack", spy)
    two = list(lift_module(lm, workers=2))
    if pool_context() is not None:  # a threaded process lifts in-process
        assert len(seen) == len(two) and all(type(x) is tuple for x in seen)
    assert {type(r) for r in two} == {active.IMPL.LiftResult}
    assert [_without_seconds(r) for r in two] == [_without_seconds(r) for r in one]
    assert lift_mod._STATE == {}  # nothing of the pool is left behind
