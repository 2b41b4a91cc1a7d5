"""The diff screen's kept head, read on the UI thread before the screen's first frame (issue 30):
its key's stamp is read without the report's text (its byte size from the row's header, not
``length(report)`` over 5 MB) and still moves whenever the stored report does, so a head made
from an older report is never shown for a newer one; a new process takes a head kept at
today's change token without reading both versions' annotations, and one kept at an older
token only when the annotations' fingerprint says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbtool.kb import queries, store
from kbtool.kb.db import open_ro, open_rw, transaction
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff import cache as cache_module
from kbtool.services.diff import head as head_module
from kbtool.services.diff.cache import DiffCache
from kbtool.services.diff.disk import DiskAnswers
from kbtool.services.diff.head import head_key, keep_head, read_head
from kbtool.services.diff.report import compute_diff, get_diff, save_diff


@pytest.fixture
def kb(tui_kb: Path) -> Path:
    """A private copy of the seeded TUI KB with the pair 1 -> 2's report stored."""
    conn = open_rw(tui_kb)
    try:
        save_diff(conn, compute_diff(conn, 1, 2))
    finally:
        conn.close()
    return tui_kb


def _cache(tmp_path: Path) -> DiffCache:
    return DiffCache(disk=DiskAnswers(tmp_path / "diffs"))


def _resave(kb: Path, edit) -> None:
    """The pair 1 -> 2's stored report saved again as ``edit`` makes it (its JSON text)."""
    conn = open_rw(kb)
    try:
        text = conn.execute(
            "SELECT report FROM diffs WHERE from_version_id = 1 AND to_version_id = 2"
        ).fetchone()[0]
        with transaction(conn):
            conn.execute(
                "UPDATE diffs SET report = ? WHERE from_version_id = 1 AND to_version_id = 2",
                (edit(text),),
            )
    finally:
        conn.close()


def _accented(text: str) -> str:
    """The first name's first letter as an accented one (one character, two bytes)."""
    at = text.index('"name":"') + len('"name":"')
    assert text[at].isascii() and text[at].isalpha()
    return text[:at] + "\u00e9" + text[at + 1 :]


def _key(kb: Path, tmp_path: Path) -> tuple:
    conn = open_ro(kb)
    try:
        return _cache(tmp_path)._key(conn, 1, 2, "report")
    finally:
        conn.close()


def test_the_stamp_is_the_reports_created_at_and_byte_size(kb):
    conn = open_ro(kb)
    try:
        created, size = conn.execute(
            "SELECT created_at, length(CAST(report AS BLOB)) FROM diffs"
            " WHERE from_version_id = 1 AND to_version_id = 2"
        ).fetchone()
        assert queries.stored_diff_stamp(conn, 1, 2) == (created, size)
        assert queries.stored_diff_stamp(conn, 2, 1) is None  # not stored
    finally:
        conn.close()


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda t: t[:-1] + ', "extra": 1}', id="longer"),
        pytest.param(_accented, id="same-length-in-characters"),
    ],
)
def test_a_report_saved_again_moves_the_heads_key(kb, tmp_path, edit):
    """Tests pin the clock: ``created_at`` stays, so the size alone must move the key (an
    accented letter for a plain one keeps the length in characters: its bytes move)."""
    before = _key(kb, tmp_path)
    conn = open_ro(kb)
    try:
        get_diff(conn, 1, 2)  # triage the stored report once (kept on disk)
        cache = _cache(tmp_path)
        cache.report(conn, 1, 2)
        assert keep_head(cache, conn, 1, 2)
        assert read_head(_cache(tmp_path), conn, 1, 2) is not None
    finally:
        conn.close()
    _resave(kb, edit)
    after = _key(kb, tmp_path)
    assert after != before
    conn = open_ro(kb)
    try:
        assert read_head(_cache(tmp_path), conn, 1, 2) is None  # the old head is not shown
    finally:
        conn.close()


def test_a_same_size_report_saved_later_moves_the_key(kb, tmp_path, monkeypatch):
    """Same byte size, another ``created_at`` (``save_diff_report``'s clock): another key."""
    before = _key(kb, tmp_path)
    conn = open_rw(kb)
    try:
        report = queries.stored_diff_report(conn, 1, 2)
        monkeypatch.setenv("KBTOOL_FROZEN_TIME", "2027-02-03T04:05:06.000007Z")
        with transaction(conn):
            store.save_diff_report(conn, 1, 2, report)
        size = conn.execute(
            "SELECT length(CAST(report AS BLOB)) FROM diffs"
            " WHERE from_version_id = 1 AND to_version_id = 2"
        ).fetchone()[0]
    finally:
        conn.close()
    assert size == before[5][1]  # the same report text again
    assert _key(kb, tmp_path) != before


def test_a_deleted_report_has_no_stamp(kb):
    conn = open_rw(kb)
    try:
        with transaction(conn):
            store.delete_diff_report(conn, 1, 2)
        assert queries.stored_diff_stamp(conn, 1, 2) is None
    finally:
        conn.close()


def _kept(kb: Path, tmp_path: Path) -> dict:
    """The pair's head kept by one process (its whole report read first)."""
    conn = open_ro(kb)
    try:
        get_diff(conn, 1, 2)
        cache = _cache(tmp_path)
        cache.report(conn, 1, 2)
        assert keep_head(cache, conn, 1, 2)
        return cache.disk.get(
            head_key(cache._key(conn, 1, 2, "report")), cache_module._modules(conn, 1, 2)
        )
    finally:
        conn.close()


def _read_cold(kb: Path, tmp_path: Path) -> dict | None:
    """``read_head`` of a new process (a new cache: no annotations read in it)."""
    conn = open_ro(kb)
    try:
        return read_head(_cache(tmp_path), conn, 1, 2)
    finally:
        conn.close()


def _no_annotations(monkeypatch) -> None:
    def refuse(*_a):
        raise AssertionError("the two versions' annotations were read")

    monkeypatch.setattr(cache_module, "_annotation_state", refuse)


def test_a_new_process_takes_the_head_kept_at_todays_token_without_the_annotations(
    kb, tmp_path, monkeypatch
):
    kept = _kept(kb, tmp_path)
    conn = open_ro(kb)
    try:
        assert kept["token"] == list(queries.change_token(conn))
    finally:
        conn.close()
    _no_annotations(monkeypatch)
    assert _read_cold(kb, tmp_path) == kept


def test_a_rename_of_the_pair_misses_the_head_kept_at_an_older_token(kb, tmp_path):
    _kept(kb, tmp_path)
    conn = open_rw(kb)
    try:
        sid = queries.list_functions(conn, 2)[0]["stable_id"]
        upsert_symbol(
            conn, sid, "renamed_after_the_head", provenance="human", confidence=1.0, actor="t"
        )
    finally:
        conn.close()
    assert _read_cold(kb, tmp_path) is None


def test_a_head_kept_at_an_older_token_is_read_by_its_annotations_then_kept_again(
    kb, tmp_path, monkeypatch
):
    """The token moved (here: the kept head's made older) but not the pair's annotations:
    the fingerprint says the head is today's; keep_head keeps it again with today's token,
    and the next new process takes it without the annotations."""
    kept = _kept(kb, tmp_path)
    conn = open_ro(kb)
    try:
        cache = _cache(tmp_path)
        key = cache._key(conn, 1, 2, "report")
        modules = cache_module._modules(conn, 1, 2)
        cache.disk.put(head_key(key), modules, dict(kept, token=[0, 0, 0]))
    finally:
        conn.close()
    head_module._KNOWN.clear()  # what the process that kept it knows
    assert _read_cold(kb, tmp_path) == dict(kept, token=[0, 0, 0])
    conn = open_ro(kb)
    try:
        cache = _cache(tmp_path)
        cache.report(conn, 1, 2)
        assert keep_head(cache, conn, 1, 2)  # kept again, today's token
        assert not keep_head(cache, conn, 1, 2)
    finally:
        conn.close()
    _no_annotations(monkeypatch)
    assert _read_cold(kb, tmp_path) == kept
