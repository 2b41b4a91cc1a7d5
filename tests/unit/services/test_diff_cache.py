"""The in-process diff cache: a second request is served from memory, a gate write invalidates."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DIFF_CACHE, DiffCache
from kbtool.services.diff.report import compute_diff, delete_diff, save_diff
from kbtool.services.diff.view import cached_view
from tests.support.diff_kb import two_versions_kb


@pytest.fixture()
def kb(tmp_path: Path) -> Path:
    return two_versions_kb(tmp_path)


def _some_sid(db: Path) -> str:
    conn = open_ro(db)
    try:
        return queries.list_functions(conn, 2)[0]["stable_id"]
    finally:
        conn.close()


def test_second_request_is_served_from_memory_and_a_gate_write_invalidates(kb):
    cache = DiffCache()
    conn = open_ro(kb)
    # (2, 1) is not an ingest pair: nothing stored, so it is computed
    first = cache.report(conn, 2, 1)
    assert (cache.computed, cache.loaded, cache.hits) == (1, 0, 0)
    assert first["stored"] is False
    again = cache.report(conn, 2, 1)
    assert again is first and (cache.computed, cache.hits) == (1, 1)
    # the changelog came with the computed report: no second pass over the facts
    cl = cache.changelog(conn, 2, 1)
    assert cache.changelogs == 0 and cache.computed == 1
    assert any("offset 356 -> 348" in " ".join(m["items"]) for m in cl["modified"])
    # the cached answer is the computed one
    assert orjson.dumps(first) == orjson.dumps(compute_diff(conn, 2, 1))

    rw = open_rw(kb)
    decision = upsert_symbol(
        rw, _some_sid(kb), "renamed_after_caching", provenance="human", confidence=1.0, actor="test"
    )
    assert decision["written"]
    rw.close()
    after = cache.report(conn, 2, 1)
    # the kept pairing with today's names: the changelog read the renamed function
    assert cache.computed + cache.relabelled == 2 and after is not first
    assert orjson.dumps(after) == orjson.dumps(compute_diff(conn, 2, 1))
    assert "renamed_after_caching" in {c["name"] for c in after["changes"]}
    assert len(cache) == 2  # the stale report and changelog were dropped, the new ones kept
    conn.close()


def test_a_refused_gate_write_keeps_the_answer(kb):
    """A refused gate decision changes no annotation: the answer is still the right one."""
    cache = DiffCache()
    conn = open_ro(kb)
    cache.report(conn, 2, 1)
    rw = open_rw(kb)
    sid = _some_sid(kb)
    upsert_symbol(rw, sid, "human_name", provenance="human", confidence=1.0, actor="t")
    cache.report(conn, 2, 1)
    assert cache.computed + cache.relabelled == 2
    refused = upsert_symbol(rw, sid, "agent_guess", provenance="agent", confidence=0.3, actor="t")
    assert not refused["written"]
    rw.close()
    again = cache.report(conn, 2, 1)
    assert cache.computed + cache.relabelled == 2 and again == compute_diff(conn, 2, 1)
    conn.close()


def test_stored_reports_are_loaded_once_and_follow_save_and_delete(kb):
    cache = DiffCache()
    conn = open_ro(kb)
    stored = cache.report(conn, 1, 2)  # ingest stored this pair
    assert stored["stored"] is True and (cache.loaded, cache.computed) == (1, 0)
    assert cache.report(conn, 1, 2) is stored and cache.hits == 1
    cl = cache.changelog(conn, 1, 2)  # a stored report: its changelog is built once
    assert cache.changelog(conn, 1, 2) is cl and cache.changelogs == 1
    rw = open_rw(kb)
    delete_diff(rw, 1, 2)
    computed = cache.report(conn, 1, 2)
    assert computed["stored"] is False and cache.computed == 1
    save_diff(rw, computed)
    rw.close()
    # read again: from the KB, or from its answer kept on disk (same stamp: frozen time)
    assert cache.report(conn, 1, 2)["stored"] is True and cache.loaded + cache.disk_hits == 2
    conn.close()


def test_a_kb_replaced_at_the_same_path_is_another_kb(kb, tmp_path):
    other = tmp_path / "other.db"
    shutil.copyfile(kb, other)
    sid = _some_sid(kb)
    for path, name in ((kb, "named_here"), (other, "named_elsewhere")):
        rw = open_rw(path)  # one decision each: the same ids and the same change token
        upsert_symbol(rw, sid, name, provenance="human", confidence=1.0, actor="t")
        rw.close()
    cache = DiffCache()
    conn = open_ro(kb)
    token = queries.change_token(conn)
    first = cache.report(conn, 1, 2)
    conn.close()
    other.replace(kb)  # the same path now holds another file
    conn = open_ro(kb)
    assert queries.change_token(conn) == token
    again = cache.report(conn, 1, 2)
    conn.close()
    assert again is not first and cache.loaded == 2
    assert "named_elsewhere" in orjson.dumps(again).decode()


def test_bounded_by_entries():
    cache = DiffCache(max_entries=2)
    for i in range(5):
        cache._put(("db", i, i + 1, "report", (1, 1), None), {"changes": [{}] * 3})
    assert len(cache) == 2
    big = DiffCache(max_entries=10, max_changes=5)
    big._put(("db", 1, 2, "report", (1, 1), None), {"changes": [{}] * 4})
    big._put(("db", 2, 3, "report", (1, 1), None), {"changes": [{}] * 4})
    assert len(big) == 1  # the older one made room


def test_cached_view_is_the_view_the_tui_shows(kb):
    conn = open_ro(kb)
    cache = DiffCache()
    v = cached_view(conn, 2, 1, cache=cache)
    assert v["report"]["summary"]["modified"] >= 1 and v["changelog"]["modified"]
    assert v["toolchain_changed"] is False
    cached_view(conn, 2, 1, cache=cache)
    assert cache.computed == 1
    conn.close()


def test_web_route_uses_the_process_cache(kb):
    from kbtool.web.router import route

    DIFF_CACHE.clear()
    before = DIFF_CACHE.computed
    s1, _, b1 = route(str(kb), "/api/diff", {"from": ["2"], "to": ["1"]})
    s2, _, b2 = route(str(kb), "/api/diff", {"from": ["2"], "to": ["1"]})
    s3, _, b3 = route(str(kb), "/api/changelog", {"from": ["2"], "to": ["1"]})
    assert (s1, s2, s3) == (200, 200, 200) and b1 == b2
    assert DIFF_CACHE.computed == before + 1
    assert orjson.loads(b3)["modified"]
