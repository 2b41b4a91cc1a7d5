"""The interactive benchmark's peers and ingest sections: whole-module code peers
(wasm-objdump, wasm-decompile, wasm2wat) and a fresh ingest of each corpus module beside
``wasm-objdump -d`` / ``wasm-tools validate`` (``benchmarks/interactive.py`` is the entry point)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.interactive_common import CORPUS, ROOT, env

# ---------------------------------------------------------------- peers and ingest


def timed(cmd: list[str], **kw) -> float | str | None:
    """Seconds ``cmd`` took; None when it is not installed; ``"failed (exit N)"`` when it
    fails on the module (wasm-decompile 1.0.x aborts on ffmpeg's threads module)."""
    if shutil.which(cmd[0]) is None and not Path(cmd[0]).exists():
        return None
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    secs = round(time.perf_counter() - t, 2)
    return secs if r.returncode == 0 else f"failed (exit {r.returncode}) after {secs} s"


def peers(module: Path, kb: Path, root: Path) -> dict:
    out = {
        "wasm-objdump -d": timed(["wasm-objdump", "-d", str(module)]),
        "wasm-decompile": timed(["wasm-decompile", "--enable-all", str(module), "-o", "/dev/null"]),
        "wasm2wat": timed(["wasm2wat", "--enable-all", str(module), "-o", "/dev/null"]),
    }
    t = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "kbtool.cli",
            "code",
            "--db",
            str(kb),
            "1",
            "--all",
            "-o",
            os.devnull,
        ],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
    )
    out["kbtool code --all (C)"] = round(time.perf_counter() - t, 2) if r.returncode == 0 else None
    return out


def _cpu_timed(cmd: list[str]) -> tuple[float | None, float | None]:
    """(wall, CPU = user + sys) seconds of ``cmd``; (None, None) when it is missing or fails.
    CPU time says what the work costs when the machine is busy (wall then also counts the
    wait for a core)."""
    if shutil.which(cmd[0]) is None:
        return None, None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        return None, None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(wall, 2), round(cpu, 2)


def decoder_path(root: Path) -> str:
    """``compiled`` (the mypyc twin of the decoder) or ``pure``: what an ingest runs."""
    r = subprocess.run(
        [sys.executable, "-P", "-c", "from kbtool.wasm import active; print(active.PATH)"],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
    )
    return r.stdout.strip() or "?"


def ingest_row(module: Path, root: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.db"
        t = time.perf_counter()
        r = subprocess.run(
            [
                "/usr/bin/time",
                "-f",
                "%M %U %S",
                sys.executable,
                "-P",
                "-m",
                "kbtool.cli",
                "--db",
                str(db),
                "ingest",
                str(module),
            ],
            cwd=root,
            env=env(root),
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t
        last = r.stderr.strip().splitlines()[-1].split() if r.returncode == 0 else []
        rss, cpu = (last[0], float(last[1]) + float(last[2])) if len(last) == 3 else ("0", None)
    obj, obj_cpu = _cpu_timed(["wasm-objdump", "-d", str(module)])
    val, val_cpu = _cpu_timed(["wasm-tools", "validate", "--features", "all", str(module)])
    return {
        "module": module.name,
        "mb": round(module.stat().st_size / 1e6, 1),
        "ingest_s": round(wall, 2) if r.returncode == 0 else None,
        "ingest_cpu_s": round(cpu, 2) if cpu is not None else None,
        "ingest_peak_mib": round(int(rss) / 1024) if rss.isdigit() else None,
        "objdump_s": obj,
        "objdump_cpu_s": obj_cpu,
        "validate_s": val,
        "validate_cpu_s": val_cpu,
    }


def corpus_modules(smoke: bool) -> list[Path]:
    if smoke:
        return [ROOT / "kbtool" / "demo" / "zstd-1.5.6.wasm"]
    try:
        manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
        entries = (
            manifest
            if isinstance(manifest, list)
            else manifest.get("files") or manifest.get("modules") or []
        )
        paths = [CORPUS / (e["path"] if isinstance(e, dict) else e) for e in entries]
    except (OSError, ValueError, KeyError, TypeError):
        paths = []
    paths = [x for x in paths if x.suffix == ".wasm" and x.exists()] or sorted(
        CORPUS.rglob("*.wasm")
    )
    return sorted(set(paths), key=lambda x: x.stat().st_size)
