"""Decode benchmark: kbtool.wasm.analyze_module next to ``wasm-objdump -d`` on one file.

    python benchmarks/decode.py [FILE ...] [--runs 3] [--workers 1] [--no-objdump]
                                [--crosscheck] [--compare] [--smoke]

Default FILE: the largest module of ../shared/corpus. Prints, per file: best-of-N seconds
of ``analyze_module`` (parse + decode + facts + hashes), MB/s, instructions/s, peak RSS of
this process, and the wall time of ``wasm-objdump -d FILE > /dev/null`` in the same run.
The decoder path used (``compiled``: the mypyc twin, ``pure``; ``KBTOOL_DECODE``) is printed.
``--compare`` also times the decode loop alone (``analyze_range`` over every body, same
context) with the pure decoder and with the compiled twin, and checks their facts are equal.
``--crosscheck`` also compares every function's mnemonics with wasm-objdump's. ``--smoke``: the
bundled demo release (0.6 MB), one run, cross-checked (the test suite runs it).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbtool.wasm import active, analyze_module, decoder, facts  # noqa: E402
from testkit.wasmbuild import objdump_mnemonics  # noqa: E402

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _corpus() -> Path:
    for p in (ROOT.parent / "shared" / "corpus", Path("/work/shared/corpus")):
        if p.is_dir():
            return p
    raise SystemExit("corpus not found; pass FILE")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _objdump_seconds(path: Path) -> float | None:
    if shutil.which("wasm-objdump") is None:
        return None
    t = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        subprocess.run(["wasm-objdump", "-d", str(path)], stdout=devnull, check=True)
    return time.perf_counter() - t


def _crosscheck(path: Path, analysis) -> str:
    ref = objdump_mnemonics(path)
    defined = [f for f in analysis.functions if not f.imported]
    same = sum(1 for f in defined if f.mnemonics() == ref.get(f.index))
    n_ref = sum(len(v) for v in ref.values())
    n_me = sum(f.instr_count for f in defined)
    pct = 100.0 * same / len(defined) if defined else 100.0
    return (
        f"cross-check: {same}/{len(defined)} functions identical ({pct:.2f}%), "
        f"instructions {n_me} vs wasm-objdump {n_ref}"
    )


def _compare(data: bytes, runs: int) -> str:
    """Best-of-``runs`` seconds of the decode loop, pure and compiled, and whether they agree."""
    compiled = active.load_compiled()
    if compiled is None:
        return f"compare: no compiled decoder ({active.compiled_state()}); build it first"
    ctx = facts._Ctx(data, facts.parse_module(data))
    n = len(ctx.m.code)
    best: dict[str, float] = {}
    res = {}
    for name, mod in (("pure", decoder), ("compiled", compiled)):
        for _ in range(max(1, runs)):
            res[name] = None
            gc.collect()
            t = time.perf_counter()
            res[name] = mod.analyze_range(ctx, 0, n)
            dt = time.perf_counter() - t
            best[name] = min(best.get(name, dt), dt)
    same = "identical" if res["pure"] == res["compiled"] else "DIFFERENT"
    return (
        f"decode loop alone: pure {best['pure']:.2f} s, compiled {best['compiled']:.2f} s "
        f"({best['pure'] / best['compiled']:.2f}x faster); facts {same}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-objdump", action="store_true")
    ap.add_argument("--crosscheck", action="store_true")
    ap.add_argument("--compare", action="store_true", help="pure vs compiled decode loop")
    ap.add_argument("--smoke", action="store_true", help="the demo release, one run, a few seconds")
    args = ap.parse_args(argv)
    if args.smoke:
        args.files, args.runs, args.crosscheck = args.files or [DEMO], 1, True
    files = args.files or [max(_corpus().rglob("*.wasm"), key=lambda p: p.stat().st_size)]
    for path in files:
        data = path.read_bytes()
        best = None
        analysis = None
        for _ in range(max(1, args.runs)):
            analysis = None
            gc.collect()
            t = time.perf_counter()
            analysis = analyze_module(data, workers=args.workers)
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        n_instr = sum(f.instr_count for f in analysis.functions)
        mb = len(data) / 1e6
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"{path.name}: {mb:.1f} MB, {len(analysis.functions)} functions, "
            f"{n_instr:,} instructions (load average {load:.2f}, {os.cpu_count()} CPUs, "
            f"decoder {active.PATH})"
        )
        print(
            f"  kbtool analyze_module (workers={args.workers}, best of {args.runs}): "
            f"{best:.2f} s  {mb / best:.1f} MB/s  {n_instr / best / 1e6:.2f} M instr/s  "
            f"peak RSS {_peak_rss_mb():.0f} MB"
        )
        if not args.no_objdump:
            od = _objdump_seconds(path)
            if od is None:
                print("  wasm-objdump -d: not on PATH")
            else:
                print(
                    f"  wasm-objdump -d > /dev/null: {od:.2f} s  "
                    f"(kbtool is {od / best:.1f}x faster)"
                )
        if args.crosscheck:
            print("  " + _crosscheck(path, analysis))
        if args.compare:
            print("  " + _compare(data, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
