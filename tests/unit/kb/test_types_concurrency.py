"""The concurrent-writers test of names (tests/unit/kb/test_gate_concurrency.py) for the type kinds
(type, local_type, data_type): 8 processes x 120 agent proposals on the same annotations, plus
one locked human annotation per kind. No lost update (the highest confidence wins, as
sequentially), one event per proposal, the human annotation never overwritten: 0 violations."""

from __future__ import annotations

from tests.support.concurrency import knowledge_race

SIDS = [f"c0ffee{i:010d}" for i in range(3)]
KINDS = {  # kind -> (key, value maker)
    "type": (
        "",
        lambda w, k: {
            "text": f"struct s {{ int f_w{w}_{k}; }};",
            "kind": "struct",
            "name": "s",
            "size": 4,
            "align": 4,
            "fields": [{"name": f"f_w{w}_{k}", "offset": 0, "size": 4, "type": "int"}],
        },
    ),
    "local_type": ("0", lambda w, k: {"text": f"struct t_w{w}_{k} *"}),
    "data_type": ("", lambda w, k: {"text": f"struct d_w{w}_{k}"}),
}


def _targets(kind: str) -> list[str]:
    if kind == "type":
        return ["struct s", "struct t", "union u"]
    return [f"d:{i:016x}" for i in range(3)] if kind == "data_type" else SIDS


def test_concurrent_agents_every_kind(tmp_path):
    assert knowledge_race(tmp_path / "kb.db", KINDS, _targets, SIDS) == 0
