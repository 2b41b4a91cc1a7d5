"""``kbtool mcp`` (the SDK's server) on the wire, and the reused read connections.

- the JSON-RPC lines of a session are answered as the registry says: tools/list in
  registry order with titles and hints, each answer the registered function's own text,
  tool errors and validation errors as one-line tool errors, bad lines kept off stdout;
- a reused read-only connection sees a write made by another process at its next read,
  cannot write, and never keeps a read transaction between calls;
- the server process keeps its read connection between calls (reuse on) or not (off).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool import cli
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.mcp.reads import ReadPool
from tests.support.mcp import unnamed_ids
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]


def exchange(db: Path, requests: list[dict], **env: str) -> list[dict]:
    """Send ``requests`` (one JSON line each) to a `kbtool mcp` process and wait for every
    reply before closing its stdin; the replies sorted by id."""
    proc = subprocess.Popen(
        [*CLI, "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    wanted = sum(1 for r in requests if "id" in r)
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(wanted)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    return sorted(replies, key=lambda r: r["id"])


def _requests(db: Path) -> list[dict]:
    conn = open_ro(db)
    fn = queries.list_functions(conn, 1)[3]
    conn.close()
    calls = [
        ("list_versions", {}),
        ("coverage", {"version_id": 1}),
        ("coverage", {"version_id": 99}),
        ("coverage", {"version_id": "1"}),
        ("coverage", {}),
        ("coverage", {"version_id": True}),
        ("list_functions", {"version_id": 1, "fields": '["index"]', "limit": 3}),
        ("list_functions", {"version_id": 2, "unnamed_only": True, "limit": 2, "offset": 4}),
        ("get_function_facts", {"version_id": 1, "func_index": fn["index"], "max_items": 5}),
        ("get_symbol", {"stable_id": fn["stable_id"]}),
        ("get_symbol", {"stable_id": "nosuch"}),
        ("search_symbols", {"query": "huf", "limit": 3}),
        ("get_diff", {"from_version_id": 1, "to_version_id": 2, "only": ["changed"], "limit": 5}),
        ("export_kb_text", {"version_id": 2, "limit": 4}),
        ("get_callers", {"version_id": 1, "func_index": fn["index"]}),
        ("list_strings", {"version_id": 1, "limit": 3}),
        ("propose_symbols", {"proposals": [{"stable_id": "nosuch", "name": "x", "extra": 1}]}),
        ("propose_symbol", {"stable_id": fn["stable_id"], "name": "y", "confidence": 2}),
        ("no_such_tool", {}),
    ]
    out: list[dict] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list", "params": {}},
        {"jsonrpc": "2.0", "id": 5, "method": "prompts/list", "params": {}},
    ]
    for i, (name, args) in enumerate(calls):
        out.append(
            {
                "jsonrpc": "2.0",
                "id": 10 + i,
                "method": "tools/call",
                "params": {"name": name, "arguments": args},
            }
        )
    return out


def _direct(db: Path, name: str, args: dict) -> str:
    """The registered tool called in this process (no protocol): its answer's text."""
    from kbtool.mcp import registry

    tool = next(t for t in registry.load() if t.name == name)
    for key, value in list(args.items()):  # a list sent as a JSON string, as the SDK parses it
        if isinstance(value, str) and value.startswith("["):
            args = {**args, key: json.loads(value)}
    with registry.bound(str(db.resolve())):
        return tool.render(tool.fn(**args))


def test_answers_are_the_registered_tools(demo_kb_master):
    """Through `kbtool mcp` (the SDK's server), tools/list is the registry (names in order,
    titles, hints) and every answer is, byte for byte, what the registered function returns
    in-process; refusals are one-line tool errors."""
    from kbtool.mcp import registry

    requests = _requests(demo_kb_master)
    replies = exchange(demo_kb_master, requests)
    assert [r["id"] for r in replies] == [r["id"] for r in requests if "id" in r]

    init = replies[0]["result"]
    assert init["protocolVersion"] == "2024-11-05"
    assert init["capabilities"]["tools"]["listChanged"] is False
    assert init["serverInfo"]["name"] == "kbtool"
    from mcp.types import InitializeResult

    if "instructions" in InitializeResult.model_fields:  # SDKs before 1.3 send none
        assert init["instructions"].startswith("kbtool is a knowledge base")

    tools = replies[1]["result"]["tools"]
    registered = registry.load()
    assert [t["name"] for t in tools] == [t.name for t in registered]
    for listed, tool in zip(tools, registered, strict=True):
        assert listed["description"].split()[:3] == (tool.fn.__doc__ or "").split()[:3]
        assert listed["inputSchema"]["type"] == "object"
        ann = listed.get("annotations")
        if ann is not None:  # SDK 1.10+: titles and hints
            assert ann["title"] == tool.title
            assert ann["readOnlyHint"] is tool.read_only
            assert ann["idempotentHint"] is tool.idempotent
            assert ann["destructiveHint"] is False and ann["openWorldHint"] is False
    assert replies[2]["result"] == {}  # ping
    by_id = {r["id"]: r for r in replies}
    errors = 0
    for req in requests:
        if req.get("method") != "tools/call":
            continue
        result = by_id[req["id"]]["result"]
        name, args = req["params"]["name"], req["params"]["arguments"]
        (block,) = result["content"]
        assert block["type"] == "text"
        if result.get("isError"):
            errors += 1
            assert "Traceback" not in block["text"]
            continue
        assert block["text"] == _direct(demo_kb_master, name, args), name
    assert errors >= 5  # unknown ids, bad types, out of range, unknown tool were exercised


def test_bad_lines_stay_off_the_protocol(demo_kb_master):
    """A line that is not JSON, an empty line, an unknown method: the session goes on and
    stdout carries only protocol lines."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    lines = [
        json.dumps(init),
        "not json",
        "",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "x/y"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ]
    proc = subprocess.Popen(
        [*CLI, "mcp", "--db", str(demo_kb_master)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies = {}
    while 3 not in replies:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        msg = json.loads(line)  # every stdout line is JSON-RPC
        assert msg["jsonrpc"] == "2.0"
        if "id" in msg:
            replies[msg["id"]] = msg
    proc.stdin.close()
    proc.wait(timeout=60)
    assert replies[1]["result"]["serverInfo"]["name"] == "kbtool"
    assert replies[2]["error"]["code"] == -32601  # Method not found
    assert replies[3]["result"] == {}


def test_fast_path_reads_the_same_options_as_typer(monkeypatch, demo_kb_master):
    opts: dict = {}
    assert cli._take_options(
        ["--db", "a.db", "--log-level=info"], {"--db": "db", "--log-level": "log_level"}, opts
    )
    assert opts == {"db": "a.db", "log_level": "info"}
    assert not cli._take_options(["--help"], {"--db": "db"}, {})
    assert not cli._take_options(["--db"], {"--db": "db"}, {})
    # anything else goes to Typer (None): help, a bad level, another command, a missing KB
    for args in (
        ["mcp", "--help"],
        ["mcp", "--log-level", "loud"],
        ["search", "mcp"],
        ["--db", "mcp", "versions"],
        ["mcp", "--db", "/nonexistent/kb.db"],
    ):
        assert cli._serve_mcp(args) is None, args


# ---------------------------------------------------------------- read connection reuse


def _write_name(db: Path, sid: str, name: str) -> None:
    """A gated write from another process (a `kbtool` command would do the same)."""
    code = (
        "import sys\nfrom kbtool.kb.db import open_rw\nfrom kbtool.kb.gate import upsert_symbol\n"
        "c = open_rw(sys.argv[1], create=False)\n"
        "print(upsert_symbol(c, sys.argv[2], sys.argv[3], provenance='human', confidence=1.0,"
        " actor='human:test'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(db), sid, name],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0 and "'written': True" in proc.stdout, proc.stderr


def test_reused_connection_sees_other_processes_writes_and_cannot_write(demo_kb):
    sid = unnamed_ids(demo_kb, 1)[0]
    pool = ReadPool(demo_kb, reuse=True)
    first = pool.read(lambda conn: (id(conn), queries.get_symbol(conn, sid)))
    assert first[1] is None
    _write_name(demo_kb, sid, "seen_by_the_next_read")
    second = pool.read(lambda conn: (id(conn), queries.get_symbol(conn, sid)))
    assert second[0] == first[0] and pool.opened == 1  # the same connection, reused
    assert second[1]["name"] == "seen_by_the_next_read"

    assert pool.read(lambda conn: conn.execute("PRAGMA query_only").fetchone()[0]) == 1
    with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
        pool.read(lambda conn: conn.execute("UPDATE symbols SET name = 'x'"))
    with pytest.raises(sqlite3.OperationalError):
        pool.read(lambda conn: conn.execute("CREATE TABLE t (x)"))
    assert pool.read(lambda conn: queries.get_symbol(conn, sid))["name"] == "seen_by_the_next_read"
    pool.close()


def test_no_read_transaction_is_kept_between_calls(demo_kb):
    sid = unnamed_ids(demo_kb, 1)[0]
    pool = ReadPool(demo_kb, reuse=True)

    def leave_a_snapshot_open(conn: sqlite3.Connection) -> bool:
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM functions").fetchone()
        return conn.in_transaction

    assert pool.read(leave_a_snapshot_open) is True
    _write_name(demo_kb, sid, "after_the_snapshot")
    assert pool.read(lambda conn: conn.in_transaction) is False
    assert pool.read(lambda conn: queries.get_symbol(conn, sid))["name"] == "after_the_snapshot"
    assert pool.opened == 1
    pool.close()


def test_a_replaced_kb_file_is_reopened(demo_kb, tmp_path):
    sid = unnamed_ids(demo_kb, 1)[0]
    pool = ReadPool(demo_kb, reuse=True)
    assert pool.read(queries.get_symbol, sid) is None
    other = tmp_path / "other.db"
    shutil.copy(demo_kb, other)
    _write_name(other, sid, "in_the_new_file")
    os.replace(other, demo_kb)
    for suffix in ("-wal", "-shm"):
        Path(f"{demo_kb}{suffix}").unlink(missing_ok=True)
    assert pool.read(queries.get_symbol, sid)["name"] == "in_the_new_file"
    assert pool.opened == 2
    pool.close()


def test_without_reuse_every_call_opens_its_own(demo_kb):
    pool = ReadPool(demo_kb, reuse=False)
    ids = {pool.read(lambda conn: id(conn)) for _ in range(3)}
    assert pool.opened == 3 and len(ids) >= 1


def _kb_fds(pid: int, db: Path) -> int:
    target = str(db.resolve())
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == target)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
@pytest.mark.parametrize("reuse", ["1", "0"])
def test_server_process_keeps_its_read_connection(demo_kb, reuse):
    """Between calls the server holds the KB open (reuse) or not (KBTOOL_MCP_REUSE=0); a
    write by another process is seen by the next call either way."""
    sid = unnamed_ids(demo_kb, 1)[0]
    proc = subprocess.Popen(
        [*CLI, "mcp", "--db", str(demo_kb)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KBTOOL_MCP_REUSE": reuse},
    )

    def get_symbol(rid: int) -> object:
        proc.stdin.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "get_symbol", "arguments": {"stable_id": sid}},
                }
            )
            + "\n"
        )
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        return json.loads(reply["result"]["content"][0]["text"])

    proc.stdin.write(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        + "\n"
    )
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    try:
        assert get_symbol(1) is None
        held = _kb_fds(proc.pid, demo_kb)
        assert (held >= 1) if reuse == "1" else (held == 0)
        _write_name(demo_kb, sid, "named_meanwhile")
        assert get_symbol(2)["name"] == "named_meanwhile"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_parallel_calls_on_reused_connections_answer_right(demo_kb_master):
    """32 calls in flight through one SDK client session: each answer is its own query's."""
    pytest.importorskip("mcp.client.stdio")
    import asyncio

    from tests.support.mcp import call, expected, mcp_session

    entries = expected(demo_kb_master, queries.list_functions, 2, False)[:16]

    async def main() -> list:
        async with mcp_session(demo_kb_master) as s:
            jobs = []
            for e in entries:
                jobs.append(call(s, "get_symbol", stable_id=e["stable_id"]))
                jobs.append(call(s, "get_function_facts", version_id=2, func_index=e["index"]))
            return await asyncio.gather(*jobs)

    answers = asyncio.run(main())
    for i, e in enumerate(entries):
        assert answers[2 * i] == expected(demo_kb_master, queries.get_symbol, e["stable_id"])
        assert answers[2 * i + 1] == expected(
            demo_kb_master, queries.get_function_facts, 2, e["index"]
        )
