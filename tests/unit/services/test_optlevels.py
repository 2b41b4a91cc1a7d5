"""Names across optimisation levels (issue 23 point 10): inlining splits, review-flagged
pairs never kept as identities, and an -O2 -> -Os ingest of a small clang-built program."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.optlevels import base_name, build_smoke, evaluate
from benchmarks.programs import DEFAULT_OUT
from kbtool.identity.matcher import match_functions_staged
from kbtool.identity.matcher.__init__ import _View
from kbtool.identity.matcher.review import (
    review_signatures,
    review_weak_neighbourhoods,
    review_wrapper_splits,
)
from kbtool.identity.records import records_from_analysis
from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff.carry import REVIEW_CAP
from kbtool.services.diff.report import get_diff
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module

LUA = "lua-5.4.6.clang"


def _lua(opt: str, role: str):
    p = DEFAULT_OUT / f"{LUA}.{opt}.{role}.wasm"
    if not p.exists():
        pytest.skip(f"programs corpus not built ({p}): python benchmarks/programs.py")
    return analyze_module(p.read_bytes())


def test_base_name_drops_toolchain_suffixes():
    assert base_name("foo.llvm.123456") == "foo"
    assert base_name("foo.1") == "foo"
    assert base_name("foo.constprop.0") == "foo"
    assert base_name("luaV_tonumber_") == "luaV_tonumber_"
    assert base_name("a.b") == "a.b"


def test_inlining_split_follows_the_callers():
    """-O2 inlines l_strton into luaV_tonumber_, -Os calls it: the old luaV_tonumber_ is paired
    with the new luaV_tonumber_ (where its callers went), not with the outlined l_strton whose
    body it resembles."""
    old, new, twin = _lua("O2", "named"), _lua("Os", "stripped"), _lua("Os", "named")
    truth_old = {f.index: f.raw_name for f in old.functions}
    truth_new = {f.index: f.raw_name for f in twin.functions}
    _exact, full = match_functions_staged(records_from_analysis(old), records_from_analysis(new))
    got = {truth_old[m.old_index]: truth_new[m.new_index] for m in full}
    assert got["luaV_tonumber_"] == "luaV_tonumber_"
    assert got["luaK_concat"] == "luaK_concat"


def test_no_identity_is_a_pair_the_diff_flags():
    """Identities (what ingest shares annotations by, at full confidence) are only pairs the
    pairing's review checks leave unflagged; before, such pairs kept the old identity (and the
    old name at full confidence) while the diff flagged them for review."""
    old, new = _lua("Os", "named"), _lua("O3", "stripped")
    ro, rn = records_from_analysis(old), records_from_analysis(new)
    exact, full = match_functions_staged(ro, rn)
    view = _View({r.index: r for r in ro}, {r.index: r for r in rn}, full)
    review_signatures(view)
    review_wrapper_splits(view)
    review_weak_neighbourhoods(view)
    flagged = {(p.old_index, p.new_index) for p in view.by_new.values() if p.review}
    assert exact and not flagged & {(m.old_index, m.new_index) for m in exact}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    if not shutil.which("wasm-tools"):
        pytest.skip("wasm-tools not on PATH")
    built = build_smoke(tmp_path_factory.mktemp("tiny"))
    if built is None:
        pytest.skip("clang with wasi-libc and compiler-rt not available")
    return built


def test_o2_then_os_in_one_program_names_carried(tiny: Path, tmp_path: Path):
    """A user ingests -O2 (named) then -Os (stripped) of one program: one program, names
    carried right, and a review-flagged pair never shares the old identity and never carries
    its name above the review cap."""
    src = tiny / "tiny-1.0.clang.O2.named.wasm"
    dst = tiny / "tiny-1.0.clang.Os.stripped.wasm"
    s = evaluate(
        src,
        dst,
        tiny / "tiny-1.0.clang.Os.named.wasm",
        program="tiny",
        toolchain="clang",
        pair="O2 -> Os",
        heldout=False,
    )
    assert s.reached >= 10 and s.wrong == 0
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, src, label="o2", program="tiny")
    b = ingest_file(conn, dst, label="os", program="tiny")
    assert b.program == a.program == "tiny" and b.parent_version_id == a.version_id
    report = get_diff(conn, a.version_id, b.version_id)
    named = queries.annotations_by_index(conn, b.version_id, defined_only=True)
    for c in report["changes"]:
        if not c["review"] or c["to_index"] is None:
            continue
        assert c["from_stable_id"] != c["to_stable_id"]
        ann = named.get(c["to_index"])
        if ann is not None and ann["provenance"] == "diff-carry":
            assert ann["confidence"] <= REVIEW_CAP
    conn.close()


def test_weak_pairs_become_suggestions_not_names(tmp_path: Path):
    """-O2 -> -Os of lua: pairs scoring below CARRY_MIN_SCORE write no diff-carry name; their
    old name waits as an open suggestion, which a person accepts through the gate."""
    from kbtool.services.agent_pass import accept_suggestion
    from kbtool.services.diff.carry import CARRY_MIN_SCORE

    _lua("O2", "named")  # skips without the programs corpus
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_file(conn, DEFAULT_OUT / f"{LUA}.O2.named.wasm", label="o2", program="lua")
    b = ingest_file(conn, DEFAULT_OUT / f"{LUA}.Os.stripped.wasm", label="os", program="lua")
    assert b.diff_carry["weak"] > 0 and b.diff_carry["suggested"] > 0
    report = get_diff(conn, a.version_id, b.version_id)
    weak = {
        c["to_index"]
        for c in report["changes"]
        if c["to_index"] is not None
        and c["score"] is not None
        and c["score"] < CARRY_MIN_SCORE
        and c["from_stable_id"] != c["to_stable_id"]
    }
    named = queries.annotations_by_index(conn, b.version_id, defined_only=True)
    assert weak and not any(named.get(i, {}).get("provenance") == "diff-carry" for i in weak)
    rows = conn.execute(
        "SELECT stable_id, func_index, name FROM suggestions WHERE version_id = ?"
        " AND backend = 'diff-carry' AND status = 'open'",
        (b.version_id,),
    ).fetchall()
    assert len(rows) == b.diff_carry["suggested"] and {r[1] for r in rows} <= weak
    sid, idx, name = rows[0]
    assert accept_suggestion(conn, sid, b.version_id)["written"]
    got = queries.annotations_by_index(conn, b.version_id, defined_only=True)[idx]
    assert got["name"] == name and got["provenance"] == "human"
    conn.close()
