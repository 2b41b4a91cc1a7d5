"""The whole ``get_diff`` of a new ``kbtool mcp`` is the answer kept encoded beside the kept
report (issue 30): the same text as encoding the report, and a rename through the gate is
shown at once by a running server and by a new one (the kept text is missed and kept again
under the new names)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from kbtool.kb import gate
from kbtool.kb.db import open_ro, open_rw
from kbtool.mcp import server
from kbtool.services import json_answer
from kbtool.services.diff import answer
from kbtool.services.diff import cache as diff_cache
from kbtool.services.diff.cache import DiffCache, DiskAnswers, _modules, disk_dir
from tests.support.diff_kb import two_versions_kb
from tests.support.mcp import server_env, text_of
from tests.support.paths import ROOT


def _reference(db, a: int, b: int) -> str:
    conn = open_ro(db)
    try:
        return json_answer.as_json(DiffCache(disk=DiskAnswers(None)).report(conn, a, b))
    finally:
        conn.close()


def _kept_header(db, a: int, b: int) -> tuple[dict, str]:
    """The kept answer file's header, and the annotations fingerprint of today's key."""
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk_dir()))
        key = cache._key(conn, a, b, "report")
        path = cache.disk._path(answer.text_key(key, json_answer.form()), _modules(conn, a, b))
        return json.loads(path.read_bytes().partition(b"\n")[0]), key[6]
    finally:
        conn.close()


def _prepare(db) -> None:
    subprocess.run(
        [sys.executable, "-m", "kbtool.services.diff.warm", "--db", str(db)], check=True, cwd=ROOT
    )


@asynccontextmanager
async def mcp_session(db):
    """A real ``kbtool mcp`` on ``db`` that keeps its answers where this test run does."""
    env = server_env(**{k: v for k, v in os.environ.items() if k.startswith("KBTOOL_")})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kbtool.cli", "mcp", "--db", str(db)], env=env
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def _rename(db, stable_id: str, name: str) -> None:
    conn = open_rw(db)
    try:
        gate.human_rename(conn, stable_id, name, actor="test")
        conn.commit()
    finally:
        conn.close()


def test_a_new_server_answers_from_the_kept_text_and_a_rename_is_never_stale(tmp_path):
    db = two_versions_kb(tmp_path)
    _prepare(db)
    header, today = _kept_header(db, 2, 1)
    assert header["annotations"] == today

    async def whole(session) -> str:
        return text_of(
            await session.call_tool("get_diff", {"from_version_id": 2, "to_version_id": 1})
        )

    async def run() -> tuple[str, str, str, str]:
        async with mcp_session(db) as session:
            before = await whole(session)
            target = next(c for c in json.loads(before)["changes"] if c["to_stable_id"])
            _rename(db, target["to_stable_id"], "renamed_while_served")
            after = await whole(session)
        async with mcp_session(db) as session:
            fresh = await whole(session)
        return before, after, fresh, target["to_stable_id"]

    before, after, fresh, sid = asyncio.run(run())
    assert before != after
    assert after == fresh == _reference(db, 2, 1)
    names = {c["to_stable_id"]: c["name"] for c in json.loads(fresh)["changes"]}
    assert names[sid] == "renamed_while_served"
    header, today = _kept_header(db, 2, 1)
    assert header["annotations"] == today  # kept again under the new names


def test_the_tool_writes_the_kept_text_without_reading_the_report(tmp_path, monkeypatch):
    db = two_versions_kb(tmp_path)
    _prepare(db)
    fresh = DiffCache(disk=DiskAnswers(disk_dir()), background=True)
    monkeypatch.setattr(diff_cache, "DIFF_CACHE", fresh)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    for a, b in ((1, 2), (2, 1)):
        assert spec.fn(from_version_id=a, to_version_id=b) == _reference(db, a, b)
    assert (fresh.texts_read, fresh.loaded, fresh.computed, fresh.disk_hits) == (2, 0, 0, 0)
    page = json.loads(spec.fn(from_version_id=2, to_version_id=1, limit=1))
    assert len(page["changes"]) == 1 and fresh.disk_hits == 1  # a page reads the report


def test_after_a_whole_answer_the_report_is_read_once_quiet(tmp_path, monkeypatch):
    from kbtool.mcp import idle

    db = two_versions_kb(tmp_path)
    _prepare(db)
    act = idle.Activity()
    monkeypatch.setattr(idle, "ACTIVITY", act)
    monkeypatch.setattr(idle, "when_quiet", act.when_quiet)
    monkeypatch.setattr(idle, "QUIET", 0.01)
    fresh = DiffCache(disk=DiskAnswers(disk_dir()), background=True)
    monkeypatch.setattr(diff_cache, "DIFF_CACHE", fresh)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    tool = server._reads_report_after(spec.fn, db)
    act.set_in_flight(1)  # the get_diff request, being served
    assert tool(from_version_id=1, to_version_id=2) == _reference(db, 1, 2)
    assert fresh.disk_hits == 0 and act.pending() == 1  # the answer went out without it
    act.set_in_flight(0)
    done = threading.Event()
    act.when_quiet("probe", done.set)  # runs after the report's read (one thread)
    assert done.wait(60.0)
    assert fresh.disk_hits == 1  # the kept stored report, read in the background
    tool(from_version_id=1, to_version_id=2, limit=5)
    assert fresh.disk_hits == 1 and fresh.hits >= 1  # the page: from memory
    tool(from_version_id=1, to_version_id=2, limit=5)  # a page: nothing asked in background
    assert act.pending() == 0
