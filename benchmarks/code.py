"""On-demand code views through the service every surface calls (``kbtool.services.code``).

    python benchmarks/code.py [--module PATH] [--sample 200] [--json]
    python benchmarks/code.py --smoke          # the bundled zstd demo release, 20 functions

The module is ingested for real into a temporary KB. Then, as ``/api/disasm/{v}/{i}``,
``kbtool code`` and the TUI code screen do:

1. the first call on the version (cold: module bytes from SQLite, parse, prepare, one function);
2. ``--sample`` random defined functions (disassembly + lifted C, warm prepared module):
   median, p90 and worst;
3. the call graph of the version, cold and cached.

Peer in the same run: ``wasm-objdump -d`` (wabt) over the whole module, which is what one
function's listing costs without kbtool; and ``wasm-decompile`` (Debian's wabt) for the C-like
view, when installed. Figures are wall-clock seconds on this machine.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_ro, open_rw  # noqa: E402
from kbtool.services import code  # noqa: E402
from kbtool.services.ingest import ingest_bytes  # noqa: E402

_CORPUS = next(
    (p / "shared" / "corpus" for p in ROOT.parents if (p / "shared" / "corpus").is_dir()),
    ROOT.parent / "shared" / "corpus",
)
DEFAULT = _CORPUS / "release" / "lightningcss-wasm-1.29.1.wasm"
SMOKE = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _peer(cmd: list[str]) -> float | None:
    if not shutil.which(cmd[0]):
        return None
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - t
    return took if done.returncode == 0 else None  # a peer that fails has no figure


def measure(module: Path, sample: int, seed: int = 1) -> dict:
    data = module.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        conn = open_rw(db)
        t = time.perf_counter()
        ingest_bytes(conn, data, label=module.name)
        ingest_s = time.perf_counter() - t
        conn.close()
        ro = open_ro(db)
        try:
            vid = queries.latest_version_id(ro)
            defined = [f["index"] for f in queries.list_functions(ro, vid)]
            code.clear_cache()
            rng = random.Random(seed)
            picks = rng.sample(defined, min(sample, len(defined)))
            t = time.perf_counter()
            code.disassembly(ro, vid, picks[0])
            cold = time.perf_counter() - t
            times, lines, truncated = [], 0, 0
            for idx in picks[1:]:
                t = time.perf_counter()
                d = code.disassembly(ro, vid, idx)
                times.append(time.perf_counter() - t)
                lines += d["mnemonics"].count("\n")
                truncated += d["truncated"]
            t = time.perf_counter()
            graph = code.callgraph(ro, vid)
            graph_cold = time.perf_counter() - t
            t = time.perf_counter()
            code.callgraph(ro, vid)
            graph_warm = time.perf_counter() - t
        finally:
            ro.close()
    times.sort()
    return {
        "module": module.name,
        "bytes": len(data),
        "functions": len(defined),
        "ingest_s": ingest_s,
        "first_call_s": cold,
        "sampled": len(times),
        "sampled_lines": lines,
        "truncated": truncated,
        "median_s": statistics.median(times) if times else None,
        "p90_s": times[int(0.9 * (len(times) - 1))] if times else None,
        "worst_s": times[-1] if times else None,
        "callgraph_cold_s": graph_cold,
        "callgraph_cached_s": graph_warm,
        "callgraph_nodes": len(graph["nodes"]),
        "callgraph_edges": len(graph["edges"]),
        "peer_wasm_objdump_whole_s": _peer(["wasm-objdump", "-d", str(module)]),
        "peer_wasm_decompile_whole_s": _peer(["wasm-decompile", str(module), "-o", "/dev/null"]),
    }


def _fmt(v) -> str:
    if v is None:
        return "n/a (not installed or failed)"
    return f"{v * 1000:.1f} ms" if isinstance(v, float) else f"{v:,}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--module", type=Path, default=DEFAULT)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="the bundled zstd release, 20 functions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    module, sample = (SMOKE, 20) if args.smoke else (args.module, args.sample)
    if not module.exists():
        print(f"no module at {module}", file=sys.stderr)
        return 1
    r = measure(module, sample)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(
        f"{r['module']}: {r['bytes']:,} bytes, {r['functions']:,} defined functions "
        f"(ingest {r['ingest_s']:.1f} s)"
    )
    print(f"  first call on the version (cold)      {_fmt(r['first_call_s'])}")
    print(
        f"  one function, warm (n={r['sampled']}): median {_fmt(r['median_s'])}, "
        f"p90 {_fmt(r['p90_s'])}, worst {_fmt(r['worst_s'])}  ({r['truncated']} placeholders)"
    )
    print(
        f"  call graph: cold {_fmt(r['callgraph_cold_s'])}, cached {_fmt(r['callgraph_cached_s'])}"
        f"  ({r['callgraph_nodes']:,} nodes, {r['callgraph_edges']:,} edges)"
    )
    print(f"  peer: wasm-objdump -d, whole module    {_fmt(r['peer_wasm_objdump_whole_s'])}")
    print(f"  peer: wasm-decompile, whole module     {_fmt(r['peer_wasm_decompile_whole_s'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
