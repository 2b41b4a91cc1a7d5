"""Every disassembly window of a huge function through a real ``kbtool serve`` (issue 30
point 2): ``/api/disasm/V/I?kind=wasm&offset=O&limit=L`` for the largest body of version 1.

    python benchmarks/disasm_windows.py                      # the ffmpeg KB of interactive.py
    python benchmarks/disasm_windows.py --kb KB --runs 3 [--root OTHER_CHECKOUT] [--limit 300]
    python benchmarks/disasm_windows.py --smoke              # the demo KB, one run

Per fresh server: the first window (offset 0, "first window, cold"), then the reader's
steps, each timed request to last byte: "jump to the end" (the last window, as the End
key asks, then the middle one), "scroll" (every window in order, as a reader paging down),
"random" (40 windows at seeded random offsets). "first past the first screen" is the first window that needs
more than the first screen (the cold cost of a window deep in the body); every other window
is warm. p50/p95/max per step, the server's memory growth and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.interactive_common import DEFAULT_KB, kbtool, start_serve  # noqa: E402
from benchmarks.interactive_servers import get, rss_mib, wait  # noqa: E402
from benchmarks.web_api import free_port, stop  # noqa: E402

FIRST_SCREEN = 2_000  # kbtool.services.code.FIRST_SCREEN (lines decoded from the start)


def largest(kb: Path) -> tuple[int, int, int]:
    """(version, func_index, instructions) of version 1's longest body."""
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT version_id, idx, instr_count FROM functions WHERE version_id ="
            " (SELECT MIN(id) FROM versions) AND imported = 0 ORDER BY instr_count DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return row[0], row[1], row[2]


def one_server(kb: Path, root: Path, vid: int, idx: int, limit: int, seed: int) -> dict:
    port = free_port()
    proc = start_serve(kb, root, port, stderr=subprocess.DEVNULL)
    res: dict[str, list[float]] = {}
    try:
        wait(port, "/api/provenance")

        def window(step: str, offset: int) -> dict:
            path = f"/api/disasm/{vid}/{idx}?kind=wasm&offset={offset}&limit={limit}"
            status, body, ms = get(port, path)
            if status != 200:
                raise SystemExit(f"{path}: HTTP {status}")
            if offset + limit > FIRST_SCREEN and "first past the first screen" not in res:
                step = "first past the first screen"
            res.setdefault(step, []).append(ms)
            return json.loads(body)

        total = window("first window, cold", 0)["total"]
        before = rss_mib(proc.pid)
        window("jump to the end", max(0, total - limit))  # the End key: deep at once
        window("jump to the end", total // 2)
        for off in range(limit, total, limit):
            window("scroll", off)
        rnd = random.Random(seed)
        for _ in range(40):
            window("random", rnd.randrange(0, max(total, 1)))
        res["server +MiB after every window"] = [round(rss_mib(proc.pid) - before, 1)]
        res["lines"] = [float(total)]
    finally:
        stop(proc)
    return res


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", type=Path, default=DEFAULT_KB)
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    ap.add_argument("--runs", type=int, default=3, help="fresh servers")
    ap.add_argument("--limit", type=int, default=300, help="lines per window")
    ap.add_argument("--smoke", action="store_true", help="the demo KB, one run")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    tmp = None
    if args.smoke:
        tmp = tempfile.TemporaryDirectory()
        args.kb, args.runs = Path(tmp.name) / "demo.db", 1
        kbtool(root, "demo", "--db", str(args.kb))
    if not args.kb.exists():
        raise SystemExit(f"no KB at {args.kb} (build it with benchmarks/interactive.py)")
    vid, idx, n = largest(args.kb)
    print(
        f"disasm windows: {args.kb} version {vid} function {idx} ({n:,} instructions),"
        f" {args.limit} lines per window, {args.runs} fresh server(s); checkout {root}"
    )
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on"
        f" {os.cpu_count()} cores"
    )
    merged: dict[str, list[float]] = {}
    for run in range(args.runs):
        for k, v in one_server(args.kb, root, vid, idx, args.limit, seed=run).items():
            merged.setdefault(k, []).extend(v)
    print(f"  {'step':32} {'n':>5} {'p50':>8} {'p95':>8} {'max':>8}  (ms)")
    warm: list[float] = []
    for step in (
        "first window, cold",
        "first past the first screen",
        "scroll",
        "jump to the end",
        "random",
    ):
        xs = merged.get(step, [])
        if not xs:
            continue
        if step in ("scroll", "jump to the end", "random"):
            warm += xs
        print(
            f"  {step:32} {len(xs):>5} {statistics.median(xs):8.1f} {pct(xs, 0.95):8.1f}"
            f" {max(xs):8.1f}"
        )
    if warm:
        print(
            f"  {'every warm window':32} {len(warm):>5} {statistics.median(warm):8.1f}"
            f" {pct(warm, 0.95):8.1f} {max(warm):8.1f}"
        )
    print(f"  server +MiB after every window: {merged['server +MiB after every window']}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
