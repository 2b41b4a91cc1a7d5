"""The diff's body readers (issue 30): the tokenizer's one-byte fast paths, the memory-offset
scan and the comparison that stops at the first difference answer exactly what the careful
decoder (``decode_one``) and a full comparison answer, on every function of real releases;
the stored memory accesses (``mem_ops`` facts) are exactly what the scan decodes."""

from __future__ import annotations

from collections import defaultdict

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services.diff import relocation
from kbtool.services.diff.relocation import (
    ModuleView,
    _mem_sites,
    body_tokens,
    compare_bodies,
    field_offsets_differ,
    mem_offsets_differ,
    skip_local_decls,
)
from kbtool.wasm.decoder import compare as pure_compare
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


def _count_decodes(monkeypatch) -> list[int]:
    """From now on, how many tokens each call of the comparison's decoder reads (the
    comparison runs its pure part, whose token reader can be wrapped; the compiled part
    reads the same chunks: ``test_tokens_accel.py`` compares the two)."""
    decoded: list[int] = []
    real = pure_compare.decode_tokens

    def counting(data, p, end, out, limit):
        before = len(out)
        p = real(data, p, end, out, limit)
        decoded.append(len(out) - before)
        return p

    monkeypatch.setattr(pure_compare, "decode_tokens", counting)
    monkeypatch.setattr(relocation, "_CMP", pure_compare)
    return decoded


def test_first_difference_gives_the_same_verdict(views, monkeypatch) -> None:
    va, vb = views
    shift = vb.nimp - va.nimp
    pairs = _candidates(va, vb)
    decoded = _count_decodes(monkeypatch)
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
    # equal instruction counts: the same answer to the letter (the reason, the data changes)
    assert [r.as_dict() for r in fast] == [r.as_dict() for r in full]


def test_an_early_difference_decodes_a_few_dozen_tokens(views, monkeypatch) -> None:
    """A pair that differs in its first instructions decodes a small first chunk of each
    body, not hundreds of tokens (the chunk doubles only as the comparison reads on)."""
    va, vb = views
    shift = vb.nimp - va.nimp
    early = []
    for i, j in _candidates(va, vb):
        ta, tb = _careful(va, i), _careful(vb, j)
        same_locals = relocation.locals_decl(va, i) == relocation.locals_decl(vb, j)
        first = (
            next(k for k, (a, b) in enumerate(zip(ta, tb, strict=True)) if a != b)
            if ta != tb
            else None
        )
        if same_locals and len(ta) > 300 and first is not None and first < 8:
            early.append((i, j))
    assert early
    decoded = _count_decodes(monkeypatch)
    for i, j in early:
        decoded.clear()
        r = compare_bodies(va, i, vb, j, lambda x: x + shift, first_difference=True)
        assert not r.same and " -> " in r.reason
        assert sum(decoded) <= 64, (i, j, decoded)


def test_stored_memory_accesses_answer_as_the_scan(demo_kb_master) -> None:
    """The report's layout check reads the stored accesses instead of decoding the bodies:
    on every function they are the scan's ``(op, offset)`` in body order, and on pairs with
    the same instruction stream :func:`mem_offsets_differ` answers as the decode does."""
    conn = open_ro(demo_kb_master)
    try:
        views, mems, ops = [], [], []
        for v in (1, 2):
            view = ModuleView(queries.module_bytes(conn, v))
            idx = list(_defined(view))
            mem = queries.mem_offsets_for(conn, v, idx)
            assert sorted(mem) == idx
            for i in idx:
                n, sites = _mem_sites(view, i)
                assert [(m[0], m[1]) for m in mem[i]] == [(op, off) for _, op, off in sites]
            views.append(view)
            mems.append(mem)
            ops.append({r["index"]: r["ops"] for r in queries.matching_rows(conn, v)})
    finally:
        conn.close()
    va, vb = views
    by_ops = defaultdict(list)
    for j in _defined(vb):
        by_ops[ops[1][j]].append(j)
    pairs = [(i, j) for i in _defined(va) for j in by_ops[ops[0][i]][:4]]
    answers = [field_offsets_differ(va, i, vb, j) for i, j in pairs]
    assert answers == [mem_offsets_differ(va, mems[0][i], vb, mems[1][j]) for i, j in pairs]
    assert len(pairs) > 100 and any(answers) and not all(answers)


def test_layout_check_parses_only_accesses_that_differ(demo_kb_master, monkeypatch) -> None:
    """The report's layout check reads the stored accesses as JSON text and parses only the
    pairs whose two texts differ (equal texts: no offset differs); every answer is the
    decode's (:func:`field_offsets_differ`)."""
    from kbtool.identity.pairing import pair_rows
    from kbtool.services.diff.report import _Relocation

    parsed: list[str] = []
    real = queries.parse_mem_ops

    def counted(text: str):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(queries, "parse_mem_ops", counted)
    conn = open_ro(demo_kb_master)
    try:
        pg = pair_rows(1, 2, queries.matching_rows(conn, 1), queries.matching_rows(conn, 2))
        reloc = _Relocation(conn, pg)
        va, vb = reloc._views()
        asked = [
            p
            for p in pg.defined_pairs()
            if pg.old_rows[p.old_index]["ops"] == pg.new_rows[p.new_index]["ops"]
            and pg.old_rows[p.old_index]["body_hash"] != pg.new_rows[p.new_index]["body_hash"]
            and pg.old_rows[p.old_index]["shape_hash"] != pg.new_rows[p.new_index]["shape_hash"]
        ]
        answers = [reloc.layout_shift(p) for p in asked]
        texts = reloc._mem()
    finally:
        conn.close()
    assert answers == [field_offsets_differ(va, p.old_index, vb, p.new_index) for p in asked]
    differ = [p for p in asked if texts[0][p.old_index] != texts[1][p.new_index]]
    assert len(asked) > 20 and len(differ) < len(asked)
    assert sorted(parsed) == sorted(
        t for p in differ for t in (texts[0][p.old_index], texts[1][p.new_index])
    )
