"""`kbtool mcp` as a process: nothing but protocol on stdout, the default KB path, a missing
KB, a missing SDK (hidden from a subprocess), and the stdio-only transport."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.mcp.server import build_server
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]

HIDE = '''
import sys

class _Hide:
    """Make some packages look uninstalled."""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Hide())
'''


def hide(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment whose Python cannot import ``packages`` (a sitecustomize hook)."""
    (tmp_path / "sitecustomize.py").write_text(f"HIDDEN = {set(packages)!r}\n" + HIDE)
    return dict(os.environ, PYTHONPATH=str(tmp_path))


class RawServer:
    """`kbtool mcp` driven by hand-written JSON-RPC lines; keeps every stdout line."""

    def __init__(self, args: list[str], cwd: Path):
        self.proc = subprocess.Popen(
            CLI + ["mcp", *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._next_id = 0

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def send(self, method: str, params: dict | None = None, *, notify: bool = False) -> dict | None:
        msg: dict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self._next_id += 1
            msg["id"] = self._next_id
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        if notify:
            return None
        while True:  # server notifications may come first; every line must be JSON-RPC
            line = self._q.get(timeout=60)
            assert line is not None, "server exited: " + self.proc.stderr.read()
            self.lines.append(line)
            reply = parse_protocol_line(line)
            if reply.get("id") == msg["id"]:
                return reply

    def close(self) -> tuple[int, str]:
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        while (line := self._q.get(timeout=30)) is not None:
            self.lines.append(line)
            parse_protocol_line(line)
        return rc, self.proc.stderr.read()


def parse_protocol_line(line: str) -> dict:
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        pytest.fail(f"stray output on stdout: {line!r}")
    assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line
    return msg


def test_stdout_carries_only_the_protocol(demo_kb_master, tmp_path):
    """Every tool, valid and invalid calls; the KB is ./kbtool.db of the working directory."""
    shutil.copy(demo_kb_master, tmp_path / "kbtool.db")
    conn = open_ro(demo_kb_master)
    versions = queries.list_versions(conn)
    fn = queries.list_functions(conn, versions[0]["id"])[0]
    conn.close()
    a, b = versions[0]["id"], versions[1]["id"]

    srv = RawServer([], cwd=tmp_path)
    init = srv.send(
        "initialize",
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    )
    assert init["result"]["serverInfo"]["name"] == "kbtool"
    srv.send("notifications/initialized", notify=True)
    tools = srv.send("tools/list", {})["result"]["tools"]
    from kbtool.mcp.server import tool_specs  # every registered tool is listed, once

    registered = [spec.name for spec in tool_specs(str(tmp_path / "kbtool.db"), RuntimeError)]
    assert sorted(t["name"] for t in tools) == sorted(registered) and len(registered) >= 23
    calls = [
        ("list_versions", {}),
        ("coverage", {"version_id": a}),
        ("list_functions", {"version_id": a, "include_imports": True}),
        ("get_function_facts", {"version_id": a, "func_index": fn["index"]}),
        ("get_function_facts", {"version_id": a, "func_index": 0}),
        ("get_symbol", {"stable_id": fn["stable_id"]}),
        ("search_symbols", {"query": "zstd"}),
        ("get_diff", {"from_version_id": a, "to_version_id": b}),
        ("export_kb_text", {"version_id": a}),
        (
            "propose_symbol",
            {"stable_id": fn["stable_id"], "name": "raw_test_name", "confidence": 0.01},
        ),
        ("coverage", {"version_id": 999}),
        ("get_symbol", {"stable_id": "nosuchid"}),
        ("coverage", {"version_id": "abc"}),
        ("no_such_tool", {}),
    ]
    for name, args in calls:
        reply = srv.send("tools/call", {"name": name, "arguments": args})
        assert "result" in reply or "error" in reply
        body = json.dumps(reply)
        assert "Traceback" not in body, body
        if name in ("coverage", "get_symbol") and args in (
            {"version_id": 999},
            {"stable_id": "nosuchid"},
        ):
            assert reply["result"]["isError"] is True
    rc, stderr = srv.close()
    assert rc == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert len(srv.lines) >= len(calls) + 2


def test_missing_kb(tmp_path):
    proc = subprocess.run(
        CLI + ["mcp", "--db", str(tmp_path / "nope.db")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert "no KB at" in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "nope.db").exists(), "serving never creates a KB"

    with pytest.raises(FileNotFoundError):
        build_server(tmp_path / "nope.db")


def test_not_a_kb(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite")
    proc = subprocess.run(
        CLI + ["mcp", "--db", str(junk)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1 and "error" in proc.stderr and proc.stdout == ""


def test_without_the_sdk(demo_kb_master, tmp_path):
    """Without the SDK, `kbtool mcp` and build_server explain how to install it (one line, no
    traceback, nothing on stdout); every other command works."""
    env = hide(tmp_path, "mcp")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    hidden = run(sys.executable, "-c", "import mcp")
    assert hidden.returncode != 0 and "No module named 'mcp'" in hidden.stderr

    sdk_served = subprocess.run(
        [*CLI, "mcp", "--db", str(demo_kb_master)],
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert sdk_served.returncode == 1
    assert "pip install" in sdk_served.stderr and "mcp" in sdk_served.stderr
    assert "Traceback" not in sdk_served.stderr and sdk_served.stdout == ""

    built = run(
        sys.executable,
        "-c",
        (
            "import sys\nfrom kbtool.mcp.server import build_server\n"
            f"try:\n    build_server({str(demo_kb_master)!r})\n"
            "except RuntimeError as e:\n    print('RuntimeError', e)\n    sys.exit(3)\n"
        ),
    )
    assert (
        built.returncode == 3
        and built.stdout.startswith("RuntimeError")
        and "pip install" in built.stdout
    )

    versions = run(*CLI, "versions", "--json", "--db", str(demo_kb_master))
    assert versions.returncode == 0, versions.stderr
    assert json.loads(versions.stdout)[0]["id"] == 1
    helped = run(*CLI, "--help")
    assert helped.returncode == 0 and "mcp" in helped.stdout


def test_stdio_only(demo_kb_master):
    pytest.importorskip("mcp")

    server = build_server(demo_kb_master)
    with pytest.raises(ValueError, match="stdio only"):
        server.run("sse")


def _readme_snippet() -> str:
    """The Python client example of the README's MCP section (docs/mcp.md until merged)."""
    root = ROOT
    for doc in (root / "README.md", root / "docs" / "mcp.md"):
        if doc.exists():
            for block in re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
                if "stdio_client(SERVER)" in block:
                    return block
    pytest.fail("no MCP client example in README.md or docs/mcp.md")


def test_readme_client_example(demo_kb_master, tmp_path):
    """The README's snippet, verbatim, as a new user runs it: `kbtool` on PATH, ./kbtool.db."""
    shutil.copy(demo_kb_master, tmp_path / "kbtool.db")
    script = tmp_path / "example.py"
    script.write_text(_readme_snippet(), encoding="utf-8")
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("kbtool", path=env["PATH"]), "the kbtool console script is installed"
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("['list_versions', 'coverage', 'list_functions'")
    assert "{'written': True, 'reason': 'unnamed'}" in lines
    assert "'provenance': 'agent'" in proc.stdout and "'actor': 'agent:mcp'" in proc.stdout
