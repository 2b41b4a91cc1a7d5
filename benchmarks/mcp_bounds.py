"""Peak memory of `kbtool mcp` fed hostile lines (issue #24.7): one line of N MB (default
200) and one of 100,000 nested brackets, then an ordinary request, served by the MCP
SDK's server behind kbtool's line bounds. Peak RSS is the server process's
``VmHWM`` (Linux), read after the ordinary request answered.

Run:  python benchmarks/mcp_bounds.py --db KB [--mb 200] [--smoke]
``--smoke``: the demo KB built in a temporary directory and a 20 MB line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_case(db: Path, sdk: bool, mb: int) -> dict:
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    replies: list[dict] = []
    done = threading.Event()

    def pump() -> None:
        for line in proc.stdout:
            replies.append(json.loads(line))
            if replies[-1].get("id") == 9:
                done.set()

    threading.Thread(target=pump, daemon=True).start()

    def send(obj: dict) -> None:
        proc.stdin.write(json.dumps(obj).encode() + b"\n")
        proc.stdin.flush()

    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
    )
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    t0 = time.perf_counter()
    proc.stdin.write(b"[" * 100_000 + b"\n")
    proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"')
    chunk = b"A" * (1 << 20)
    for _ in range(mb):
        proc.stdin.write(chunk)
    proc.stdin.write(b'"}}\n')
    proc.stdin.flush()
    send(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "list_versions", "arguments": {}},
        }
    )
    answered = done.wait(120)
    seconds = time.perf_counter() - t0
    rss = peak_rss_mb(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=30)
    errors = [r["error"]["code"] for r in replies if "error" in r]
    return {
        "server": "sdk" if sdk else "wire",
        "line_mb": mb,
        "answered": answered,
        "errors": errors,
        "peak_rss_mb": round(rss, 1),
        "seconds": round(seconds, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        mb = 20 if args.smoke else args.mb
        if db is None:
            from kbtool.services.demo import build_demo

            db = Path(tmp) / "kbtool.db"
            build_demo(db, echo=lambda _m: None)
        rows = [run_case(db, True, mb)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        print(
            f"{r['server']:5} line {r['line_mb']} MB + 100,000 brackets: peak RSS"
            f" {r['peak_rss_mb']} MB, errors {r['errors']}, next request answered"
            f" {r['answered']}, {r['seconds']} s"
        )


if __name__ == "__main__":
    main()
