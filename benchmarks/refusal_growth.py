"""KB growth under a loop of refused MCP proposals (issue #24 point 10).

A KB of 50 functions, one of them with a locked human name; a real ``kbtool mcp --db KB``
subprocess receives N identical ``propose_symbol`` calls for that function (each refused by
the gate: "locked"), pipelined over stdio as raw JSON-RPC lines. Reported: the KB's size
before and after (``.db`` + ``-wal``, after the server exited), the rows of
``annotation_events``, bytes per refused call, and calls per second.

Run:  python benchmarks/refusal_growth.py [--calls N] [--smoke]

``--smoke``: 200 calls (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.kb.gate import upsert_symbol  # noqa: E402
from testkit.kb import bare_kb  # noqa: E402


def kb_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def event_rows(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]
    finally:
        conn.close()


def run(calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb.db"
        sids = [f"{i:016x}" for i in range(50)]
        conn = bare_kb(kb, sids)
        upsert_symbol(
            conn,
            sids[0],
            "parse_header",
            provenance="human",
            confidence=1.0,
            actor="human:bench",
            lock=True,
        )
        conn.close()
        before, rows_before = kb_size(kb), event_rows(kb)
        proc = subprocess.Popen(
            [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(kb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            cwd=tmp,
        )
        assert proc.stdin is not None and proc.stdout is not None
        replies: list[dict] = []

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                replies.append(json.loads(line))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()

        def send(msg: dict) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")

        send(
            {
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "refusal-growth", "version": "0"},
                },
            }
        )
        send({"method": "notifications/initialized"})
        t0 = time.perf_counter()
        for i in range(calls):
            send(
                {
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {
                        "name": "propose_symbol",
                        "arguments": {
                            "stable_id": sids[0],
                            "name": "agent_guess",
                            "confidence": 0.9,
                        },
                    },
                }
            )
        proc.stdin.close()
        proc.wait(timeout=3600)
        reader.join(timeout=60)
        elapsed = time.perf_counter() - t0
        refused = sum(
            1 for r in replies if r.get("id") and "locked" in json.dumps(r.get("result", {}))
        )
        after, rows_after = kb_size(kb), event_rows(kb)
    return {
        "calls": calls,
        "refused": refused,
        "before": before,
        "after": after,
        "events_before": rows_before,
        "events_after": rows_after,
        "bytes_per_call": (after - before) / calls,
        "calls_per_s": calls / elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--smoke", action="store_true", help="200 calls")
    args = ap.parse_args(argv)
    calls = 200 if args.smoke else args.calls
    r = run(calls)
    print(f"refused propose_symbol calls: {r['refused']:,}/{r['calls']:,}")
    print(
        f"KB size: {r['before']:,} -> {r['after']:,} bytes "
        f"({r['after'] - r['before']:+,}; {r['bytes_per_call']:.1f} bytes per call)"
    )
    print(f"annotation_events rows: {r['events_before']:,} -> {r['events_after']:,}")
    print(f"calls per second: {r['calls_per_s']:,.0f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
