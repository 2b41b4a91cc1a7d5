"""Issue 24: the matcher's work grows about linearly with functions on any input.

The crafted look-alike family (``benchmarks.crafted.matcher_family``: F functions of one
signature calling each other; the next release shifts the calls of every other function and
edits every third) made the similarity round's rival scan quadratic. The matcher counts its
comparisons per stage (:class:`kbtool.identity.matcher.MatchStats`); these tests assert on
that count, never on wall-clock time, and on the note a stage stopped at its budget leaves
in the ingest report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.crafted import matcher_family, normal_release
from kbtool.cli import main
from kbtool.identity.records import records_from_analysis
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_bytes
from kbtool.wasm import analyze_module
from tests.support.matcher import pure_matcher, pure_part

# the pure package's parts: these tests patch or subclass them
MatchStats = pure_part().MatchStats
match_functions = pure_part().match_functions
match_functions_staged = pure_part().match_functions_staged
MatcherBase = pure_part("base").MatcherBase


@pytest.fixture(autouse=True)
def _pure_matcher():
    """These tests patch or subclass the matcher's internals: they run the pure package
    (``tests.support.matcher``), whichever the default is."""
    with pure_matcher():
        yield


def _records(data: bytes):
    return records_from_analysis(analyze_module(data))


def _work(count: int, gen=matcher_family) -> MatchStats:
    stats: list[MatchStats] = []
    match_functions(_records(gen(count, 0)), _records(gen(count, 1)), stats=stats)
    return stats[0]


def test_crafted_family_modules_are_what_the_issue_describes():
    old, new = _records(matcher_family(60, 0)), _records(matcher_family(60, 1))
    assert {r.type_sig for r in old + new} == {"() -> ()"}
    same = sum(1 for a, b in zip(old, new, strict=True) if a.body_hash == b.body_hash)
    assert same == 20  # i % 6 in {2, 4}: neither shifted nor edited
    assert len({r.shape_hash for r in old}) == 1 and len({r.shape_hash for r in new}) == 2
    assert all(len(r.calls) == 5 for r in old)


def _hub_family(count: int, release: int = 0) -> bytes:
    return matcher_family(count, release, hub=True)


@pytest.mark.parametrize("gen", [matcher_family, _hub_family], ids=["family", "hub"])
def test_matcher_work_grows_linearly_on_the_crafted_family(gen):
    small, big = _work(400, gen), _work(800, gen)
    assert small.notes == [] and big.notes == []  # the real work, not a budget cut
    assert big.total <= 2.5 * small.total, (small.work, big.work)
    # every stage, not only the total
    for stage, w in big.work.items():
        assert w <= 2.5 * small.work[stage] + 1000, (stage, small.work, big.work)


def test_matcher_work_per_function_is_bounded_on_both_kinds_of_release():
    for gen in (matcher_family, normal_release):
        st = _work(600, gen)
        assert st.total <= 400 * st.functions, (gen.__name__, st.work)


def test_crafted_family_is_still_paired():
    old, new = _records(matcher_family(300, 0)), _records(matcher_family(300, 1))
    exact, full = match_functions_staged(old, new)
    assert len(full) >= 290  # the bounded stages still pair (nearly) the whole family
    # nothing tells the look-alikes apart: most pairs wait for review
    assert sum(m.review for m in full) >= 0.9 * len(full)


def test_a_tiny_budget_stops_the_stage_with_a_note(monkeypatch):
    monkeypatch.setattr(MatcherBase, "BUDGET_PER_FUNCTION", 0)
    monkeypatch.setattr(MatcherBase, "BUDGET_BASE", 50)
    st = _work(200)
    assert st.notes, st.work
    note = st.notes[0]
    assert note.startswith("matcher: ") and "stage stopped at its work budget after" in note
    assert f"{st.left_unmatched:,} functions left unmatched" in note
    # a stage stops within one step (one neighbourhood, one candidate list) of its budget
    for stage in ("callgraph", "similarity"):
        assert st.work[stage] <= st.budget[stage] + 1000


def test_ingest_report_prints_the_budget_note(monkeypatch, tmp_path: Path, capsys):
    a, b = tmp_path / "a.wasm", tmp_path / "b.wasm"
    a.write_bytes(matcher_family(200, 0))
    b.write_bytes(matcher_family(200, 1))
    db = tmp_path / "kb.db"
    monkeypatch.setattr(MatcherBase, "BUDGET_PER_FUNCTION", 0)
    monkeypatch.setattr(MatcherBase, "BUDGET_BASE", 50)
    assert main(["--db", str(db), "ingest", str(a), "--program", "crafted"]) in (0, None)
    capsys.readouterr()
    assert main(["--db", str(db), "ingest", str(b), "--program", "crafted"]) in (0, None)
    out = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "note: matcher: similarity stage stopped at its work budget after" in out, out
    assert "functions left unmatched" in out


def test_no_note_on_a_normal_release(tmp_path: Path):
    conn = open_rw(tmp_path / "kb.db")
    ingest_bytes(conn, normal_release(300, 0), label="v1", program="p")
    res = ingest_bytes(conn, normal_release(300, 1), label="v2", program="p")
    assert res.parent_version_id is not None
    assert res.matcher_notes == []
    assert res.carried >= 280


@pytest.mark.parametrize("count", [1, 2, 7])
def test_tiny_families_do_not_break_the_matcher(count: int):
    st = _work(count)
    assert st.notes == []


def test_oracle_match_reports_the_budget_note(monkeypatch, tmp_path: Path):
    from kbtool.services.oracle import add_oracle, match_oracle

    conn = open_rw(tmp_path / "kb.db")
    res = ingest_bytes(conn, matcher_family(150, 1), label="v2", program="p")
    ref = tmp_path / "ref.wasm"
    ref.write_bytes(matcher_family(150, 0, named=True))
    add_oracle(conn, ref, label="ref")
    full = match_oracle(conn, res.version_id)
    assert "notes" not in full["oracles"][0]  # the normal budget is far away
    monkeypatch.setattr(MatcherBase, "BUDGET_PER_FUNCTION", 0)
    monkeypatch.setattr(MatcherBase, "BUDGET_BASE", 50)
    cut = match_oracle(conn, res.version_id)
    notes = cut["oracles"][0]["notes"]
    assert notes and "stopped at its work budget" in notes[0]


def test_crafted_benchmark_prints_the_growth_curve(capsys):
    import re

    from benchmarks import crafted

    assert crafted.main(["--smoke", "--only", "matcher"]) == 0
    out = capsys.readouterr().out
    num = r"\d[\d,]*(?:\.\d+)?"
    for count in crafted.SMOKE_SIZES:
        # functions, then KB / ingest s / cpu s / work per function / peak MiB of each release
        row = rf"^ +{count}" + rf" +{num}" * 10 + r" +-$"
        assert re.search(row, out, re.M), out
    assert re.search(rf"oracle match at 100 functions \(family\): {num} s", out), out
