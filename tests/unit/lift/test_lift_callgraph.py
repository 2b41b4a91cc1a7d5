"""kbtool.lift.build_callgraph: direct, ref.func and call_indirect edges from facts."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.lift import build_callgraph, indirect_types
from kbtool.wasm import analyze_module
from tests.support.paths import FIXTURES

FIX = FIXTURES / "lift"


@pytest.fixture(scope="module")
def feat(tmp_path_factory):
    if not shutil.which("wat2wasm"):
        pytest.skip("needs wat2wasm")
    out = tmp_path_factory.mktemp("cg") / "features.wasm"
    subprocess.run(
        ["wat2wasm", "--enable-all", "--debug-names", str(FIX / "features.wat"), "-o", str(out)],
        check=True,
    )
    data = out.read_bytes()
    return data, analyze_module(data)


def _idx(analysis, name):
    return next(i for i, n in analysis.module.func_names.items() if n == name)


def test_nodes_and_direct_edges(feat):
    data, a = feat
    g = build_callgraph(a, data, stable_ids={2: "s-add"}, statuses={2: "human"})
    nodes = {n["index"]: n for n in g["nodes"]}
    assert len(nodes) == a.module.num_functions
    add = nodes[_idx(a, "add")]
    assert add == {
        "index": 2,
        "stable_id": "s-add",
        "name": "add",
        "status": "human",
        "imported": False,
        "in_table": True,
    }
    assert nodes[0]["status"] == "import" and nodes[0]["imported"]
    assert not nodes[_idx(a, "sum_to")]["in_table"]
    edges = {(e["caller"], e["callee"], e["kind"]): e for e in g["edges"]}
    d = _idx(a, "dispatch")
    assert edges[(d, 0, "direct")]["count"] == 2  # two calls to ext_log, one edge
    assert (_idx(a, "tail"), _idx(a, "neg"), "direct") in edges  # return_call
    assert (_idx(a, "refs"), _idx(a, "neg"), "ref") in edges


def test_call_indirect_candidates_match_signature(feat):
    data, a = feat
    d = _idx(a, "dispatch")
    g = build_callgraph(a, data)
    ind = sorted(e["callee"] for e in g["edges"] if e["kind"] == "indirect")
    # table 0 holds add, sub, neg, max; only the (i32, i32) -> i32 ones are candidates
    assert ind == sorted([_idx(a, "add"), _idx(a, "sub"), _idx(a, "max")])
    assert all(
        e["caller"] == d and e["candidates"] == 3 for e in g["edges"] if e["kind"] == "indirect"
    )
    assert g["candidates"]["0:(i32, i32) -> i32"] == ind
    assert g["candidates"]["0:(i32) -> i32"] == [_idx(a, "neg")]
    assert g["indirect"] == []


def test_large_candidate_sets_are_summarised(feat):
    data, a = feat
    g = build_callgraph(a, data, expand_limit=2)
    assert not [e for e in g["edges"] if e["kind"] == "indirect"]
    assert g["indirect"] == [
        {
            "caller": _idx(a, "dispatch"),
            "table": 0,
            "type": "(i32, i32) -> i32",
            "count": 1,
            "candidates": 3,
            "key": "0:(i32, i32) -> i32",
        }
    ]


def _uleb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _sec(i, payload):
    return bytes([i]) + _uleb(len(payload)) + payload


def test_many_sites_and_big_table_stay_linear():
    """2,000 functions each with 5 call_indirect sites, all 2,000 in the table: the graph
    has one summary per (caller, signature), not sites x table edges."""
    n = 2000
    types = _sec(1, b"\x01\x60\x01\x7f\x01\x7f")
    funcs = _sec(3, _uleb(n) + b"\x00" * n)
    table = _sec(4, b"\x01\x70\x00" + _uleb(n))
    elem = _sec(9, b"\x01\x00\x41\x00\x0b" + _uleb(n) + b"".join(_uleb(i) for i in range(n)))
    site = b"\x20\x00\x20\x00\x11\x00\x00\x1a"  # local.get 0 ×2; call_indirect; drop
    body = b"\x00" + site * 5 + b"\x20\x00\x0b"
    code = _sec(10, _uleb(n) + (_uleb(len(body)) + body) * n)
    data = b"\x00asm\x01\x00\x00\x00" + types + funcs + table + elem + code
    a = analyze_module(data)
    sites = indirect_types(data, a)
    assert len(sites) == n and all(s == {(0, 0): 5} for s in sites.values())
    g = build_callgraph(a, data, sites=sites)
    assert len(g["indirect"]) == n and g["indirect"][0]["count"] == 5
    assert g["indirect"][0]["candidates"] == n
    assert len(g["candidates"]["0:(i32) -> i32"]) == n
    assert not g["edges"]
