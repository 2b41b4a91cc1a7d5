"""`kbtool mcp` keeps serving after hostile lines (issue #24.7): a line of 100,000 nested
brackets and a line longer than the bound are each answered with a JSON-RPC error, and the
next request still answers; with kbtool's own transport and with the SDK's server."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli", "mcp"]
LIMIT = 1 << 20  # a 1 MiB bound for the test (the default is 8 MiB)


class Proc:
    """`kbtool mcp --db KB` fed raw bytes; collects its stdout lines."""

    def __init__(self, db: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.q: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict) -> None:
        self.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
            + b"\n"
        )

    def reply(self) -> dict:
        line = self.q.get(timeout=60)
        assert line is not None, "server exited: " + self.proc.stderr.read().decode()
        return json.loads(line)

    def close(self) -> int:
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        self.proc.stderr.close()
        return rc


def test_hostile_lines_get_errors_and_the_server_keeps_serving(demo_kb_master):
    env = dict(os.environ, KBTOOL_MCP_MAX_LINE=str(LIMIT))
    srv = Proc(demo_kb_master, env)
    try:
        srv.request(
            1,
            "initialize",
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "bounds", "version": "0"},
            },
        )
        assert srv.reply()["result"]["serverInfo"]["name"] == "kbtool"
        srv.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

        # 100,000 nested brackets (a RecursionError for an unguarded parser)
        srv.write(b"[" * 100_000 + b"\n")
        deep = srv.reply()
        assert deep["id"] is None and deep["error"]["code"] == -32600
        assert "nested deeper" in deep["error"]["message"]

        # a request whose top-level id is readable gets its id back
        srv.write(
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
            + b"[" * 1000
            + b"]" * 1000
            + b"}\n"
        )
        assert srv.reply()["id"] == 7

        # a line three times the bound: discarded as it is read
        big = (
            b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","a":"'
            + b"A" * (3 * LIMIT)
            + b'"}}\n'
        )
        srv.write(big)
        long = srv.reply()
        assert long["id"] == 8 and long["error"]["code"] == -32600
        assert "longer than the limit" in long["error"]["message"]

        # and then an ordinary request answers
        srv.request(9, "tools/call", {"name": "list_versions", "arguments": {}})
        ok = srv.reply()
        assert ok["id"] == 9 and not ok["result"].get("isError")
        assert json.loads(ok["result"]["content"][0]["text"])
    finally:
        assert srv.close() == 0


def test_benchmark_smoke():
    """benchmarks/mcp_bounds.py --smoke runs and reports the server."""
    root = ROOT
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "mcp_bounds.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert out.returncode == 0, out.stderr
    assert "sdk" in out.stdout and "answered True" in out.stdout, out.stdout
