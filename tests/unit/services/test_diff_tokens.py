"""The diff's body readers (issue 30): the tokenizer's one-byte fast paths, the memory-offset
scan and the comparison that stops at the first difference answer exactly what the careful
decoder (``decode_one``) and a full comparison answer, on every function of real releases."""

from __future__ import annotations

from collections import defaultdict

import pytest

from kbtool.services.diff import relocation
from kbtool.services.diff.relocation import (
    ModuleView,
    body_tokens,
    compare_bodies,
    field_offsets_differ,
    skip_local_decls,
)
from kbtool.wasm.instr import decode_one
from kbtool.wasm.opcodes import KIND
from tests.support.paths import DEMO_DIR


def _careful(view: ModuleView, index: int) -> list[tuple[int, tuple]]:
    rng = view.body(index)
    if rng is None:
        return []
    p, end = skip_local_decls(view.data, *rng), rng[1]
    out = []
    while p < end:
        op, p, imms = decode_one(view.data, p, end)
        out.append((op, imms))
    return out


def _offsets_differ(va: ModuleView, ia: int, vb: ModuleView, ib: int) -> bool:
    """field_offsets_differ as it read the tokens before the scan."""
    ta, tb = _careful(va, ia), _careful(vb, ib)
    if len(ta) != len(tb):
        return False
    return any(
        oa == ob
        and KIND[oa] in (2, 20)
        and ma[1] != mb[1]
        and not (va.is_static(ma[1]) and vb.is_static(mb[1]))
        for (oa, ma), (ob, mb) in zip(ta, tb, strict=True)
    )


@pytest.fixture(scope="module")
def views() -> tuple[ModuleView, ModuleView]:
    return (
        ModuleView((DEMO_DIR / "zstd-1.5.5.wasm").read_bytes()),
        ModuleView((DEMO_DIR / "zstd-1.5.6.wasm").read_bytes()),
    )


def _defined(v: ModuleView) -> range:
    return range(v.nimp, v.nimp + v.ndef)


def test_tokens_are_the_careful_decoders(views) -> None:
    for v in views:
        for i in _defined(v):
            fast, careful = body_tokens(v, i), _careful(v, i)
            assert fast == careful, i
            assert [tuple(map(type, t[1])) for t in fast] == [
                tuple(map(type, t[1])) for t in careful
            ]


def _candidates(va: ModuleView, vb: ModuleView) -> list[tuple[int, int]]:
    """Pairs of bodies with equal instruction counts (where offsets and code can agree)."""
    by_len = defaultdict(list)
    for j in _defined(vb):
        by_len[len(body_tokens(vb, j))].append(j)
    return [(i, j) for i in _defined(va) for j in by_len[len(body_tokens(va, i))][:3]]


def test_offset_scan_answers_as_the_tokens(views) -> None:
    va, vb = views
    pairs = _candidates(va, vb)
    answers = [field_offsets_differ(va, i, vb, j) for i, j in pairs]
    assert answers == [_offsets_differ(va, i, vb, j) for i, j in pairs]
    assert any(answers) and not all(answers)  # both answers occur


def test_first_difference_gives_the_same_verdict(views, monkeypatch) -> None:
    va, vb = views
    shift = vb.nimp - va.nimp
    pairs = _candidates(va, vb)
    decoded: list[int] = []
    real = relocation._decode

    def counting(data, p, end, out, limit):
        before = len(out)
        p = real(data, p, end, out, limit)
        decoded.append(len(out) - before)
        return p

    monkeypatch.setattr(relocation, "_decode", counting)
    full, fast = [], []
    for i, j in pairs:
        full.append(compare_bodies(va, i, vb, j, lambda x: x + shift))
    full_tokens = sum(decoded)
    decoded.clear()
    for i, j in pairs:
        fast.append(compare_bodies(va, i, vb, j, lambda x: x + shift, first_difference=True))
    assert [r.same for r in fast] == [r.same for r in full]
    assert any(r.same for r in full) and not all(r.same for r in full)
    assert [r.as_dict() for r in fast if r.same] == [r.as_dict() for r in full if r.same]
    assert sum(decoded) < 0.7 * full_tokens  # a body is read only to its first difference
