"""``kbtool deep`` through the service (``kbtool.services.deep.run_deep``), offline and with a
provider backend against the local fake server.

    python benchmarks/deep.py [--module PATH] [--functions 200] [--latency 0.2] [--json]
    python benchmarks/deep.py --smoke     # the bundled zstd demo release, 12 functions

The module is ingested for real into a temporary KB. Then the first ``--functions`` defined
functions (index order) are analysed twice, each run with ``force`` on its own copy of the KB:

1. offline: per-function time (lift, clean, understanding, record, events, then the offline
   naming pass), the share of functions whose cleaned C compiles (``gcc -fsyntax-only
   -fwrapv -include kbtool/lift/prelude.h``, one file per function) and the share of
   variables renamed;
2. provider_b through the real ``openai`` SDK against ``testkit/llm_server.py`` on
   127.0.0.1 (CANNED answers: plumbing, not a model), each answer delayed by ``--latency``
   seconds to stand in for a model; calls run 4 at a time. Reported: per-function time, the
   share of understandings written by the provider, fallbacks, the compile share;
3. resume: `kbtool deep --backend provider_b -f ...` in a subprocess, SIGKILLed once half of
   its calls were sent, then run again: the calls the re-run sent against the prompts the
   first run left without a kept answer (they must be equal).

Peer in the same run: ``wasm-decompile`` (wabt) over the whole module, per defined function.
Figures are wall-clock seconds on this machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.lift import prelude_path  # noqa: E402
from kbtool.services.deep import run_deep  # noqa: E402
from kbtool.services.ingest import ingest_bytes  # noqa: E402

_CORPUS = next(
    (p / "shared" / "corpus" for p in ROOT.parents if (p / "shared" / "corpus").is_dir()),
    ROOT.parent / "shared" / "corpus",
)
DEFAULT = _CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
SMOKE = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _compiles(sources: list[str], workdir: Path) -> int | None:
    """How many of ``sources`` pass gcc -fsyntax-only with the prelude (None: no gcc)."""
    if shutil.which("gcc") is None:
        return None
    ok = 0
    for i, src in enumerate(sources):
        path = workdir / f"f{i}.c"
        path.write_text(src)
        cmd = ["gcc", "-fsyntax-only", "-fwrapv", "-include", str(prelude_path()), str(path)]
        ok += subprocess.run(cmd, capture_output=True, check=False).returncode == 0
    return ok


def _run(db: Path, vid: int, indices: list[int], backend: str, env: dict | None) -> dict:
    conn = open_rw(db)
    try:
        t = time.perf_counter()
        res = run_deep(conn, vid, functions=indices, force=True, backend=backend, env=env)
        took = time.perf_counter() - t
        records = [queries.get_analysis(conn, f["stable_id"]) for f in res["functions"]]
    finally:
        conn.close()
    return {"res": res, "seconds": took, "clean": [r["clean_c"] for r in records]}


def _peer_decompile(module: Path) -> float | None:
    if not shutil.which("wasm-decompile"):
        return None
    t = time.perf_counter()
    done = subprocess.run(
        ["wasm-decompile", str(module), "-o", "/dev/null"], capture_output=True, check=False
    )
    return time.perf_counter() - t if done.returncode == 0 else None


def measure(module: Path, n: int, latency: float) -> dict:
    from testkit.llm_server import FakeLLMServer

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = work / "kb.db"
        conn = open_rw(base)
        t = time.perf_counter()
        vid = ingest_bytes(conn, module.read_bytes(), label=module.stem).version_id
        ingest_s = time.perf_counter() - t
        defined = queries.list_functions(conn, vid, False)
        conn.close()
        indices = [f["index"] for f in defined[:n]]
        off_db, llm_db = work / "offline.db", work / "provider.db"
        shutil.copy(base, off_db)
        shutil.copy(base, llm_db)
        off = _run(off_db, vid, indices, "offline", None)
        with FakeLLMServer([("sleep", latency)] * len(indices) if latency else []) as srv:
            env = {
                "PROVIDER_B_API_KEY": "bench-key",
                "PROVIDER_B_BASE_URL": srv.url + "/v1",
                "PROVIDER_B_MODEL": "fake-canned",
            }
            llm = _run(llm_db, vid, indices, "provider_b", env)
            requests = len(srv.requests)
        res_db = work / "resume.db"
        shutil.copy(base, res_db)
        resume = _resume(res_db, vid, indices, latency)
        (work / "off").mkdir()
        (work / "llm").mkdir()
        peer = _peer_decompile(module)
        o, p = off["res"], llm["res"]
        return {
            "module": module.name,
            "defined_functions": len(defined),
            "ingest_s": ingest_s,
            "functions": len(indices),
            "offline_s_per_function": off["seconds"] / max(1, len(indices)),
            "offline_done": o["done"] + o["truncated"],
            "offline_compiles": _compiles(off["clean"], work / "off"),
            "variables": o["variables"],
            "renamed_variables": o["renamed_variables"],
            "offline_names_written": (o.get("naming") or {}).get("written", 0),
            "provider_latency_s": latency,
            "provider_s_per_function": llm["seconds"] / max(1, len(indices)),
            "provider_requests": requests,
            "provider_understood": p["understood_by_provider"],
            "provider_fallbacks": p["understanding_fallbacks"],
            "provider_compiles": _compiles(llm["clean"], work / "llm"),
            "provider_names_written": (p.get("naming") or {}).get("written", 0),
            "resume": resume,
            "peer_wasm_decompile_s_per_function": (
                peer / max(1, len(defined)) if peer is not None else None
            ),
        }


def _resume(db: Path, vid: int, indices: list[int], latency: float) -> dict:
    """Kill `kbtool deep` half way (SIGKILL), run it again; what each run sent."""
    import os
    import signal

    from testkit.llm_server import FakeLLMServer

    cmd = [
        sys.executable,
        "-m",
        "kbtool.cli",
        "deep",
        str(vid),
        "--backend",
        "provider_b",
        "--json",
        "--db",
        str(db),
    ] + [a for i in indices for a in ("-f", str(i))]

    def env(srv: FakeLLMServer) -> dict:
        return {
            **os.environ,
            "PROVIDER_B_API_KEY": "bench-key",
            "PROVIDER_B_BASE_URL": srv.url + "/v1",
            "PROVIDER_B_MODEL": "fake-canned",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    with FakeLLMServer(delay=max(latency, 0.05)) as srv:
        proc = subprocess.Popen(
            cmd, env=env(srv), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        t0 = time.monotonic()
        while (
            len(srv.requests) < len(indices) // 2
            and proc.poll() is None
            and time.monotonic() - t0 < 600
        ):
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        sent1 = len(srv.requests)
    conn = open_rw(db)
    try:
        kept = conn.execute("SELECT COUNT(*) FROM agent_answers WHERE variant = 'deep'").fetchone()[
            0
        ]
        recorded = len(set(queries.deep_done(conn, vid)) & set(indices))
    finally:
        conn.close()
    with FakeLLMServer() as srv:
        done = subprocess.run(cmd, env=env(srv), cwd=ROOT, capture_output=True, text=True)
        sent2 = len(srv.requests)
    return {
        "killed_after_sent": sent1,
        "answers_kept": kept,
        "records_written": recorded,
        "rerun_sent": sent2,
        "unanswered": len(indices) - kept,
        "rerun_ok": done.returncode == 0,
    }


def _pct(a: int | None, b: int) -> str:
    return "n/a (no gcc)" if a is None else f"{a}/{b} ({100 * a / max(1, b):.1f}%)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--module", type=Path, default=DEFAULT)
    ap.add_argument("--functions", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.2, help="fake model latency, seconds")
    ap.add_argument("--smoke", action="store_true", help="the bundled zstd release, 12 functions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    module, n, latency = (
        (SMOKE, 12, 0.0) if args.smoke else (args.module, args.functions, args.latency)
    )
    if not module.exists():
        print(f"no module at {module}", file=sys.stderr)
        return 1
    r = measure(module, n, latency)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    k = r["functions"]
    peer = r["peer_wasm_decompile_s_per_function"]
    print(f"{r['module']}: {r['defined_functions']:,} defined functions, deep on the first {k}")
    print(
        f"  offline      {r['offline_s_per_function'] * 1000:.1f} ms/function, compiles "
        f"{_pct(r['offline_compiles'], k)}, variables renamed "
        f"{_pct(r['renamed_variables'], r['variables'])}, names written "
        f"{r['offline_names_written']}"
    )
    print(
        f"  provider_b   {r['provider_s_per_function'] * 1000:.1f} ms/function with "
        f"{r['provider_latency_s']:g} s fake latency, 4 calls at a time "
        f"({r['provider_requests']} requests), understanding by the provider "
        f"{_pct(r['provider_understood'], k)}, {r['provider_fallbacks']} fallbacks, compiles "
        f"{_pct(r['provider_compiles'], k)}, names written {r['provider_names_written']}"
    )
    rs = r["resume"]
    print(
        f"  resume       `kbtool deep` SIGKILLed after {rs['killed_after_sent']} calls sent: "
        f"{rs['answers_kept']} answers kept, {rs['records_written']} records written; re-run "
        f"sent {rs['rerun_sent']} (unanswered: {rs['unanswered']}) "
        f"{'OK' if rs['rerun_ok'] and rs['rerun_sent'] == rs['unanswered'] else 'MISMATCH'}"
    )
    print(
        "  peer: wasm-decompile, whole module   "
        + (f"{peer * 1000:.2f} ms/function" if peer is not None else "n/a (not installed)")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
