"""A big ASCII answer goes to the SDK as a stand-in and the stdio guard writes the answer in
its place (:mod:`kbtool.mcp.splice`): the line on the wire is byte for byte the one the SDK
writes itself, all ASCII for a big answer, and the same JSON value for the client."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcp import types

from kbtool.kb.db import open_rw
from kbtool.mcp import linebound, registry, server, splice
from kbtool.services.ingest import ingest_bytes
from tests.support.diff_kb import two_versions_kb

LABEL = "1.1-na\u00efve-\U0001d523"  # a version label with an astral character


def _sdk_line(text: str, rid: int = 7) -> bytes:
    """The line the SDK's server writes for a tool answering ``text`` (mcp 2.x, 1.x)."""
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    msg = types.JSONRPCResponse(jsonrpc="2.0", id=rid, result=data)
    return msg.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def test_the_literal_is_what_the_sdk_writes_for_an_ascii_text():
    value = {"label": LABEL, "all": "".join(map(chr, range(128))), "quote": '"\\'}
    text = registry.ascii_json(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    assert text.isascii() and "\\ud835\\udd23" in text
    line = _sdk_line(text)
    assert splice.literal(text) in line
    raw = "".join(map(chr, range(128))) * 3  # a plain-text answer: every control character
    assert splice.literal(raw) in _sdk_line(raw)


def _forward(parts: list[bytes]) -> tuple[bytes, list[bytes]]:
    """What :func:`linebound.forward_lines` writes for ``parts`` written one by one."""
    r, w = os.pipe()
    out, lines = io.BytesIO(), []

    def writer() -> None:
        for p in parts:
            os.write(w, p)
            time.sleep(0.05)  # each part is its own read
        os.close(w)

    t = threading.Thread(target=writer)
    t.start()
    linebound.forward_lines(r, out, threading.Lock(), lines.append, splice.splice)
    t.join()
    return out.getvalue(), lines


def test_the_guard_writes_the_answer_in_place_of_its_stand_in(monkeypatch):
    monkeypatch.setattr(splice, "SPLICE_FROM", 10)
    text = registry.ascii_json(json.dumps({"label": LABEL, "n": list(range(50))}))
    assert splice.stand_in(text) == text  # outside the guard: the answer itself
    monkeypatch.setattr(splice, "ACTIVE", threading.Event())
    splice.ACTIVE.set()
    token = splice.stand_in(text)
    assert token != text and token.isascii() and len(token) < 80
    short = _sdk_line(token)
    cut = short.index(token.encode()) + 9  # the stand-in split between two reads
    other = b'{"jsonrpc":"2.0","id":8,"result":{}}\n'
    long = b'{"x":"' + b"y" * (3 * linebound.CHUNK) + b'"}\n'
    wire, lines = _forward([short[:cut], short[cut:] + other[:5], other[5:], long])
    assert wire == _sdk_line(text) + other + long
    assert lines == [short, other, long]  # the guard's own bookkeeping sees the short line
    # spliced once: the same stand-in again (not ours any more) goes as it is
    assert _forward([short])[0] == short
    fake = _sdk_line(splice._MARK + "999999")
    assert _forward([fake])[0] == fake
    token = splice.stand_in(text)  # twice in one line (an SDK copying it): both replaced
    twice = b'{"a":"' + token.encode() + b'","b":"' + token.encode() + b'"}\n'
    lit = splice.literal(text)
    assert _forward([twice])[0] == b'{"a":' + lit + b',"b":' + lit + b"}\n"


def _answer_line(db: Path, **env: str) -> bytes:
    """The line a real ``kbtool mcp`` writes for a whole ``get_diff`` 1 -> 3."""
    init = {"protocolVersion": "2024-11-05", "capabilities": {}}
    init["clientInfo"] = {"name": "test", "version": "1"}
    call = {"name": "get_diff", "arguments": {"from_version_id": 1, "to_version_id": 3}}
    msgs = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(db)],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in msgs),
        capture_output=True,
        env={**os.environ, "KBTOOL_MCP_ASCII_FROM": "64", **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    line = proc.stdout.splitlines(keepends=True)[1]
    assert json.loads(line)["id"] == 1
    return line


def test_a_whole_diff_line_is_the_same_bytes_spliced_or_not(tmp_path, monkeypatch):
    db = two_versions_kb(tmp_path)  # 1.0 -> 1.1, and 1.1 again as LABEL (version 3)
    conn = open_rw(db)
    try:
        ingest_bytes(conn, (tmp_path / "m.wasm").read_bytes(), label=LABEL, force=True)
    finally:
        conn.close()
    monkeypatch.setenv("KBTOOL_MCP_ASCII_FROM", "64")
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    expected = json.loads(spec.fn(from_version_id=1, to_version_id=3))
    assert expected["to"] == LABEL

    spliced = _answer_line(db, KBTOOL_MCP_SPLICE_FROM="64")
    assert spliced.isascii() and b"kbtool-splice" not in spliced
    assert json.loads(json.loads(spliced)["result"]["content"][0]["text"]) == expected
    assert spliced == _answer_line(db, KBTOOL_MCP_SPLICE_FROM=str(1 << 40))


def test_a_kept_whole_diff_goes_out_from_its_literal_never_decoded(tmp_path, monkeypatch):
    from kbtool.kb.db import open_ro
    from kbtool.services import json_answer
    from kbtool.services.diff.cache import DiffCache, DiskAnswers, disk_dir

    db = two_versions_kb(tmp_path)
    conn = open_ro(db)
    try:
        text = DiffCache(disk=DiskAnswers(disk_dir())).answer_text(conn, 1, 2)  # kept
        kept = DiffCache(disk=DiskAnswers(disk_dir())).answer(conn, 1, 2)  # a new process
        reference = json_answer.as_json(DiffCache(disk=DiskAnswers(None)).report(conn, 1, 2))
    finally:
        conn.close()
    assert text == reference
    assert kept._text is None and kept.literal() == splice.literal(text)
    monkeypatch.setattr(splice, "SPLICE_FROM", 10)
    monkeypatch.setattr(splice, "ACTIVE", threading.Event())
    assert registry.Rendered(kept).wire() == text  # outside the guard: the text
    kept = json_answer.Encoded(literal=kept.literal())
    splice.ACTIVE.set()
    token = registry.Rendered(kept).wire()
    assert token.startswith(splice._MARK) and kept._text is None
    assert b"".join(splice.splice(_sdk_line(token))) == _sdk_line(text)
