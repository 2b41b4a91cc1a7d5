"""Every step a person waits for, cold and warm, on the largest module: the real TUI (Pilot),
a real ``kbtool serve`` and the real MCP stdio client (issue 30).

    python benchmarks/interactive.py                 # the ffmpeg KB (built once, kept in ~/.cache)
    python benchmarks/interactive.py --fetch         # npm pack the two ffmpeg releases first
    python benchmarks/interactive.py --ingest        # + ingest beside wasm-objdump -d / wasm-tools validate
    python benchmarks/interactive.py --only tui,api  # some sections (tui, api, mcp, peers, ingest)
    python benchmarks/interactive.py --json          # the figures as JSON
    python benchmarks/interactive.py --smoke         # the demo KB, one run, no targets (the tests run it)
    python benchmarks/interactive.py --root /tmp/base  # measure another checkout (a baseline)

The KB: @ffmpeg/core-mt 0.12.10 (32.7 MB, 22,521 defined functions) ingested as version 1 and
analysed (``kbtool analyze 1``), then 0.12.6 ingested as version 2 (stored pair 1 -> 2; the
reversed pair 2 -> 1 is not stored). Built once at ``--kb`` (default
~/.cache/kbtool-interactive/ffmpeg.db) from the modules in ~/.cache/kbtool-big (``--fetch``
gets them with ``npm pack``; the tests never do).

"Cold" is the first time a step runs in a fresh process (a new TUI, a new server, a new MCP
server: ``--runs`` of each); "warm" is the same kind of step again in that process (another
function of the same size class, the same route again). Each figure is p50 / p95 / max in ms
over all samples of its kind, key (or request) to the frame (or the last byte) that shows the
answer. The machine's load average is printed before and after each section, and the TUI's
CPU ms per step (the process, every thread) beside its wall time: on a busy machine wall time
also counts the wait for a core. "open code (largest)" is its first screen (a huge function's
disassembly, labelled, while its C is lifted), "C of the largest on screen" when the C replaces
it; "c pages" / "wasm pages (largest)" are the studio's 300-line windows of it (the first cold),
with the server's extra memory for the first. Peers: datasette
serving the same KB file read-only for the API; ``wasm-objdump -d`` and ``wasm-decompile`` of the
whole module for code (neither shows one function alone); ``wasm-tools validate`` for ingest.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# never import this folder's mcp.py as the MCP SDK
sys.path[:] = [x for x in sys.path if Path(x or ".").resolve() != ROOT / "benchmarks"]
# this checkout's sibling modules (benchmarks.interactive_*), then off the path again: the TUI
# child imports kbtool from the checkout measured (--root, first on its PYTHONPATH)
sys.path.insert(0, str(ROOT))
from benchmarks import interactive_common, interactive_servers  # noqa: E402
from benchmarks.interactive_common import (  # noqa: E402
    CPU,
    DEFAULT_KB,
    GC,
    GOALS,
    NEW,
    OLD,
    WARM,
    build_kb,
    env,
    fetch,
    kbtool,
    load,
    merge,
    stale_kb,
    stats,
)
from benchmarks.interactive_ingest import (  # noqa: E402
    corpus_modules,
    decoder_path,
    ingest_row,
    peers,
)
from benchmarks.interactive_servers import (  # noqa: E402
    api_runs,
    datasette_runs,
    mcp_cpu_table,
    mcp_runs,
)
from benchmarks.interactive_tui import (  # noqa: E402
    BG_PREP,
    FROZEN,
    FULL_STEP,
    FULL_WHERE,
    GC_STEP,
    UNFROZEN,
)

TUI_EXTRA = (CPU, GC_STEP, FULL_STEP)  # a step's CPU and collector columns: tables of their own

sys.path.remove(str(ROOT))
TUI_CHILD = ROOT / "benchmarks" / "interactive_tui.py"  # a fresh process per TUI run


def set_warm(n: int) -> None:
    """Warm samples per step and process, here and in the modules that read it."""
    global WARM
    WARM = interactive_common.WARM = interactive_servers.WARM = n


# ---------------------------------------------------------------- the KB


def plan(kb: Path) -> dict:
    """What to open: functions by size class, a modified pair, a stored and an unstored pair."""
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    vids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
    v = vids[0]
    rows = conn.execute(
        "SELECT idx, body_size, instr_count FROM functions WHERE version_id = ?"
        " AND imported = 0 ORDER BY body_size, idx",
        (v,),
    ).fetchall()
    n = len(rows)

    def around(q: float, k: int) -> list[int]:
        i = min(n - 1, int(n * q))
        return [rows[max(0, min(n - 1, i + d))][0] for d in range(k)]

    out = {
        "version": v,
        "functions": n,
        "small": around(0.10, WARM + 1),
        "median": around(0.50, WARM + 1),
        "largest": [rows[-1][0]],
        "huge": [r[0] for r in rows[::-1][: WARM + 1]],  # the largest first
        "largest_body": rows[-1][1],
        "largest_instr": rows[-1][2],
    }
    if len(vids) > 1:
        w = vids[1]
        # joined here, not in SQL: the planner's join by stable_id took ~50 s on ffmpeg
        q = "SELECT stable_id, idx, body_hash, body_size FROM functions WHERE version_id = ? AND imported = 0"
        later = {sid: (idx, h) for sid, idx, h, _n in conn.execute(q, (w,))}
        pairs = [
            (idx, later[sid][0])
            for sid, idx, h, _n in sorted(conn.execute(q, (v,)), key=lambda r: (r[3], r[1]))
            if sid in later and later[sid][1] != h
        ][:400]
        step = max(1, len(pairs) // (WARM + 1))
        out["fdiff"] = [(v, a, w, b) for a, b in pairs[::step][: WARM + 1]]
        out["pair_stored"] = (v, w)
        out["pair_unstored"] = (w, v)
    conn.close()
    return out


def prepare_code(kb: Path, root: Path) -> None:
    """The KB's kept code and diff caches as the measured checkout keeps them: ``python -m
    kbtool.services.code_store`` and ``python -m kbtool.services.diff.warm`` (what ``kbtool
    ingest``/``analyze`` start in the background for a big module). The KB is kept across
    checkouts, and a kept C or whole disassembly is judged by the digest of the code that
    makes it (a kept diff by its format and triage rules): without this, the first process
    of a run after a change to the lifter, the decoder or the code services lifted and
    rendered again what a user's ingest had kept (session 30: 370 ms for the whole
    disassembly in the first fresh server, 19 ms in the next two). Nothing is made when all
    is kept already (a second run of the same checkout)."""
    for module in ("kbtool.services.code_store", "kbtool.services.diff.warm"):
        t = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-P", "-m", module, "--db", str(kb)],
            cwd=root,
            env=env(root),
            capture_output=True,
            text=True,
        )
        said = "; ".join(run.stdout.strip().splitlines()) or run.stderr.strip()[-200:]
        print(f"  {module} ({time.perf_counter() - t:.1f} s): {said}", file=sys.stderr)


def tui_runs(kb: Path, p: dict, runs: int, root: Path, gc_policy: str = "kbtool") -> dict:
    out = []
    for _ in range(runs):
        r = subprocess.run(
            [
                sys.executable,
                "-P",
                str(TUI_CHILD),
                "--kb",
                str(kb),
                "--plan",
                json.dumps(p),
                "--gc",
                gc_policy,
            ],
            cwd=root,
            env=env(root),
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if r.returncode:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit("the TUI child failed")
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return merge(out)


# ---------------------------------------------------------------- report


CODE_STEPS = ("open code", "C of", "code page", "disasm", "c pages", "wasm pages", "studio")
CODE_STEPS += ("get_disassembly", "get_lifted_c")


def table(
    title: str, figures: dict, peer: dict | None = None, goal: str = "", code_peer: str = ""
) -> list[str]:
    """The rows of one section; ``peer``: datasette's figures by step; ``code_peer``: the
    whole-module code peers, shown beside every code step (neither shows one function)."""
    lines = [
        title,
        f"  {'step':<30} {'cold p50':>9} {'p95':>8} {'max':>8}   {'warm p50':>9} {'p95':>8} {'max':>8}"
        + ("   peer (warm p50)" if peer or code_peer else ""),
    ]
    for step, kinds in figures.items():
        if step in ("peak RSS MiB", GC, FULL_WHERE) or step.startswith(TUI_EXTRA):
            continue
        if step in (FROZEN, UNFROZEN):
            lines.append(f"  {step} (collector): {max(kinds['cold']):,.0f}")
            continue
        if "MiB" in step:  # memory, not time
            lines.append(f"  {step}: {max(kinds.get('cold', [0])):.1f}")
            continue
        c, w = stats(kinds.get("cold", [])), stats(kinds.get("warm", []))

        def f(s, k):
            return f"{s[k]:>8.1f}" if k in s else f"{'-':>8}"

        row = (
            f"  {step:<30} {f(c, 'p50'):>9} {f(c, 'p95')} {f(c, 'max')}   {f(w, 'p50'):>9} {f(w, 'p95')}"
            f" {f(w, 'max')}"
        )
        base = step.split(" (")[0]
        if peer and base in peer:
            ps = stats(peer[base].get("warm", []))
            row += f"   datasette {ps['p50']:.1f} ms (cold {stats(peer[base]['cold'])['p50']:.1f})"
        elif code_peer and step.startswith(CODE_STEPS):
            row += f"   {code_peer}"
        lines.append(row)
    if "peak RSS MiB" in figures:
        lines.append(
            f"  peak RSS of the TUI process: {max(figures['peak RSS MiB']['cold']):.0f} MiB"
        )
    if GC in figures:
        xs = [x for x in figures[GC]["cold"] if x]
        st = stats(xs)
        lines.append(
            f"  full collections in the process: {len(xs)}"
            + (f" (ms each: p50 {st['p50']}, max {st['max']})" if xs else "")
            + (" (CPU)" if title.startswith("TUI CPU") else " (wall)")
        )
    if goal:
        lines.append(goal)
    return lines


def gc_tables(figures: dict) -> list[str]:
    """The TUI's collector per step: its pauses' CPU ms (every generation) and its full
    collections, and where each full one landed."""
    out: list[str] = []
    for prefix, title in (
        (GC_STEP, "TUI collector pauses per step, CPU ms (every generation)"),
        (FULL_STEP, "TUI full (generation 2) collections per step"),
    ):
        rows = {k[len(prefix) :]: v for k, v in figures.items() if k.startswith(prefix)}
        if rows:
            out += table(title, rows)
    where = figures.get(FULL_WHERE)
    if where:
        out.append(
            "  full collections by step: "
            + "; ".join(f"{step} {len(ms)} (max {max(ms):.1f} ms)" for step, ms in where.items())
        )
    return out


def verdict(figures: dict) -> str:
    times = [
        k
        for step, k in figures.items()
        if not step.startswith(TUI_EXTRA)
        and not any(x in step for x in ("MiB", "pause", "objects"))
        and step not in (GC, BG_PREP, FULL_WHERE)
    ]
    warm = [s for k in times for s in [stats(k.get("warm", []))] if s.get("n")]
    cold = [s for k in times for s in [stats(k.get("cold", []))] if s.get("n")]
    worst_w = max((s["p95"] for s in warm), default=0)
    worst_c = max((s["p95"] for s in cold), default=0)
    return (
        f"  worst p95: warm {worst_w:.1f} ms (goal < {GOALS['warm_p95_ms']:.0f}), cold {worst_c:.1f} ms"
        f" (goal < {GOALS['cold_p95_ms']:.0f})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kb", type=Path, default=DEFAULT_KB)
    ap.add_argument("--module", type=Path, default=NEW, help="the largest module (ffmpeg 0.12.10)")
    ap.add_argument("--old", type=Path, default=OLD, help="its earlier release (ffmpeg 0.12.6)")
    ap.add_argument("--fetch", action="store_true", help="npm pack the ffmpeg releases if missing")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per surface")
    ap.add_argument(
        "--only", default="tui,api,mcp,peers", help="sections: tui,api,mcp,peers,ingest"
    )
    ap.add_argument(
        "--ingest", action="store_true", help="also the ingest section (every corpus module)"
    )
    ap.add_argument("--root", type=Path, default=ROOT, help="the kbtool checkout measured")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", type=Path, help="also write the figures as JSON to this file")
    ap.add_argument("--smoke", action="store_true", help="the demo KB, one run, no targets")
    ap.add_argument(
        "--gc",
        choices=("kbtool", "default"),
        default="kbtool",
        help="the TUI's collector policy: kbtool's (services.heap, as `kbtool tui`) or Python's",
    )
    args = ap.parse_args(argv)
    sections = set(args.only.split(",")) | ({"ingest"} if args.ingest else set())
    root = args.root.resolve()
    tmp = None
    if args.smoke:
        tmp = tempfile.TemporaryDirectory()
        args.kb, args.runs = Path(tmp.name) / "demo.db", 1
        args.module = ROOT / "kbtool" / "demo" / "zstd-1.5.6.wasm"
        kbtool(root, "demo", "--db", str(args.kb))
        kbtool(root, "--db", str(args.kb), "analyze", "1")
        sections |= {"ingest"}
        set_warm(3)
    else:
        if args.fetch:
            fetch()
        why = stale_kb(args.kb, root) if args.kb.exists() else None
        if why is not None:
            # a KB kept from an older checkout: measure the KB today's ingest makes
            print(f"  rebuilding {args.kb}: {why}", file=sys.stderr)
            args.kb.unlink()
            for tail in ("-wal", "-shm"):
                args.kb.with_name(args.kb.name + tail).unlink(missing_ok=True)
        if not args.kb.exists():
            if not args.module.exists():
                raise SystemExit(
                    f"{args.module} is missing: run with --fetch (npm pack @ffmpeg/core-mt)"
                )
            build_kb(args.kb, root, args.module, args.old if args.old.exists() else None)
        if sections & {"tui", "api", "mcp"}:
            prepare_code(args.kb, root)
    try:
        return report(args, sections, root)
    finally:
        if tmp is not None:
            tmp.cleanup()


def report(args, sections: set[str], root: Path) -> int:
    p = plan(args.kb)
    out: dict = {
        "kb": str(args.kb),
        "functions": p["functions"],
        "root": str(root),
        "load_start": load(),
    }
    print(
        f"kbtool interactive benchmark: {args.kb} (version {p['version']}: {p['functions']:,} defined"
        f" functions; largest body {p['largest_body']:,} bytes, {p['largest_instr']:,} instructions);"
        f" {args.runs} fresh process(es) per surface; checkout {root}",
        file=sys.stderr if args.json else sys.stdout,  # --json: stdout is the JSON alone
    )
    print(f"machine: {load()}", file=sys.stderr if args.json else sys.stdout)
    lines: list[str] = []
    code_peer = ""
    if "peers" in sections:  # first: beside every code step below
        peer_load = load()
        out["peers"] = peers(args.module, args.kb, root)
        pv = out["peers"]

        def secs(name: str) -> str:
            v = pv.get(name)
            return f"{v} s" if isinstance(v, float) else "n/a" if v is None else "failed"

        if pv.get("wasm-objdump -d") or pv.get("wasm-decompile"):
            code_peer = (
                f"objdump -d {secs('wasm-objdump -d')}, decompile {secs('wasm-decompile')}"
                " (whole module)"
            )
    if "tui" in sections:
        out["tui"] = tui_runs(args.kb, p, args.runs, root, args.gc)
        lines += table(
            f"TUI (Pilot, 100x30; key -> frame) — {load()}",
            out["tui"],
            goal=verdict(out["tui"]),
            code_peer=code_peer,
        )
        cpu = {k[len(CPU) :]: v for k, v in out["tui"].items() if k.startswith(CPU)}
        lines += table(
            "TUI CPU ms per step (the process's every thread; what a step costs whatever the load)",
            cpu,
        )
        lines += gc_tables(out["tui"])
    if "api" in sections:
        out["api"] = api_runs(args.kb, p, args.runs, root)
        out["datasette"] = datasette_runs(args.kb, p, args.runs)
        lines += table(
            f"API (kbtool serve; request -> last byte) — {load()}",
            out["api"],
            out["datasette"],
            goal=verdict(out["api"]),
            code_peer=code_peer,
        )
        if out["datasette"] is None:
            lines.append("  datasette: not installed (pip install datasette) — no peer figures")
    if "mcp" in sections:
        out["mcp"] = mcp_runs(args.kb, p, args.runs, root)
        if out["mcp"] is not None:
            lines += table(
                f"MCP (the SDK's stdio client; call -> answer) — {load()}",
                out["mcp"],
                goal=verdict(out["mcp"]),
                code_peer=code_peer,
            )
            lines += mcp_cpu_table(out["mcp"], table)
    if "peers" in sections:
        lines.append(f"code peers on {args.module.name} (whole module, s) — {peer_load}")
        for k, v in out["peers"].items():
            lines.append(f"  {k:<28} {v if v is not None else 'n/a'}")
    if "ingest" in sections:
        mods = corpus_modules(args.smoke)
        if not args.smoke and args.module.exists():
            mods.append(args.module)
        out["ingest"] = [ingest_row(m, root) for m in mods]
        out["ingest_decoder"] = decoder_path(root)
        lines.append(
            f"ingest (fresh KB each, decoder {out['ingest_decoder']}) beside native parse — {load()}"
        )
        lines.append(
            "  seconds: wall, then CPU (user+sys; wall also counts the wait for a core on a busy"
            " machine); x = kbtool over peer (goal: <= 0.5 x objdump, <= 10 x validate)"
        )
        lines.append(
            f"  {'module':<50} {'MB':>5} {'ingest':>7} {'peak MiB':>8} {'objdump':>8} {'validate':>8}"
            f" {'ingest cpu':>10} {'objdump cpu':>11} {'validate cpu':>12} {'x objdump':>9}"
            f" {'x validate':>10} {'x objdump cpu':>13} {'x validate cpu':>14}"
        )

        def ratio(a, b, fmt: str) -> str:
            return format(a / b, fmt) if a and b else "-"

        def v(x) -> str:
            return "-" if x is None else str(x)

        for r in out["ingest"]:
            lines.append(
                f"  {r['module'][:50]:<50} {r['mb']:>5} {v(r['ingest_s']):>7} {v(r['ingest_peak_mib']):>8}"
                f" {v(r['objdump_s']):>8} {v(r['validate_s']):>8} {v(r['ingest_cpu_s']):>10}"
                f" {v(r['objdump_cpu_s']):>11} {v(r['validate_cpu_s']):>12}"
                f" {ratio(r['ingest_s'], r['objdump_s'], '.2f'):>9} {ratio(r['ingest_s'], r['validate_s'], '.1f'):>10}"
                f" {ratio(r['ingest_cpu_s'], r['objdump_cpu_s'], '.2f'):>13}"
                f" {ratio(r['ingest_cpu_s'], r['validate_cpu_s'], '.1f'):>14}"
            )
    out["load_end"] = load()
    if args.save:
        args.save.write_text(json.dumps(out, indent=1))
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print("\n".join(lines))
        print(f"machine at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
