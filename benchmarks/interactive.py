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

import time

T_PROCESS = time.perf_counter()  # the TUI child's "start"

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

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

sys.path.remove(str(ROOT))


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


# ---------------------------------------------------------------- TUI (a fresh process per run)


def code_ready(screen):
    def ready() -> bool:  # the code (or its error) is on screen
        return screen.is_mounted and screen._shown is not None or getattr(screen, "_failed", False)

    return ready


def c_ready(screen):
    from kbtool.render.code import C

    def ready() -> bool:  # the lifted C itself on screen (not the first screen of wasm)
        code = screen.code
        return bool(
            code is not None and not code.get("c_pending") and screen._shown == (screen.index, C)
        )

    return ready


class _GcPauses:
    """The collector's policy for this TUI process (``kbtool``: what ``kbtool tui`` enables in
    ``KbApp.run``, which Pilot's ``run_test`` skips) and its full (generation 2) collections:
    wall and CPU ms each (the collecting thread holds the GIL throughout)."""

    def __init__(self, policy: str) -> None:
        if policy == "kbtool":
            try:
                from kbtool.services import heap
            except ImportError:  # a checkout from before the policy (--root)
                pass
            else:
                heap.enable()
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._began = (0.0, 0.0)
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._began = (time.perf_counter(), time.thread_time())
        else:
            self.wall.append(round((time.perf_counter() - self._began[0]) * 1000, 2))
            self.cpu.append(round((time.thread_time() - self._began[1]) * 1000, 2))


async def _function_diffs(app, pilot, p: dict, until, add, res: dict) -> None:
    """As a person goes: the changelog of the stored pair, then modified functions' diffs."""
    from kbtool.tui.screens.code import FunctionDiffScreen
    from kbtool.tui.screens.diff import DiffScreen

    if not p.get("fdiff"):
        return
    v, w = p["pair_stored"]
    changelog = DiffScreen(v, w)
    add(
        "diff screen (stored pair)",
        await until(lambda: app.push_screen(changelog), lambda: changelog._shown_pair == (v, w)),
        True,
    )
    t = time.perf_counter()  # both versions prepared meanwhile, in the background
    if app.code_prefetch is not None:
        await asyncio.wrap_future(app.code_prefetch)
    res[BG_PREP] = {"cold": [round((time.perf_counter() - t) * 1000, 1)]}
    await _changelog(changelog, pilot, until, add)
    for i, pair in enumerate(p["fdiff"]):
        screen = FunctionDiffScreen(*pair)
        add(
            "function diff",
            await until(lambda s=screen: app.push_screen(s), lambda s=screen: s.diff is not None),
            i == 0,
        )
        app.pop_screen()
        screen = None  # a person holds no closed screen (the collector frees it)
        await pilot.pause()
    app.pop_screen()
    changelog = None
    await pilot.pause()


def _changelog_shown(screen) -> bool:
    """The diff screen's changelog pane shows the pair's changelog (this checkout's pane
    says when it is loaded; an older one's Static stops saying it is preparing)."""
    pane = screen.query_one("#diff-changelog")
    if hasattr(pane, "loaded"):
        return bool(pane.loaded)
    return "preparing" not in str(screen.query_one("#changelog-body").render())


async def _changelog(screen, pilot, until, add) -> None:
    """``c`` on the diff screen: its changelog shown, then paged down through, then hidden."""
    add(
        "diff changelog (c)",
        await until(screen.action_toggle_changelog, lambda: _changelog_shown(screen)),
        True,
    )
    from textual import events

    def page_down() -> None:
        screen.app._driver.send_message(events.Key("pagedown", None))

    screen.query_one("#diff-changelog").focus()
    await pilot.pause()
    for j in range(6):
        add("changelog page down", await until(page_down, lambda: True), j == 0)
    screen.action_toggle_changelog()
    screen.query_one("#diff-table").focus()
    await pilot.pause()


async def _tui(kb: Path, p: dict, gc_policy: str = "kbtool") -> dict[str, dict[str, list[float]]]:
    from textual import events

    from kbtool.tui.app import KbApp
    from kbtool.tui.screens.code import CodeScreen, LinesView
    from kbtool.tui.screens.detail import DetailScreen
    from kbtool.tui.screens.heatmap import HeatmapScreen
    from kbtool.tui.screens.search import SearchScreen
    from kbtool.tui.widgets.heatmap import HeatmapGrid

    res: dict[str, dict[str, list[float]]] = {}
    pauses = _GcPauses(gc_policy)

    cpu = [0.0]  # CPU ms of the process (every thread) in the step just measured

    def add(step: str, ms: float, cold: bool) -> None:
        kind = "cold" if cold else "warm"
        res.setdefault(step, {}).setdefault(kind, []).append(round(ms, 2))
        res.setdefault(CPU + step, {}).setdefault(kind, []).append(round(cpu[0], 2))

    app = KbApp(kb, poll_seconds=None, version_id=p["version"], blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        while True:
            s = app.screen
            if (
                isinstance(s, HeatmapScreen)
                and s.query(HeatmapGrid)
                and s.query_one(HeatmapGrid).first_paint
            ):
                break
            await asyncio.sleep(0.001)
        cpu[0] = time.process_time() * 1000
        add("TUI start", (app.screen.query_one(HeatmapGrid).first_paint - T_PROCESS) * 1000, True)
        frames: list[float] = []
        display = app._display

        def spy(screen, renderable):
            if renderable is not None:
                frames.append(time.perf_counter())
            return display(screen, renderable)

        app._display = spy

        async def until(act, ready, timeout: float = 120.0) -> float:
            await pilot.pause()
            c = time.process_time()
            t = time.perf_counter()
            act()
            deadline = t + timeout
            while not ready() and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            n = len(frames)
            while len(frames) == n and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            cpu[0] = (time.process_time() - c) * 1000
            return (time.perf_counter() - t) * 1000

        def key(k: str):
            return lambda: app._driver.send_message(events.Key(k, k if len(k) == 1 else None))

        async def keyframe(k: str) -> float:
            await pilot.pause()
            n = len(frames)
            c = time.process_time()
            t = time.perf_counter()
            key(k)()
            while len(frames) == n and time.perf_counter() < t + 10:
                await asyncio.sleep(0.0005)
            cpu[0] = (time.process_time() - c) * 1000
            return (time.perf_counter() - t) * 1000

        for i, k in enumerate(["l", "j", "h", "k"] * 6):
            add("heatmap move", await keyframe(k), i == 0)
        for i in range(4):
            add(
                "open detail",
                await until(
                    key("enter"),
                    lambda: (
                        isinstance(app.screen, DetailScreen) and app.screen.seen_token is not None
                    ),
                ),
                i == 0,
            )
            await until(key("escape"), lambda: isinstance(app.screen, HeatmapScreen))
            await keyframe("l")

        for cls in ("small", "median", "largest"):
            for i, idx in enumerate(p[cls] if cls != "largest" else p[cls] * 3):
                screen = CodeScreen(p["version"], idx)
                before = rss_mib()
                ms = await until(lambda s=screen: app.push_screen(s), code_ready(screen))
                add(f"open code ({cls})", ms, i == 0)
                if cls == "largest" and i == 0:  # the TUI's extra memory for that first screen
                    res["open code (largest): +MiB"] = {"cold": [round(rss_mib() - before, 1)]}
                if cls == "largest":  # the first screen may be its wasm while the C is lifted
                    t1, c1, c_open = time.perf_counter(), time.process_time(), cpu[0]
                    if not c_ready(screen)():
                        deadline = t1 + 120
                        while not c_ready(screen)() and time.perf_counter() < deadline:
                            await asyncio.sleep(0.0005)
                        n = len(frames)
                        while len(frames) == n and time.perf_counter() < deadline:
                            await asyncio.sleep(0.0005)
                        ms += (time.perf_counter() - t1) * 1000
                    cpu[0] = c_open + (time.process_time() - c1) * 1000
                    add("C of the largest on screen", ms, i == 0)
                    if i == 0:
                        res["C of the largest on screen: +MiB"] = {
                            "cold": [round(rss_mib() - before, 1)]
                        }
                if cls == "largest" and i < 2:
                    view = screen.query_one("#code-view", LinesView)
                    view.focus()
                    for j in range(10):
                        add("code page down", await keyframe("pagedown"), i == 0 and j == 0)
                app.pop_screen()
                screen = view = None  # a person holds no closed screen (the collector frees it)
                await pilot.pause()
        await _function_diffs(app, pilot, p, until, add, res)
        await pilot.press("slash")
        await pilot.pause()
        screen = app.screen
        if isinstance(screen, SearchScreen):
            for i, q in enumerate(
                ["av", "codec", "#100", "frame", "mem", "init", "x", "h264", "free"]
            ):
                c = time.process_time()
                t = time.perf_counter()
                screen._run(q)
                cpu[0] = (time.process_time() - c) * 1000
                add("search", (time.perf_counter() - t) * 1000, i == 0)
            app.pop_screen()
            screen = None
        # a person reads: what the collector pays when idle (a key would wait) is in the pauses
        await asyncio.sleep(IDLE_WAIT)
        res[FROZEN] = {"cold": [gc.get_freeze_count()]}
        res[UNFROZEN] = {"cold": [len(gc.get_objects())]}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            res["peak RSS MiB"] = {"cold": [round(int(line.split()[1]) / 1024, 1)]}
    res[GC] = {"cold": pauses.wall or [0.0]}
    res[CPU + GC] = {"cold": pauses.cpu or [0.0]}
    return res


IDLE_WAIT = 2.5  # s: the TUI's idle moment (heap.IDLE_SECONDS, 1 s) and its checks pass
FROZEN = "objects frozen at the end"
UNFROZEN = "objects not frozen at the end"


def rss_mib() -> float:
    """This process's resident memory now (MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tui_runs(kb: Path, p: dict, runs: int, root: Path, gc_policy: str = "kbtool") -> dict:
    out = []
    for _ in range(runs):
        r = subprocess.run(
            [
                sys.executable,
                "-P",
                __file__,
                "--tui-child",
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
BG_PREP = "versions prepared (bg)"  # the function diffs' versions, after the changelog shows


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
        if step in ("peak RSS MiB", GC) or step.startswith(CPU):
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


def verdict(figures: dict) -> str:
    times = [
        k
        for step, k in figures.items()
        if not step.startswith(CPU)
        and not any(x in step for x in ("MiB", "pause", "objects"))
        and step not in (GC, BG_PREP)
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
    ap.add_argument("--tui-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--plan", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tui_child:
        set_warm(max(len(json.loads(args.plan)["small"]) - 1, 1))
        print(json.dumps(asyncio.run(_tui(args.kb, json.loads(args.plan), args.gc))))
        return 0
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
        if not args.kb.exists():
            if not args.module.exists():
                raise SystemExit(
                    f"{args.module} is missing: run with --fetch (npm pack @ffmpeg/core-mt)"
                )
            build_kb(args.kb, root, args.module, args.old if args.old.exists() else None)
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
