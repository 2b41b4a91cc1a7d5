"""Start-up of ``kbtool mcp`` to its first answer, beside the SDK's own import, in one run.

For each of ``--runs`` rounds (interleaved, so the shared machine's load hits both alike):

- ``kbtool mcp``: spawn ``python -m kbtool.cli mcp --db KB``, send ``initialize``,
  ``notifications/initialized`` and ``tools/list`` as JSON lines, and time until the
  ``tools/list`` answer is read (the first answer a client can use);
- ``import mcp.server``: ``python -c "import mcp.server"`` to its exit, the floor any
  server built on the SDK pays before it can read a line.

Prints the medians (and the difference: what kbtool itself costs). ``--smoke``: one round.

Run:  python benchmarks/mcp_startup.py [--runs N] [--db KB] [--json] [--smoke]
      (without --db the bundled demo KB is built in a temporary folder)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# this folder holds an mcp.py: keep it off the path so `import mcp` finds the SDK
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

REQUESTS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def first_answer(db: Path) -> float:
    """Seconds from spawn to the ``tools/list`` answer of a fresh ``kbtool mcp``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in REQUESTS).encode())
    proc.stdin.flush()
    try:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("kbtool mcp closed its stdout before answering tools/list")
            reply = json.loads(line)
            if reply.get("id") == 2:
                if not reply.get("result", {}).get("tools"):
                    raise RuntimeError(f"no tools in the answer: {reply}")
                return time.perf_counter() - t0
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def sdk_import() -> float:
    """Seconds for ``python -c "import mcp.server"`` to run to its exit."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import mcp.server"], check=True, cwd=tempfile.gettempdir()
    )
    return time.perf_counter() - t0


def demo_kb(folder: Path) -> Path:
    db = folder / "demo.db"
    subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "demo", "--db", str(db)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return db


def measure(db: Path, runs: int) -> dict[str, float]:
    kb, imp = [], []
    for _ in range(runs):
        kb.append(first_answer(db))
        imp.append(sdk_import())
    out = {
        "runs": runs,
        "kbtool_mcp_first_answer_s": statistics.median(kb),
        "import_mcp_server_s": statistics.median(imp),
    }
    out["kbtool_own_s"] = out["kbtool_mcp_first_answer_s"] - out["import_mcp_server_s"]
    out["load_1min"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--db", type=Path, help="the KB to serve (default: a fresh demo KB)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--smoke", action="store_true", help="one round")
    args = ap.parse_args(argv)
    runs = 1 if args.smoke else max(1, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or demo_kb(Path(tmp))
        figures = measure(db, runs)
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"kbtool mcp, spawn to the tools/list answer: "
            f"{figures['kbtool_mcp_first_answer_s']:.3f} s (median of {runs})"
        )
        print(
            f'python -c "import mcp.server":              '
            f"{figures['import_mcp_server_s']:.3f} s (median of {runs})"
        )
        print(
            f"kbtool's own share:                          {figures['kbtool_own_s']:.3f} s"
            f"   (load {figures['load_1min']:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
