"""A recorded TUI run on the largest module (ffmpeg core-mt, 22,521 functions; issue 30): each
step's wait (key -> the frame showing its answer) printed, and an SVG screenshot after it.

    python screenshots/make_tui_big.py [--kb ~/.cache/kbtool-interactive/ffmpeg.db] [--out DIR]

The KB is the one ``benchmarks/interactive.py`` builds (run it first). One process, cold: the
first code pane, the largest function (its first screen, then the rest), a page down, the
per-function diff and the search, as a person would go. Writes ``tui-big-*.svg`` into
``screenshots/`` (or ``--out``) and exits 1 when a step waited more than 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_KB = Path.home() / ".cache" / "kbtool-interactive" / "ffmpeg.db"
LIMIT_S = 1.0


async def run(kb: Path, out: Path) -> list[tuple[str, float]]:
    from kbtool.services import heap
    from kbtool.tui.app import KbApp
    from kbtool.tui.screens.code import CodeScreen, FunctionDiffScreen
    from kbtool.tui.screens.detail import DetailScreen
    from kbtool.tui.screens.diff import DiffScreen
    from kbtool.tui.screens.heatmap import HeatmapScreen
    from kbtool.tui.screens.search import SearchScreen
    from kbtool.tui.widgets.heatmap import HeatmapGrid

    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT idx FROM functions WHERE version_id = 1 AND imported = 0 ORDER BY body_size"
    ).fetchall()
    median, largest = rows[len(rows) // 2][0], rows[-1][0]
    # a modified function of 400-2,000 bytes (joined here: SQLite's join by stable_id is slow)
    q = "SELECT stable_id, idx, body_hash, body_size FROM functions WHERE version_id = ? AND imported = 0"
    later = {sid: (idx, h) for sid, idx, h, _n in conn.execute(q, (2,))}
    pair = next(
        (
            (idx, later[sid][0])
            for sid, idx, h, n in sorted(conn.execute(q, (1,)), key=lambda r: r[1])
            if 400 <= n <= 2000 and sid in later and later[sid][1] != h
        ),
        None,
    )
    conn.close()
    out.mkdir(parents=True, exist_ok=True)
    times: list[tuple[str, float]] = []
    heap.enable()  # as `kbtool tui` does (KbApp.run; Pilot's run_test does not)
    t0 = time.perf_counter()
    app = KbApp(kb, poll_seconds=None, blink=False, version_id=1)
    async with app.run_test(size=(120, 34)) as pilot:

        async def wait(name: str, ready, t: float, shot: str | None) -> None:
            while not ready():
                await asyncio.sleep(0.002)
            await pilot.pause()
            times.append((name, time.perf_counter() - t))
            if shot:
                app.save_screenshot(filename=f"tui-big-{shot}.svg", path=str(out))

        def heatmap_ready() -> bool:
            s = app.screen
            return (
                isinstance(s, HeatmapScreen)
                and bool(s.query(HeatmapGrid))
                and s.query_one(HeatmapGrid).first_paint is not None
            )

        await wait("start -> heatmap", heatmap_ready, t0, "heatmap")
        t = time.perf_counter()
        await pilot.press("l")
        await wait("heatmap move", lambda: True, t, None)
        t = time.perf_counter()
        await pilot.press("enter")
        await wait(
            "open detail",
            lambda: isinstance(app.screen, DetailScreen) and app.screen.seen_token is not None,
            t,
            "detail",
        )
        for name, idx in (("median", median), ("largest", largest)):
            screen = CodeScreen(1, idx)
            t = time.perf_counter()
            app.push_screen(screen)
            await wait(
                f"open code ({name}, cold)"
                if name == "median"
                else "open code (largest): first screen",
                lambda s=screen: s._shown is not None,
                t,
                f"code-{name}",
            )
            if name == "largest":
                screen.action_toggle_mode()  # Raw WASM: the first 2,000 instructions, the rest loading
                await pilot.pause()
                app.save_screenshot(filename="tui-big-code-largest-wasm-first.svg", path=str(out))
                t = time.perf_counter()
                await pilot.press("pagedown")
                await wait("page down", lambda: True, t, None)
                await wait(
                    "largest: the whole listing",
                    # read by pages from here on (or whole, when the C was lifted meanwhile)
                    lambda s=screen: s._pages is not None or not s.code.get("partial"),
                    t,
                    "code-largest-wasm-whole",
                )
            app.pop_screen()
            await pilot.pause()
        if pair:  # the changelog of the pair, then one modified function's diff
            changelog = DiffScreen(1, 2)
            t = time.perf_counter()
            app.push_screen(changelog)
            await wait(
                "diff screen (changelog)",
                lambda: changelog._shown_pair == (1, 2),
                t,
                "diff-changelog",
            )
            if app.code_prefetch is not None:  # both versions, prepared while one reads it
                await asyncio.wrap_future(app.code_prefetch)
            screen = FunctionDiffScreen(1, pair[0], 2, pair[1])
            t = time.perf_counter()
            app.push_screen(screen)
            await wait("function diff", lambda s=screen: s.diff is not None, t, "function-diff")
            app.pop_screen()
            app.pop_screen()
            await pilot.pause()
        await pilot.press("slash")
        for ch in "allo":
            await pilot.press(ch)
        await pilot.pause()
        t = time.perf_counter()
        await pilot.press(
            "c"
        )  # the last key of "alloc" (names kbtool analyze gave): the results follow
        deadline = t + 10
        await wait(
            "search 'alloc' (last key -> results)",
            lambda: (
                isinstance(app.screen, SearchScreen)
                and (bool(app.screen._results) or time.perf_counter() > deadline)
            ),
            t,
            "search",
        )
    return times


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kb", type=Path, default=DEFAULT_KB)
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = ap.parse_args()
    if not args.kb.exists():
        print(f"error: {args.kb} is missing: run benchmarks/interactive.py first", file=sys.stderr)
        return 2
    times = asyncio.run(run(args.kb, args.out.resolve()))
    import os

    print(f"recorded TUI run on {args.kb} (load average {os.getloadavg()[0]:.2f})")
    for name, s in times:
        print(f"  {name:<40} {s * 1000:8.0f} ms")
    slow = [
        n for n, s in times if s > LIMIT_S and not n.startswith(("start", "largest: the whole"))
    ]
    print(f"steps over {LIMIT_S:.0f} s: {', '.join(slow) or 'none'}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
