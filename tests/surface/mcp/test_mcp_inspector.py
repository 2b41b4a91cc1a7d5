"""The README's client config, checked by a third-party client: the MCP Inspector's CLI.

The Inspector (npm ``@modelcontextprotocol/inspector``, TypeScript SDK) reads an
``mcpServers`` JSON file (``--config FILE --server NAME``), so the README's config block is
fed to it verbatim (only the KB path filled in) and the Inspector starts ``kbtool mcp``
from it, lists the tools, reads and writes through the gate.

The test runs only where the Inspector is already in npm's cache (``npx -y
@modelcontextprotocol/inspector --help`` puts it there) or ``KBTOOL_MCP_INSPECTOR`` names its
``cli/build/cli.js``; it never downloads anything, so CI does not depend on the npm registry
(.ci/run does not install it) and skips it on a fresh machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.mcp.server import TOOL_NAMES
from tests.support.mcp import unnamed_ids
from tests.support.paths import ROOT


def cached_inspector() -> Path | None:
    """The Inspector's CLI script: ``$KBTOOL_MCP_INSPECTOR`` or the newest one in npx's cache."""
    named = os.environ.get("KBTOOL_MCP_INSPECTOR")
    if named:
        return Path(named) if Path(named).exists() else None
    cache = Path(os.environ.get("npm_config_cache", Path.home() / ".npm")) / "_npx"
    found = sorted(
        cache.glob("*/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js"),
        key=lambda p: p.stat().st_mtime,
    )
    return found[-1] if found else None


INSPECTOR = cached_inspector()
pytestmark = pytest.mark.skipif(
    INSPECTOR is None or shutil.which("node") is None,
    reason="the MCP Inspector is not in npm's cache (npx -y @modelcontextprotocol/inspector --help)",
)


def readme_config() -> dict:
    """The README's `mcpServers` JSON block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        if '"mcpServers"' in block:
            return json.loads(block)
    pytest.fail("no mcpServers JSON block in README.md")


def inspect(config: Path, *args: str) -> dict:
    proc = subprocess.run(
        [
            "node",
            str(INSPECTOR),
            "--cli",
            "--config",
            str(config),
            "--server",
            "kbtool",
            "-e",
            f"PYTHONPATH={ROOT}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_readme_config_in_the_inspector(demo_kb, tmp_path):
    config = readme_config()
    server = config["mcpServers"]["kbtool"]
    assert server["command"] == "kbtool" and server["args"][:2] == ["mcp", "--db"]
    server["args"] = [str(demo_kb) if a.endswith("kbtool.db") else a for a in server["args"]]
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")

    tools = inspect(path, "--method", "tools/list")["tools"]
    assert sorted(t["name"] for t in tools) == sorted(TOOL_NAMES)
    assert all(t["annotations"]["openWorldHint"] is False for t in tools)

    answer = inspect(path, "--method", "tools/call", "--tool-name", "list_versions")
    conn = open_ro(demo_kb)
    versions = queries.list_versions(conn)
    conn.close()
    assert answer["isError"] is False
    assert json.loads(answer["content"][0]["text"]) == versions

    sid = unnamed_ids(demo_kb, 1)[0]
    written = inspect(
        path,
        "--method",
        "tools/call",
        "--tool-name",
        "propose_symbol",
        "--tool-arg",
        f"stable_id={sid}",
        "--tool-arg",
        "name=inspector_pick",
    )
    assert json.loads(written["content"][0]["text"]) == {"written": True, "reason": "unnamed"}
    conn = open_ro(demo_kb)
    symbol = queries.get_symbol(conn, sid)
    conn.close()
    assert symbol["name"] == "inspector_pick" and symbol["provenance"] == "agent"

    missing = inspect(
        path, "--method", "tools/call", "--tool-name", "coverage", "--tool-arg", "version_id=999"
    )
    assert (
        missing["isError"] is True
        and "list_versions gives the ids" in missing["content"][0]["text"]
    )
