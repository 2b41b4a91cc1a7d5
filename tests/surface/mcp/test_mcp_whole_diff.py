"""A whole ``get_diff`` answer (5.7 MB on ffmpeg) costs the server less (issue 30): asked again
it is not encoded again (the same report object, the same text) yet a rename is never shown
stale; and the stdio guard passes an answer line on as it arrives instead of after its end."""

from __future__ import annotations

import json
import os
import select

from kbtool.kb import gate
from kbtool.kb.db import open_rw
from kbtool.mcp import server, tools_core
from tests.support.diff_kb import two_versions_kb
from tests.support.stdio_guard import script_process

WAIT = 60.0  # a bound on waiting for a line (never reached when it works)


def test_a_whole_diff_asked_again_is_not_encoded_again_and_follows_renames(tmp_path, monkeypatch):
    db = two_versions_kb(tmp_path)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    encoded: list[int] = []
    real = tools_core.as_json

    def counting(value):
        encoded.append(1)
        return real(value)

    monkeypatch.setattr(tools_core, "as_json", counting)
    first = spec.fn(from_version_id=1, to_version_id=2)
    again = spec.fn(from_version_id=1, to_version_id=2)
    assert again == first and len(encoded) == 1
    assert json.loads(first)["changes"]

    target = next(c for c in json.loads(first)["changes"] if c["to_stable_id"])
    conn = open_rw(db)
    try:
        gate.human_rename(conn, target["to_stable_id"], "renamed_after_answer", actor="test")
        conn.commit()
    finally:
        conn.close()
    after = json.loads(spec.fn(from_version_id=1, to_version_id=2))
    names = {c["to_stable_id"]: c["name"] for c in after["changes"]}
    assert names[target["to_stable_id"]] == "renamed_after_answer"
    assert len(encoded) == 2


def test_pages_of_a_diff_sort_it_once_and_follow_renames(tmp_path, monkeypatch):
    """Pages of one report are sorted (triage order, the `only` filter) once, not per page;
    every page is a slice of that order; a rename (a new report) is sorted again and shown."""
    from kbtool.services.diff import triage

    db = two_versions_kb(tmp_path)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    sorts: list[int] = []
    real = triage.order_changes

    def counting(changes, order="triage"):
        sorts.append(1)
        return real(changes, order)

    monkeypatch.setattr(triage, "order_changes", counting)
    whole = json.loads(spec.fn(from_version_id=1, to_version_id=2, order="index"))
    sorts.clear()
    pages, offset = [], 0
    while offset is not None:
        page = json.loads(spec.fn(from_version_id=1, to_version_id=2, limit=1, offset=offset))
        pages += page["changes"]
        offset = page["page"]["next_offset"]
    assert len(pages) == len(whole["changes"]) > 1
    assert pages == real(whole["changes"], "triage") and len(sorts) == 1
    changed = json.loads(spec.fn(from_version_id=1, to_version_id=2, only=["changed"], limit=50))
    assert changed["changes"] == [
        c for c in pages if c["classification"] in ("modified", "new", "deleted")
    ]
    assert len(sorts) == 2  # another filter: its own rows

    target = next(c for c in pages if c["to_stable_id"])
    conn = open_rw(db)
    try:
        gate.human_rename(conn, target["to_stable_id"], "renamed_between_pages", actor="test")
        conn.commit()
    finally:
        conn.close()
    after = json.loads(spec.fn(from_version_id=1, to_version_id=2, limit=len(pages)))
    names = {c["to_stable_id"]: c["name"] for c in after["changes"]}
    assert names[target["to_stable_id"]] == "renamed_between_pages"
    assert len(sorts) == 3


_HALF_LINE_SERVER = r"""
import sys
from kbtool.mcp import linebound
with linebound.guarded_stdio():
    sys.stdin.readline()  # request 1
    sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"text":"' + "x" * 300000)
    sys.stdout.flush()
    sys.stdin.readline()  # request 2: the client saw the first part of answer 1
    sys.stdout.write('"}}\n')
    sys.stdout.write('{"jsonrpc":"2.0","id":2,"result":{}}\n')
    sys.stdout.flush()
"""


def _ping(proc, rid: int) -> None:
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode() + b"\n")
    proc.stdin.flush()


def test_the_guard_passes_a_long_answer_on_as_it_comes():
    proc = script_process(_HALF_LINE_SERVER)
    try:
        _ping(proc, 1)
        fd = proc.stdout.fileno()
        got = b""
        while len(got) < 300_000:  # the server has not ended the line yet
            ready, _, _ = select.select([fd], [], [], WAIT)
            assert ready, f"only {len(got)} bytes of the line's beginning came through"
            chunk = os.read(fd, 1 << 16)
            assert chunk
            got += chunk
        assert b"\n" not in got
        _ping(proc, 2)
        rest = proc.stdout.read()
        lines = (got + rest).splitlines()
        assert [json.loads(line)["id"] for line in lines] == [1, 2]
        assert len(json.loads(lines[0])["result"]["text"]) == 300_000
    finally:
        proc.stdin.close()
        proc.wait(timeout=WAIT)
