"""What the interactive benchmark's modules share: paths, goals, figure helpers and the
``kbtool`` subprocess runner (``benchmarks/interactive.py`` is the entry point)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

# a step's CPU key and the TUI's full collections: the TUI child's (it imports no harness)
from benchmarks.interactive_tui import CPU as CPU
from benchmarks.interactive_tui import GC as GC

ROOT = Path(__file__).resolve().parents[1]
BIG = Path.home() / ".cache" / "kbtool-big"
NEW = BIG / "package" / "dist" / "esm" / "ffmpeg-core.wasm"  # 0.12.10
OLD = BIG / "v0126" / "package" / "dist" / "esm" / "ffmpeg-core.wasm"  # 0.12.6
DEFAULT_KB = Path.home() / ".cache" / "kbtool-interactive" / "ffmpeg.db"
CORPUS = ROOT.parent / "shared" / "corpus"
GC_LONGEST = "longest collection pause, CPU ms"  # a server's, any generation (KBTOOL_GC_TRACE)
GOALS = {"warm_p95_ms": 100.0, "cold_p95_ms": 300.0, "diff_ms": 250.0}
WARM = 8  # warm samples per step and process


# ---------------------------------------------------------------- figures


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, math.ceil(len(s) * p / 100) - 1)] if s else float("nan")


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(pct(values, 50), 1),
        "p95": round(pct(values, 95), 1),
        "max": round(max(values), 1),
    }


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load average {a:.2f} {b:.2f} {c:.2f} on {os.cpu_count()} cores"


def merge(runs: list[dict[str, dict[str, list[float]]]]) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        for step, kinds in r.items():
            for kind, xs in kinds.items():
                out.setdefault(step, {}).setdefault(kind, []).extend(xs)
    return out


def env(root: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def start_serve(kb: Path, root: Path, port: int, stderr=subprocess.PIPE) -> subprocess.Popen:
    """A real ``kbtool serve`` of ``root``'s checkout on ``kb`` at 127.0.0.1:``port``."""
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "kbtool.cli", "serve", "--db", str(kb), "--port", str(port)],
        cwd=root,
        env=env(root),
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def kbtool(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-P", "-m", "kbtool.cli", *args],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
        check=check,
    )


def fetch() -> None:
    """``npm pack`` the two ffmpeg releases into ~/.cache/kbtool-big (never in tests)."""
    for version, dest in (("0.12.10", BIG), ("0.12.6", BIG / "v0126")):
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / "package" / "dist" / "esm" / "ffmpeg-core.wasm"
        if target.exists():
            continue
        subprocess.run(["npm", "pack", f"@ffmpeg/core-mt@{version}"], cwd=dest, check=True)
        subprocess.run(["tar", "xzf", f"ffmpeg-core-mt-{version}.tgz"], cwd=dest, check=True)


def stale_kb(kb: Path, root: Path) -> str | None:
    """Why the checkout at ``root`` cannot read the kept KB as it is (another schema), or None."""
    run = kbtool(root, "--db", str(kb), "versions", check=False)
    return None if run.returncode == 0 else (run.stderr.strip().splitlines() or ["failed"])[-1]


def build_kb(kb: Path, root: Path, new: Path, old: Path | None) -> None:
    kb.parent.mkdir(parents=True, exist_ok=True)
    for label, path in (("new", new), ("old", old)):
        if path is None:
            continue
        t = time.perf_counter()
        kbtool(
            root,
            "--db",
            str(kb),
            "ingest",
            str(path),
            "--label",
            path.parent.parent.parent.name
            if label == "new" and path.name == "ffmpeg-core.wasm"
            else path.stem + f"-{label}",
        )
        print(
            f"  ingested {path.name} ({label}) in {time.perf_counter() - t:.1f} s", file=sys.stderr
        )
        if label == "new":
            t = time.perf_counter()
            kbtool(root, "--db", str(kb), "analyze", "1")
            print(f"  analysed version 1 in {time.perf_counter() - t:.1f} s", file=sys.stderr)
