"""The TUI child of ``benchmarks/interactive.py``: one fresh process, the real app under Pilot.

A module of its own so the process imports what ``kbtool tui`` imports and no more before its
first frame (the parent's server and ingest harness are not loaded here): "TUI start" is from
this process's first line to the heatmap's first paint.
"""

from __future__ import annotations

import time

T_PROCESS = time.perf_counter()  # the TUI child's "start"

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

CPU = "cpu: "  # a step's CPU time (the TUI process, every thread), beside its wall time
GC = "full collections, ms each"  # the TUI process's generation-2 collections
GC_STEP = "gc: "  # a step's collector pauses, CPU ms (every generation)
FULL_STEP = "full gc: "  # a step's full (generation 2) collections, how many
FULL_WHERE = "full collections by step (CPU ms each)"  # where each one landed
BG_PREP = "versions prepared (bg)"  # the function diffs' versions, after the changelog shows


def _holds(test) -> bool:
    """A step's test at a frame (a screen not mounted yet may not answer it)."""
    try:
        return bool(test())
    except Exception:
        return False


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
        self.all_cpu = 0.0  # CPU ms of every collection (any generation) so far
        self.log: list[list] = []  # [step, CPU ms] of each full one (the step named by add)
        self._began = (0.0, 0.0)
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = (time.perf_counter(), time.thread_time())
            return
        cpu = (time.thread_time() - self._began[1]) * 1000
        self.all_cpu += cpu
        if info.get("generation") == 2:
            self.wall.append(round((time.perf_counter() - self._began[0]) * 1000, 2))
            self.cpu.append(round(cpu, 2))
            self.log.append([None, round(cpu, 2)])

    def mark(self) -> tuple[int, float]:
        """Full collections and every collection's CPU ms so far (a step's are the change)."""
        return len(self.cpu), self.all_cpu


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
    opener = _fdiff_opener(FunctionDiffScreen)
    for i, pair in enumerate(p["fdiff"]):
        shown: list = []
        add(
            "function diff",
            await until(
                lambda pr=pair, sh=shown: sh.append(opener(app, *pr)),
                lambda sh=shown: bool(sh) and sh[0].diff is not None and app.screen is sh[0],
            ),
            i == 0,
        )
        shown.clear()  # a person holds no closed screen (the collector frees a new one)
        app.pop_screen()
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


def _collector_paused_over_imports(gc_policy: str) -> dict:
    """As ``kbtool tui`` does with its policy: no collection while Textual and the app are
    imported (done here), the app told so (it turns the collector back on after its first
    frame): ``KbApp``'s extra arguments. A checkout from before the hand-over (--root): as
    before (the collector on)."""
    import inspect

    if gc_policy != "kbtool" or not gc.isenabled():
        return {}
    gc.disable()
    try:
        from kbtool.tui.app import KbApp
    finally:
        gc.enable()
    if "collector_paused" not in inspect.signature(KbApp).parameters:
        return {}
    gc.disable()
    return {"collector_paused": True}


class _Steps:
    """One TUI run's figures: each step's wall ms, CPU ms (the process, every thread) and
    its collector's pauses (CPU ms of every generation, full collections)."""

    def __init__(self, pauses: _GcPauses) -> None:
        self.res: dict[str, dict[str, list[float]]] = {}
        self.pauses = pauses
        self.cpu = 0.0  # CPU ms of the step just measured
        self.gc_at = (0, 0.0)  # the collector's pauses when it began
        self.gc_end: tuple[int, float] | None = None  # ... and at its end, if its frame's

    def add(self, step: str, ms: float, cold: bool) -> None:
        res, kind = self.res, "cold" if cold else "warm"
        res.setdefault(step, {}).setdefault(kind, []).append(round(ms, 2))
        res.setdefault(CPU + step, {}).setdefault(kind, []).append(round(self.cpu, 2))
        full, pause = self.gc_end or self.pauses.mark()
        self.gc_end = None
        gc_ms = round(pause - self.gc_at[1], 2)
        res.setdefault(GC_STEP + step, {}).setdefault(kind, []).append(gc_ms)
        res.setdefault(FULL_STEP + step, {}).setdefault(kind, []).append(full - self.gc_at[0])
        for entry in self.pauses.log[self.gc_at[0] : full]:
            entry[0] = step
        self.gc_at = (full, pause)


async def _search(app, pilot, steps: _Steps) -> None:
    """``/`` then queries typed into the search screen, each run at once."""
    from kbtool.tui.screens.search import SearchScreen

    await pilot.press("slash")
    await pilot.pause()
    screen = app.screen
    if not isinstance(screen, SearchScreen):
        return
    for i, q in enumerate(["av", "codec", "#100", "frame", "mem", "init", "x", "h264", "free"]):
        steps.gc_at = steps.pauses.mark()
        c = time.process_time()
        t = time.perf_counter()
        screen._run(q)
        steps.cpu = (time.process_time() - c) * 1000
        steps.add("search", (time.perf_counter() - t) * 1000, i == 0)
    app.pop_screen()


def _end_figures(res: dict, pauses: _GcPauses) -> None:
    """The process's peak memory and its full collections (each, and by step)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            res["peak RSS MiB"] = {"cold": [round(int(line.split()[1]) / 1024, 1)]}
    res[GC] = {"cold": pauses.wall or [0.0]}
    res[CPU + GC] = {"cold": pauses.cpu or [0.0]}
    where: dict[str, list[float]] = {}  # the full collections by the step they landed in
    for step, ms in pauses.log:
        where.setdefault(step or "between steps", []).append(ms)
    res[FULL_WHERE] = where


async def _tui(kb: Path, p: dict, gc_policy: str = "kbtool") -> dict[str, dict[str, list[float]]]:
    more = _collector_paused_over_imports(gc_policy)
    from textual import events

    from kbtool.tui.app import KbApp  # what `kbtool tui` imports before its first frame
    from kbtool.tui.screens.heatmap import HeatmapScreen
    from kbtool.tui.widgets.heatmap import HeatmapGrid

    res: dict[str, dict[str, list[float]]] = {}
    pauses = _GcPauses(gc_policy)

    steps = _Steps(pauses)
    res, add = steps.res, steps.add

    app = KbApp(kb, poll_seconds=None, version_id=p["version"], blink=False, **more)
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
        steps.cpu = time.process_time() * 1000
        add("TUI start", (app.screen.query_one(HeatmapGrid).first_paint - T_PROCESS) * 1000, True)
        # the steps' own screens, imported after the start is taken (the app imports them on use)
        from kbtool.tui.screens.code import LinesView
        from kbtool.tui.screens.detail import DetailScreen

        open_code = _code_opener()

        frames: list[float] = []
        display = app._display

        # until's test, then the first frame drawn with it holding: (wall, CPU, collector)
        watch: list = [None, None]

        def spy(screen, renderable):
            if renderable is not None:
                now = time.perf_counter()
                frames.append(now)
                if watch[0] is not None and watch[1] is None and _holds(watch[0]):
                    watch[1] = (now, time.process_time(), pauses.mark())
            return display(screen, renderable)

        app._display = spy

        async def until(act, ready, timeout: float = 120.0) -> float:
            """``act()`` to the first frame drawn once ``ready()`` holds (tested as each frame
            is drawn: that frame shows it), its wall ms; its CPU in ``cpu``."""
            await pilot.pause()
            steps.gc_at = pauses.mark()
            c = time.process_time()
            t = time.perf_counter()
            watch[:] = [ready, None]
            act()
            deadline = t + timeout
            while watch[1] is None and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            end = watch[1] or (time.perf_counter(), time.process_time(), pauses.mark())
            watch[:] = [None, None]
            steps.gc_end = end[2]
            steps.cpu = (end[1] - c) * 1000
            return (end[0] - t) * 1000

        def key(k: str):
            return lambda: app._driver.send_message(events.Key(k, k if len(k) == 1 else None))

        async def keyframe(k: str) -> float:
            await pilot.pause()
            n = len(frames)
            steps.gc_at = pauses.mark()
            c = time.process_time()
            t = time.perf_counter()
            key(k)()
            while len(frames) == n and time.perf_counter() < t + 10:
                await asyncio.sleep(0.0005)
            steps.cpu = (time.process_time() - c) * 1000
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
                shown: list = []  # the screen open_code pushed (the app's kept one)
                before = rss_mib()
                ms = await until(
                    lambda i=idx, got=shown: got.append(open_code(app, p["version"], i)),
                    lambda got=shown: bool(got) and code_ready(got[0])(),
                )
                screen = shown[0]
                gc_open = steps.gc_at
                add(f"open code ({cls})", ms, i == 0)
                if cls == "largest" and i == 0:  # the TUI's extra memory for that first screen
                    res["open code (largest): +MiB"] = {"cold": [round(rss_mib() - before, 1)]}
                if cls == "largest":  # the first screen may be its wasm while the C is lifted
                    t1, c1, c_open = time.perf_counter(), time.process_time(), steps.cpu
                    if not c_ready(screen)():
                        deadline = t1 + 120
                        while not c_ready(screen)() and time.perf_counter() < deadline:
                            await asyncio.sleep(0.0005)
                        n = len(frames)
                        while len(frames) == n and time.perf_counter() < deadline:
                            await asyncio.sleep(0.0005)
                        ms += (time.perf_counter() - t1) * 1000
                    steps.cpu = c_open + (time.process_time() - c1) * 1000
                    steps.gc_at = gc_open
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
        await _search(app, pilot, steps)
        # a person reads: what the collector pays when idle (a key would wait) is in the pauses
        await asyncio.sleep(IDLE_WAIT)
        res[FROZEN] = {"cold": [gc.get_freeze_count()]}
        res[UNFROZEN] = {"cold": [len(gc.get_objects())]}
    _end_figures(res, pauses)
    return res


def _fdiff_opener(screen_class):
    """How the changelog opens a function diff in the checkout measured: its
    ``open_function_diff`` (the app's kept screen), or a new screen pushed (before it)."""
    import importlib

    try:  # a --root tree before the split of the function diff out of screens/code.py
        code_diff = importlib.import_module("kbtool.tui.screens.code_diff")
    except ImportError:
        code_diff = None
    opener = getattr(code_diff, "open_function_diff", None)
    if opener is not None:
        return opener

    def push_new(app, *pair):
        screen = screen_class(*pair)
        app.push_screen(screen)
        return screen

    return push_new


def _code_opener():
    """How the detail screen opens a function's code in the checkout measured: its
    ``open_code`` (the app's kept code screen), or a new screen pushed (before it)."""
    from kbtool.tui.screens import code

    opener = getattr(code, "open_code", None)
    if opener is not None:
        return opener

    def push_new(app, version_id: int, index: int):
        screen = code.CodeScreen(version_id, index)
        app.push_screen(screen)
        return screen

    return push_new


IDLE_WAIT = 2.5  # s: the TUI's idle moment (heap.IDLE_SECONDS, 1 s) and its checks pass
FROZEN = "objects frozen at the end"
UNFROZEN = "objects not frozen at the end"


def rss_mib() -> float:
    """This process's resident memory now (MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--plan", required=True, help="benchmarks.interactive.plan's answer, as JSON")
    ap.add_argument("--gc", choices=("kbtool", "default"), default="kbtool")
    args = ap.parse_args(argv)
    print(json.dumps(asyncio.run(_tui(args.kb, json.loads(args.plan), args.gc))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
