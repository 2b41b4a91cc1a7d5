"""The gate's stored JSON (records' evidence, events' old/new/evidence) comes from one
prebuilt encoder (``_sorted_json``), the same text as ``json.dumps(value, sort_keys=True)``
for every kind of value the gate stores, and the same error where that raises."""

from __future__ import annotations

import json
import math

import pytest

from kbtool.kb import gate, gate_events

VALUES = [
    None,
    {},
    [],
    {"source": "name-section", "actor": "ingest"},
    [{"b": 1, "a": [1, 2.5, None, True]}],
    {"z": {"y": {"x": "\u00e9\u202e\x00\n"}}, "a": -(2**70)},
    {"n": math.nan, "i": math.inf, "m": -math.inf, "f": 1e16, "g": 1e-7},
    {1: "int key", 2: "another"},
    ("tuple", "as", "list"),
    "text \ud800 lone surrogate",
]


@pytest.mark.parametrize("encode", [gate._sorted_json, gate_events._sorted_json])
def test_same_text_as_dumps(encode) -> None:
    for value in VALUES:
        assert encode(value) == json.dumps(value, sort_keys=True), value


@pytest.mark.parametrize("encode", [gate._sorted_json, gate_events._sorted_json])
def test_same_errors_as_dumps(encode) -> None:
    for bad in ({"a": 1, 2: 3}, {None: 1, True: 2, 1.5: 3}, {"s": {1, 2}}, {"o": object()}):
        with pytest.raises(TypeError) as want:
            json.dumps(bad, sort_keys=True)
        with pytest.raises(TypeError) as got:
            encode(bad)
        assert str(got.value) == str(want.value)
