"""The whole ``get_diff`` of the interactive benchmark's ffmpeg KB read by a second real MCP
client: the TypeScript SDK's stdio client (Claude Desktop, Claude Code, the Inspector), beside
the Python SDK's figure of ``benchmarks/interactive.py`` (issue 30).

    python benchmarks/mcp_ts_client.py                 # the stored pair 1 -> 2, 8 calls
    python benchmarks/mcp_ts_client.py --from 2 --to 1 --runs 4

Needs ``node`` and ``npm``; the SDK (``@modelcontextprotocol/sdk``, pinned below) is installed
once into ``~/.cache/kbtool-bench-node``. Prints each call's ms, then p50/p95 cold and warm.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

SDK = "@modelcontextprotocol/sdk@1.32.2"
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kbtool-bench-node"
KB = Path.home() / ".cache" / "kbtool-interactive" / "ffmpeg.db"


def _install() -> Path:
    """The directory holding node_modules with the pinned SDK."""
    marker = CACHE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if not marker.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "init", "-y"], cwd=CACHE, check=True, capture_output=True)
        subprocess.run(["npm", "install", SDK], cwd=CACHE, check=True)
    shutil.copy(HERE / "mcp_ts_client.mjs", CACHE / "mcp_ts_client.mjs")
    return CACHE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=Path, default=KB)
    ap.add_argument("--from", dest="a", type=int, default=1)
    ap.add_argument("--to", dest="b", type=int, default=2)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to serve")
    o = ap.parse_args()
    if not o.kb.exists():
        sys.exit(f"no KB at {o.kb}: run benchmarks/interactive.py once first")
    if not (shutil.which("node") and shutil.which("npm")):
        sys.exit("needs node and npm")
    where = _install()
    load = os.getloadavg()
    proc = subprocess.run(
        ["node", "mcp_ts_client.mjs", sys.executable, str(o.root), str(o.kb), str(o.a), str(o.b)]
        + [str(o.runs)],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    calls = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    print(f"TypeScript SDK ({SDK}) stdio client, whole get_diff {o.a} -> {o.b} on {o.kb}")
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; the answer {calls[0]['chars']:,} chars"
    )
    for kind in ("cold", "warm"):
        ms = sorted(c["ms"] for c in calls if c["kind"] == kind)
        if ms:
            p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
            print(f"  {kind}: p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, n={len(ms)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
