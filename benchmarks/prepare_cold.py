"""The cold preparation of a version for the code views (issue 30 point 1): what the studio's
first screen, the TUI's first C and MCP's first code answer wait for on a fresh process.

    python benchmarks/prepare_cold.py                       # the ffmpeg KB of interactive.py
    python benchmarks/prepare_cold.py --kb KB --version 1 --runs 7
    python benchmarks/prepare_cold.py --root /tmp/base      # another checkout (a baseline)
    python benchmarks/prepare_cold.py --smoke               # the demo KB, one run

Each run is a fresh ``python`` that opens the KB read-only, turns on the front-ends' collector
policy (:mod:`kbtool.services.heap`, as ``kbtool serve``/``tui``/``mcp`` do) and times one
``code_module(conn, version)``: wall and CPU ms (CPU counts every thread: the module's bytes
are read beside the KB reads), p50/p95/max over the runs, with the main stages' wall ms
(those the measured checkout has: ``parse_module`` when the module was parsed, ``thaw`` when
its sections were rebuilt from the kept file) and the machine's load before and after.

Two rows: "built" with the kept preparations off (``KBTOOL_CODE_CACHE_DIR=off``: built from
the KB, what a version nobody prepared costs) and "kept" read back from a store in a
temporary directory (:mod:`kbtool.services.code_store`; one untimed run writes it first),
what a fresh server, TUI or MCP pays once ``analyze``/``ingest`` or any earlier process kept
it. ``--store built|kept`` measures one of them (a checkout without the store: built only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_KB = Path.home() / ".cache" / "kbtool-interactive" / "ffmpeg.db"

# the child: one cold preparation, its stages timed by wrapping what the checkout has
CHILD = r"""
import json, sys, time
from kbtool.services import heap
heap.enable()
from kbtool.kb.db import open_ro
from kbtool.services import code_prepared as cp
import kbtool.lift.context as ctx
stages = {}
def wrap(mod, name, label=None):
    f = getattr(mod, name, None)
    if f is None:
        return
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            key = label or name
            stages[key] = stages.get(key, 0.0) + (time.perf_counter() - t) * 1000
    setattr(mod, name, timed)
for name in ("_parsed", "parse_module", "thaw", "_data_names", "identity_rows", "prepare"):
    wrap(cp, name)
wrap(cp.queries, "function_identities")
wrap(ctx, "build_data_map")
store = getattr(cp, "code_store", None)
if store is not None:
    wrap(store, "load", "store load")
conn = open_ro(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
cm = cp.code_module(conn, int(sys.argv[2]))
wall, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
if hasattr(cp, "flush_store"):
    cp.flush_store()  # untimed: what the next process reads back
print(json.dumps({"wall": wall, "cpu": cpu, "stages": stages, "store": getattr(cm, "store", "")}))
"""


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def one_run(kb: Path, version: int, root: Path, store: str = "off") -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), KBTOOL_CODE_CACHE_DIR=store)
    out = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, str(kb), str(version)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"the preparation failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def measure(kb: Path, version: int, runs: int, root: Path, store: str = "off") -> dict:
    """``runs`` cold preparations; ``store``: the kept preparations' directory (``off``:
    built from the KB; a directory: one untimed run keeps it there first)."""
    before = _load()
    if store != "off":
        one_run(kb, version, root, store)
    samples = [one_run(kb, version, root, store) for _ in range(runs)]
    res: dict = {"kb": str(kb), "version": version, "runs": runs, "root": str(root)}
    res["store"] = sorted({s.get("store", "") for s in samples})
    for key in ("wall", "cpu"):
        vals = [s[key] for s in samples]
        res[key] = {"p50": statistics.median(vals), "p95": _pct(vals, 0.95), "max": max(vals)}
    names = sorted({k for s in samples for k in s["stages"]})
    res["stages"] = {
        n: statistics.median([s["stages"].get(n, 0.0) for s in samples]) for n in names
    }
    res["load"] = {"before": before, "after": _load()}
    return res


def report(res: dict) -> None:
    print(
        f"cold preparation of version {res['version']} of {res['kb']} ({res['runs']} fresh"
        f" processes; checkout {res['root']}); load average {res['load']['before']}"
    )
    for row in (res, res.get("kept")):
        if not row:
            continue
        how = "kept (read back)" if "use" in row.get("store", ()) else "built (from the KB)"
        print(f"  {how}: load average {row['load']['before']} -> {row['load']['after']}")
        for key in ("wall", "cpu"):
            r = row[key]
            print(f"    {key:5s} ms  p50 {r['p50']:7.1f}  p95 {r['p95']:7.1f}  max {r['max']:7.1f}")
        stages = ", ".join(f"{k} {v:.1f}" for k, v in row["stages"].items())
        print(f"    stages (wall ms, p50): {stages}")
    print(f"  load average at the end {res['load']['after']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kb", type=Path, default=DEFAULT_KB)
    ap.add_argument("--version", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", type=Path, default=ROOT, help="the kbtool checkout measured")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="the demo KB, one run")
    ap.add_argument("--store", choices=("both", "built", "kept"), default="both", help="which rows")
    args = ap.parse_args(argv)
    if not args.smoke and not args.kb.exists():
        raise SystemExit(f"no KB at {args.kb} (build it with benchmarks/interactive.py)")
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            from testkit.kb import build_demo_kb

            kb, version, runs = build_demo_kb(Path(tmp) / "demo.db"), 1, 1
        else:
            kb, version, runs = args.kb, args.version, max(1, args.runs)
        kept_dir = str(Path(tmp) / "kept")
        if args.store == "kept":
            res = measure(kb, version, runs, args.root, kept_dir)
        else:
            res = measure(kb, version, runs, args.root)
            if args.store == "both" and (args.root / "kbtool/services/code_store.py").exists():
                res["kept"] = measure(kb, version, runs, args.root, kept_dir)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        report(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
