"""`kbtool diff` / `kbtool ui diff` keep a computed pair (issue 30): the next process reads it
back from disk instead of running the matcher, a rename shows at once (the annotations are
joined in when read) and a saved report (its stamp) is never answered from an old file. Real subprocesses, real KB."""

from __future__ import annotations

from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from tests.support.cli import run_cli
from tests.support.diff_kb import two_versions_kb


def _kbtool(kb: Path, disk: Path | str, *args: str) -> str:
    res = run_cli(*args, env={"KBTOOL_DB": str(kb), "KBTOOL_DIFF_CACHE_DIR": str(disk)})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _files(disk: Path) -> set[str]:
    return {p.name for p in disk.glob("*.json")} if disk.is_dir() else set()


def test_an_unstored_pair_is_computed_once_and_read_back(tmp_path: Path) -> None:
    kb, disk = two_versions_kb(tmp_path), tmp_path / "diffs"
    first = _kbtool(kb, disk, "diff", "2", "1")  # (2, 1) is not an ingest pair: computed
    kept = _files(disk)
    # the report, its changelog, the annotations they were built from, the entries' state
    assert len(kept) == 4
    stamps = {p.name: (p.stat().st_ino, p.read_bytes()) for p in disk.glob("*.json")}
    again = _kbtool(kb, disk, "diff", "2", "1")
    assert again == first == _kbtool(kb, "off", "diff", "2", "1")
    assert {
        p.name: (p.stat().st_ino, p.read_bytes()) for p in disk.glob("*.json")
    } == stamps  # only read (a rewrite is a new file: os.replace)
    # the short view, the JSON and another order come from the same answers
    assert _kbtool(kb, disk, "ui", "diff", "2", "1") == _kbtool(kb, "off", "ui", "diff", "2", "1")
    assert _kbtool(kb, disk, "diff", "2", "1", "--json") == _kbtool(
        kb, "off", "diff", "2", "1", "--json"
    )
    assert _kbtool(kb, disk, "diff", "2", "1", "--order", "index") == _kbtool(
        kb, "off", "diff", "2", "1", "--order", "index"
    )
    assert _files(disk) == kept


def test_a_rename_is_never_answered_from_an_old_file(tmp_path: Path) -> None:
    kb, disk = two_versions_kb(tmp_path), tmp_path / "diffs"
    before = _kbtool(kb, disk, "diff", "2", "1", "--json")
    conn = open_rw(kb)
    sid = queries.list_functions(conn, 1)[0]["stable_id"]
    decision = upsert_symbol(
        conn, sid, "parse_header_checked", provenance="human", confidence=1.0, actor="test"
    )
    conn.close()
    assert decision["written"]
    after = _kbtool(kb, disk, "diff", "2", "1", "--json")
    assert "parse_header_checked" in after and "parse_header_checked" not in before
    assert after == _kbtool(kb, "off", "diff", "2", "1", "--json")  # as computed afresh
    assert len(_files(disk)) == 4  # kept by content: the rename is joined in when read
