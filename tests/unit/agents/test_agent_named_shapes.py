"""The agents' context and backend specs have named, typed shapes (issue #25 point 5)."""

from __future__ import annotations

import dataclasses
from typing import get_type_hints

import pytest

from kbtool.agents import Context, agent_backends, bound_context, callers_of, context_from_facts
from kbtool.agents.backends import _SPECS, AgentBackendEntry, BackendSpec
from kbtool.agents.context import CalleeRef, CallerRef, MemOpsSummary
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def test_every_context_key_is_declared_by_the_context_typeddict():
    from kbtool.wasm import analyze_module

    fns = analyze_module(DEMO.read_bytes()).functions
    callers = callers_of(fns)
    names = {f.index: f.import_field for f in fns if f.imported}
    declared = set(get_type_hints(Context))
    seen = 0
    for f in fns:
        if f.imported or not (f.calls and callers.get(f.index)):
            continue
        ctx = bound_context(context_from_facts(fns, f.index, names, callers, lifted_c="x"), 400)
        assert set(ctx) <= declared, set(ctx) - declared
        assert set(ctx["callees"][0]) == set(CalleeRef.__annotations__)
        assert set(ctx["callers"][0]) == set(get_type_hints(CallerRef))
        assert set(ctx["mem_ops"]) == set(get_type_hints(MemOpsSummary))
        seen += 1
        if seen == 5:
            break
    assert seen == 5
    assert "truncated" in ctx


def test_backend_specs_are_frozen_records_and_entries_are_typed():
    assert all(isinstance(s, BackendSpec) for s in _SPECS.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        _SPECS["offline"].backend = "x"  # type: ignore[misc]
    entries = agent_backends({})
    assert [e["name"] for e in entries] == ["offline", "provider_a", "provider_b"]
    for e in entries:
        assert set(e) == set(get_type_hints(AgentBackendEntry))
        assert e["backend"] == _SPECS[e["name"]].backend
    assert entries[0]["available"] and entries[0]["requires"] == []
    assert entries[1]["aliases"] == list(_SPECS["provider_a"].aliases)
    assert not entries[1]["available"] and _SPECS["provider_a"].key in entries[1]["requires"]
