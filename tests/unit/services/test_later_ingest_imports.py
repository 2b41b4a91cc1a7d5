"""A later ingest stores its diff report without triage: it imports neither the changelog's
modules nor the pure decoder's token reader beside the active one (session 29 T); what
reads them still gets them (``report.changelog``, ``report.TRIAGE_RULES``, the pure reader
for a buffer that is not ``bytes``)."""

from __future__ import annotations

from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.diff import report
from kbtool.services.diff.triage import TRIAGE_RULES
from kbtool.services.ingest import ingest_file
from tests.support.fresh_imports import modules_after
from tests.support.paths import DEMO_WASM

LATER = DEMO_WASM.with_name("zstd-1.5.6.wasm")


def test_later_ingest_imports_no_changelog_nor_a_second_token_reader(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    loaded = modules_after(
        "from kbtool.cli import main\n"
        f"assert main(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}]) == 0\n"
        f"assert main(['--db', {db!r}, 'ingest', {str(LATER)!r}]) == 0\n"
        "from kbtool.wasm.active import IMPL\n"
        "print(IMPL.__name__)"
    )
    assert "kbtool.services.diff.report" in loaded  # (a later ingest: its report stored)
    assert "kbtool.services.diff.relocation" in loaded
    for name in ("changelog", "triage", "explain", "align"):
        assert f"kbtool.services.diff.{name}" not in loaded, name
    if "kbtool.wasm._cdecoder" in loaded:  # (the compiled reader is the active one)
        assert "kbtool.wasm.decoder.tokens" not in loaded
        assert "kbtool.wasm.decoder.compare" not in loaded


def test_stored_report_is_pending_and_readers_triage_it(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "kb.db")
    try:
        ingest_file(conn, DEMO_WASM)
        ingest_file(conn, LATER)
        stored = conn.execute("SELECT report FROM diffs").fetchone()[0]
        assert '"triage_rules": 0' in stored.replace(":0", ": 0")  # ingest: no triage
        keep: dict = {}
        got = report.stored_diff(conn, 1, 2, keep=keep)
        assert got is not None and "changelog" in keep  # triaged on read, as before
        assert any("triage" in c for c in got["changes"] if c["classification"] == "modified")
        # a report saved without a rules number gets today's
        report.save_diff(conn, report.compute_diff(conn, 1, 2))
        row = queries.stored_diff_report(conn, 1, 2)
        assert row is not None and row["triage_rules"] == TRIAGE_RULES
    finally:
        conn.close()


def test_changelog_and_rules_by_attribute_and_a_timer_set_there_is_called(
    tmp_path: Path, monkeypatch
) -> None:
    from kbtool.services.diff.changelog import changelog

    assert report.changelog is changelog
    assert report.TRIAGE_RULES == TRIAGE_RULES
    calls: list[int] = []

    def timed(*a, **k):
        calls.append(1)
        return changelog(*a, **k)

    monkeypatch.setattr(report, "changelog", timed)
    conn = open_rw(tmp_path / "kb.db")
    try:
        ingest_file(conn, DEMO_WASM)
        ingest_file(conn, LATER)
        report.compute_diff(conn, 1, 2)
    finally:
        conn.close()
    assert calls == [1]


def _version_annotations_as_before(conn, version_id: int) -> dict:
    """The report's annotations as computed before session 29: every evidence parsed."""
    from kbtool.analysis.runtime import is_runtime_label

    out = {}
    for idx, a in queries.annotations_by_index(conn, version_id, with_evidence=True).items():
        rt = a["provenance"] == "oracle" and any(
            isinstance(item, dict) and (item.get("runtime") or is_runtime_label(item.get("oracle")))
            for item in (a["evidence"] if isinstance(a["evidence"], list) else [])
        )
        out[idx] = {
            "name": a["name"],
            "provenance": a["provenance"],
            "confidence": a["confidence"],
            "runtime_oracle": rt,
        }
    return out


def test_report_annotations_read_only_an_oracles_evidence(tmp_path: Path) -> None:
    from kbtool.kb.gate import upsert_symbol
    from kbtool.services.diff.rejoin import version_annotations

    conn = open_rw(tmp_path / "kb.db")
    try:
        ingest_file(conn, DEMO_WASM)
        rows = [r for r in queries.function_identities(conn, 1) if not r[2]][:6]
        evidences = [
            {"oracle": "musl", "runtime": True},
            {"oracle": "application"},
            {"oracle": "wasi-libc"},
            None,
            {"runtime": True},  # (not an oracle's: never looked at)
            {"source": "x"},
        ]
        provs = ["oracle", "oracle", "oracle", "oracle", "agent", "export"]
        for r, ev, prov in zip(rows, evidences, provs, strict=True):
            d = upsert_symbol(
                conn,
                r[1],
                f"fn_{r[0]}",
                provenance=prov,
                confidence=0.9,
                actor="test",
                evidence=ev,
                version_id=1,
            )
            assert d["written"], d
        conn.execute(  # an oracle's evidence that is not JSON reads as none
            "UPDATE symbols SET evidence = '{' WHERE stable_id = ?", (rows[3][1],)
        )
        got = version_annotations(conn, 1)
        assert got == _version_annotations_as_before(conn, 1)
        assert list(got) == list(_version_annotations_as_before(conn, 1))
        flagged = {i for i, a in got.items() if a["runtime_oracle"]}
        assert rows[0][0] in flagged and rows[4][0] not in flagged
    finally:
        conn.close()


def _function_names_as_before(conn, version_id: int) -> dict[int, str]:
    out: dict[int, str] = {}
    for idx, imported, field, raw, name in conn.execute(
        "SELECT f.idx, f.imported, f.import_field, f.raw_name, s.name FROM functions f"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id WHERE f.version_id = ?",
        (version_id,),
    ):
        best = name or (field if imported else None) or raw
        if best:
            out[idx] = best
    return out


def test_function_names_choose_as_before(tmp_path: Path) -> None:
    from kbtool.kb.gate import upsert_symbol

    conn = open_rw(tmp_path / "kb.db")
    try:
        ingest_file(conn, DEMO_WASM)
        ids = queries.function_identities(conn, 1)
        imports = [r for r in ids if r[2]]
        defined = [r for r in ids if not r[2]]
        assert imports and len(defined) > 8
        # an annotation over a raw name, an import and a plain function
        for r in (defined[0], imports[0], defined[5]):
            upsert_symbol(
                conn, r[1], f"named_{r[0]}", provenance="agent", confidence=0.9, actor="t"
            )
        # edge cases no ingest makes (ids without an annotation, so the rows decide):
        # empty texts are no name, an import without a field falls to its raw name, a
        # defined function's import field is never its name
        edge = [
            (defined[1][0], "", None),
            (imports[-1][0], "raw_x", ""),
            (defined[2][0], None, "fld"),
            (defined[3][0], "raw_y", None),
        ]
        for idx, raw, fld in edge:
            conn.execute(
                "UPDATE functions SET stable_id = ?, raw_name = ?, import_field = ?"
                " WHERE version_id = 1 AND idx = ?",
                (f"test-no-symbol-{idx}", raw, fld, idx),
            )
        got = queries.function_names(conn, 1)
        want = _function_names_as_before(conn, 1)
        assert got == want and list(got) == list(want)
        assert got[defined[0][0]] == f"named_{defined[0][0]}"
        assert got[imports[-1][0]] == "raw_x" and got[defined[3][0]] == "raw_y"
        assert defined[1][0] not in got and defined[2][0] not in got
    finally:
        conn.close()
