"""Ingest speed and memory on the largest corpus modules, next to `wasm-objdump -d` and
`wasm-tools validate` in the same run.

    python benchmarks/ingest.py [--corpus ../shared/corpus] [--top 2 | --all] [--file X.wasm ...] [--smoke]
    python benchmarks/ingest.py --all --same-as-pure   # the compiled twins store what the pure code does

Each kbtool ingest runs in a fresh process into a fresh KB (decode, facts, hashes, identities,
KB writes, commit); peak memory is that process's max RSS. `wasm-objdump -d FILE > /dev/null`
(wabt) and `wasm-tools validate FILE` (native parse + validation) are timed on the same file
right after; ``objdump x`` and ``validate x`` are kbtool's time over theirs (the goal:
<= 0.5x objdump, <= 10x validate). The decoder path (``compiled``/``pure``, see
:mod:`kbtool.wasm.active`) and the load average are printed. ``--smoke``: the bundled demo release (0.6 MB)
only (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS  # noqa: E402

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
CHILD = r"""
import json, sys, time, resource
from kbtool.services.ingest import ingest_file
from kbtool.kb.db import open_rw
t0 = time.perf_counter()
c0 = time.process_time()
conn = open_rw(sys.argv[2])
res = ingest_file(conn, sys.argv[1], label="bench", carry=False)
conn.close()
secs = time.perf_counter() - t0
ch = resource.getrusage(resource.RUSAGE_CHILDREN)  # decode workers, if any
cpu = time.process_time() - c0 + ch.ru_utime + ch.ru_stime
from kbtool.wasm import active
print(json.dumps({"seconds": secs, "cpu": cpu, "decoder": active.PATH, "instructions": res.instructions, "functions": res.imported + res.defined,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def kbtool_ingest(path: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), str(Path(tmp) / "kb.db")],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _timed(cmd: list[str]) -> tuple[float, float] | None:
    """(wall, CPU user+sys) seconds of ``cmd`` with its output discarded; None when missing."""
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [exe, *cmd[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def objdump(path: Path) -> tuple[float, float] | None:
    return _timed(["wasm-objdump", "-d", str(path)])


def validate(path: Path) -> tuple[float, float] | None:
    return _timed(["wasm-tools", "validate", str(path)])


def _x(a: float, b: float) -> float:
    """``a / b``; NaN when ``b`` is zero or unknown (a peer too fast for the clock)."""
    return a / b if b else float("nan")


def _decoder_path() -> str:
    try:
        from kbtool.wasm import active
    except ImportError:
        return "pure"
    return active.PATH


def same_as_pure(files: list[Path]) -> int:
    """One line per module: rows compared, CPU of each side, identical or the difference."""
    from testkit.kbcompare import same_as_pure as check

    bad = 0
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            n, diff, tc, tp = check(f, Path(tmp))
        status = "identical" if diff is None else f"DIFFERENT: {diff}"
        print(
            f"{f.name[:46]:46} {n:>9} rows  cpu compiled {tc:6.2f} s  pure {tp:6.2f} s  {status}",
            flush=True,
        )
        bad += diff is not None
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--top", type=int, default=2, help="how many of the largest corpus modules")
    ap.add_argument("--all", action="store_true", help="every corpus module")
    ap.add_argument("--file", type=Path, action="append", default=[])
    ap.add_argument("--smoke", action="store_true", help="the demo release only, a few seconds")
    ap.add_argument(
        "--same-as-pure",
        action="store_true",
        help="instead: ingest each module through the compiled twins and through the pure"
        " code (fresh KBs) and compare every stored table; exit 1 on a difference",
    )
    args = ap.parse_args(argv)
    files = [DEMO] if args.smoke else list(args.file)
    if not files:
        if not (args.corpus / "MANIFEST.json").is_file():
            print(f"corpus not found: {args.corpus}", file=sys.stderr)
            return 2
        manifest = json.loads((args.corpus / "MANIFEST.json").read_text())
        mods = sorted(manifest["modules"], key=lambda m: -m["size"])
        mods = [m for m in mods if m["file"].endswith(".wasm")]
        files = [args.corpus / m["file"] for m in (mods if args.all else mods[: args.top])]
    if args.same_as_pure:
        return same_as_pure(files)
    print(
        f"decoder: {_decoder_path()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        f"; {os.cpu_count()} cores"
    )
    print(
        "seconds: wall, then CPU (user+sys; on a busy machine wall also counts the wait for a"
        " core); x = kbtool over peer (goal: <= 0.5 x objdump, <= 10 x validate)"
    )
    print(
        f"{'module':46} {'MB':>5} {'kbtool s':>8} {'MB/s':>5} {'Minstr/s':>8} {'peak MiB':>8}"
        f" {'cpu s':>6} {'objdump s':>9} {'cpu s':>6} {'validate s':>10} {'cpu s':>6}"
        f" {'x objdump':>9} {'cpu':>5} {'x validate':>10} {'cpu':>5} decoder"
    )
    for f in files:
        mb = f.stat().st_size / 1e6
        k = kbtool_ingest(f)
        o = objdump(f) or (float("nan"), float("nan"))
        v = validate(f) or (float("nan"), float("nan"))
        print(
            f"{f.name[:46]:46} {mb:5.1f} {k['seconds']:8.2f} {mb / k['seconds']:5.1f}"
            f" {k['instructions'] / k['seconds'] / 1e6:8.2f} {k['peak_rss_mib']:8.0f} {k['cpu']:6.2f}"
            f" {o[0]:9.2f} {o[1]:6.2f} {v[0]:10.2f} {v[1]:6.2f}"
            f" {_x(k['seconds'], o[0]):9.2f} {_x(k['cpu'], o[1]):5.2f}"
            f" {_x(k['seconds'], v[0]):10.1f} {_x(k['cpu'], v[1]):5.1f} {k['decoder']}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
