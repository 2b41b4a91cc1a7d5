"""The concurrent-writers test of names (tests/unit/kb/test_gate_concurrency.py) for every new kind:
8 processes x 120 agent proposals on the same annotations, plus one locked human annotation per
kind. No lost update (the highest confidence wins, as sequentially), one event per proposal,
the human annotation never overwritten: 0 violations."""

from __future__ import annotations

from tests.support.concurrency import knowledge_race

SIDS = [f"c0ffee{i:010d}" for i in range(3)]
KINDS = {  # kind -> (key, value maker)
    "comment": ("", lambda w, k: {"text": f"comment w{w} k{k}"}),
    "line_comment": ("12", lambda w, k: {"text": f"line w{w} k{k}", "anchor": [], "ordinal": 0}),
    "prototype": ("", lambda w, k: {"text": f"void f{w}_{k}(void)"}),
    "local": ("0", lambda w, k: {"name": f"v_w{w}_{k}"}),
    "data_name": ("", lambda w, k: {"name": f"d_w{w}_{k}"}),
}


def _targets(kind: str) -> list[str]:
    return [f"d:{i:016x}" for i in range(3)] if kind == "data_name" else SIDS


def test_concurrent_agents_every_kind(tmp_path):
    assert knowledge_race(tmp_path / "kb.db", KINDS, _targets, SIDS) == 0
