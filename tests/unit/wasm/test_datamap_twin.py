"""The data map (constant addresses -> strings and data words) runs compiled: its class is
part of the decoder's twin (``kbtool.wasm._cdecoder.dmap``) and gives exactly the pure
class's entries; with the twin blocked everything uses the pure class."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbtool.wasm import active, datamap, facts
from kbtool.wasm.decoder import dmap as pure_dmap
from kbtool.wasm.reader import parse_module
from tests.support.paths import CORPUS, ROOT

COMPILED = active.load_compiled()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled decoder {active.compiled_state()}"
)

MODULES = [
    "release/sql.js-1.12.0.sql-wasm.wasm",
    "release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm",
]


def _addresses(dm, data: bytes) -> list[int]:
    """Every 4-aligned address of the data plus odd ones near string starts (the decoder's
    mix: strings, words, interiors), and a few outside every segment."""
    out = []
    for start, seg in zip(dm.starts, dm.datas, strict=True):
        out += range(start, start + len(seg), 4)
        out += [start + k + 1 for k in range(0, len(seg) - 1, 97)]
    return out + [dm.lo - 1, dm.hi, dm.hi + 4096]


@needs_twin
def test_the_chosen_class_is_the_twins():
    assert datamap.DataMap is active.DMAP.DataMap
    assert active.DMAP.__name__ == "kbtool.wasm._cdecoder.dmap"
    assert datamap.DataMap is not pure_dmap.DataMap


@needs_twin
@pytest.mark.parametrize("rel", MODULES)
@pytest.mark.parametrize("sized_first", [False, True])
def test_compiled_entries_equal_the_pure_ones(rel, sized_first):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    m = parse_module(data)
    passive = datamap.passive_addresses(data, m)
    segs = [(s.offset, s.data) for s in m.data_segments if not s.passive and s.offset is not None]
    segs += [(a, m.data_segments[i].data) for i, a in passive.items()]
    pure = pure_dmap.DataMap(segs, True, sized_first)
    comp = active.DMAP.DataMap(segs, True, sized_first)
    if sized_first:  # a Go-style mask on the data words as well
        pure.ptr_mask = comp.ptr_mask = (pure.lo, pure.hi, 0x1000, 0x2000)
    addrs = _addresses(pure, data)[:60000]
    got = [comp.entry(a) for a in addrs]
    assert got == [pure.entry(a) for a in addrs]
    assert sum(e is not None and e[2] is not None for e in got) > 100  # strings were found
    assert comp.text_budget == pure.text_budget
    assert comp.cache == pure.cache
    hits = [e for e in got if e is not None][:2000]
    for n in (4, 7, 16):
        assert [comp.sized_text(e, n) for e in hits] == [pure.sized_text(e, n) for e in hits]


@needs_twin
def test_facts_equal_with_the_pure_data_map(monkeypatch):
    """The compiled loop with the pure data map, and the compiled map, give the same facts."""
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    a = facts.analyze_module(data)
    monkeypatch.setattr(datamap, "DataMap", pure_dmap.DataMap)
    b = facts.analyze_module(data)
    assert [(f.shape_hash, f.strings) for f in a.functions] == [
        (f.shape_hash, f.strings) for f in b.functions
    ]


def test_blocked_twin_means_the_pure_class_everywhere():
    """With the twin blocked (``KBTOOL_DECODE=pure``) the data map every caller gets is the
    pure class, and it still recovers the strings (the decoder's facts)."""
    code = (
        "import sys\n"
        "from kbtool.wasm import active, datamap, facts\n"
        "a = facts.analyze_module(open(sys.argv[1], 'rb').read())\n"
        "print(active.PATH, datamap.DataMap.__module__, facts.DataMap.__module__,"
        " sum(len(f.strings) for f in a.functions) > 50)\n"
    )
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    env = {**os.environ, "KBTOOL_DECODE": "pure"}
    p = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [
        "pure",
        "kbtool.wasm.decoder.dmap",
        "kbtool.wasm.decoder.dmap",
        "True",
    ]
