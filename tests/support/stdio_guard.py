"""A Python script behind the MCP stdio guard (``kbtool.mcp.linebound``) as a subprocess, for
tests that speak raw JSON-RPC lines to it (no SDK client)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def script_process(script: str) -> subprocess.Popen:
    """Run ``script`` (``python -c``) from the checkout with piped stdin and stdout."""
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
