"""Cross-check against ``wasm-objdump -d`` on the shared corpus: per function, the
instruction count and the mnemonic sequence must be identical.

Small modules: every function. The two big release modules: a deterministic sample of
300 functions (the other bodies are blanked in a copy so wasm-objdump stays fast); the
full comparison of those is marked ``slow``.
"""

from __future__ import annotations

import json
import random
from hashlib import blake2b

import pytest

from kbtool.wasm import analyze_module, parse_module
from testkit.wasmbuild import CORPUS, have_wabt, objdump_mnemonics, reduce_module

BIG = 2_000_000
SAMPLE = 300


def _modules():
    p = CORPUS / "MANIFEST.json"
    if not p.is_file():
        return []
    return [e["file"] for e in json.loads(p.read_text())["modules"]]


pytestmark = [
    pytest.mark.skipif(not _modules(), reason="corpus not present"),
    pytest.mark.skipif(not have_wabt(), reason="wabt not installed"),
]

SMALL = [f for f in _modules() if (CORPUS / f).stat().st_size < BIG]
LARGE = [f for f in _modules() if (CORPUS / f).stat().st_size >= BIG]


def _compare(analysis, ref, indices, starts=None):
    funcs = {f.index: f for f in analysis.functions}
    bad = []
    for i in indices:
        f = funcs[i]
        if f.mnemonics() != ref.get(i) or f.instr_count != len(ref.get(i, [])):
            bad.append(i)
        if starts is not None and starts.get(i) != f.body_offset:
            bad.append(i)
    return bad


@pytest.mark.parametrize("rel", SMALL)
def test_small_module_all_functions(rel):
    path = CORPUS / rel
    a = analyze_module(path.read_bytes())
    starts: dict[int, int] = {}
    ref = objdump_mnemonics(path, starts)
    defined = [f.index for f in a.functions if not f.imported]
    assert sorted(ref) == defined
    assert _compare(a, ref, defined, starts) == []


def _sample(m, n):
    """Deterministic random sample of defined function indices."""
    nimp = m.num_func_imports
    return sorted(random.Random(1234).sample(range(nimp, nimp + len(m.code)), n))


@pytest.mark.parametrize("rel", LARGE)
def test_large_module_sample(rel, tmp_path):
    data = (CORPUS / rel).read_bytes()
    m = parse_module(data)
    keep = _sample(m, SAMPLE)
    code_sec = next(s for s in m.sections if s.id == 10)
    small = reduce_module(data, set(keep), m.num_func_imports, code_sec.offset, m.code)
    path = tmp_path / "sample.wasm"
    path.write_bytes(small)
    # the kept bodies are byte-identical, so decoding the reduced copy decodes them
    a = analyze_module(small)
    nimp = m.num_func_imports
    for i in keep:
        s, e = m.code[i - nimp]
        assert a.functions[i].body_hash == blake2b(data[s:e], digest_size=16).hexdigest()
    ref = objdump_mnemonics(path)
    assert _compare(a, ref, keep) == []


@pytest.mark.slow
@pytest.mark.parametrize("rel", LARGE)
def test_large_module_all_functions(rel):
    path = CORPUS / rel
    a = analyze_module(path.read_bytes())
    ref = objdump_mnemonics(path)
    defined = [f.index for f in a.functions if not f.imported]
    assert _compare(a, ref, defined) == []
