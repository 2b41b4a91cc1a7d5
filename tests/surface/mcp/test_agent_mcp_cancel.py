"""An MCP client that goes away stops the agent pass it started (issue #24.6): a client
process runs `run_agent_pass` over the MCP SDK's real stdio client against `kbtool mcp`, with
provider_b pointed at a fake server that counts calls; the client is killed mid-pass and no
further call reaches the fake provider after a short grace."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from testkit.llm_server import FakeLLMServer
from tests.support.paths import ROOT

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="mcp SDK"),
    pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="openai"),
]

CLIENT = textwrap.dedent("""
    import asyncio, os, sys
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main(db):
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "kbtool.cli", "mcp", "--db", db],
                                       env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                print("ready", flush=True)
                await session.call_tool("run_agent_pass", {"version_id": 2,
                                                           "backend": "provider_b"})
                print("done", flush=True)

    asyncio.run(main(sys.argv[1]))
""")


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _wait(cond, limit: float = 60.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_killing_the_mcp_client_stops_provider_calls(demo_kb):
    with FakeLLMServer([("sleep", 0.2)] * 2000) as srv:
        env = {
            **os.environ,
            "PROVIDER_B_API_KEY": "test",
            "PROVIDER_B_BASE_URL": srv.url + "/v1",
            "PYTHONPATH": str(ROOT),
        }
        env.pop("PROVIDER_A_API_KEY", None)
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(demo_kb)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        servers: list[int] = []
        try:
            assert client.stdout.readline().strip() == "ready"
            servers = _children(client.pid)
            assert _wait(lambda: len(srv.requests) >= 6), "the pass never called the provider"
            client.send_signal(signal.SIGKILL)
            client.wait()
            # the server process ends by itself once its pass stopped (waited for, not a fixed
            # grace: a slow machine's server reads the end of its input later)
            assert all(
                _wait(
                    lambda p=p: (
                        not Path(f"/proc/{p}").exists()
                        or "Z" in (Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1][:3])
                    ),
                    30,
                )
                for p in servers
            )
            after_grace = len(srv.requests)  # calls in flight at the kill may have finished
            time.sleep(1.0)
            assert len(srv.requests) == after_grace, "provider calls went on after the client left"
            assert after_grace < 100  # a whole pass makes some 300 calls
        finally:
            if client.poll() is None:
                client.kill()
            for p in servers:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
