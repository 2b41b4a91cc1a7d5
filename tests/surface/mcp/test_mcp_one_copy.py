"""What a whole ``get_diff`` puts on the wire (issue 30: the SDK client's cost grows with the
square of an answer line): the answer once, as one compact text block, no
``structuredContent`` copy, even for a client that announces the newest protocol (structured
output); the JSON-RPC line is the text's JSON string and a few bytes around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.mcp.registry import as_json


def raw_lines(db: Path, requests: list[dict]) -> list[bytes]:
    """The answer lines of a `kbtool mcp` process to ``requests``, as bytes on its stdout."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    wanted = sum(1 for r in requests if "id" in r)
    try:
        proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(wanted)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    return lines


@pytest.mark.parametrize("protocol", ["2024-11-05", "2025-06-18"])
def test_a_whole_diff_is_sent_once_compact(demo_kb_master, protocol):
    conn = open_ro(demo_kb_master)
    vids = [v["id"] for v in queries.list_versions(conn)]
    conn.close()
    a, b = vids[0], vids[-1]
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_diff", "arguments": {"from_version_id": a, "to_version_id": b}},
        },
    ]
    line = next(x for x in raw_lines(demo_kb_master, requests) if b'"id":2' in x[:64])
    reply = json.loads(line)
    result = reply["result"]
    assert "structuredContent" not in result and result.get("isError") is False
    assert [c["type"] for c in result["content"]] == ["text"]
    text = result["content"][0]["text"]
    report = json.loads(text)
    assert len(report["changes"]) > 10
    assert text == as_json(report)  # compact: no indentation, no spaces after separators
    # one copy: the line is the text as a JSON string (every quote escaped) and the envelope
    assert len(line) <= len(json.dumps(text, ensure_ascii=False).encode()) + 200
