"""The studio's first screen as a person sees it (issue 30 point 1): a real ``kbtool serve``
and headless Chromium (Debian's /usr/bin/chromium through Playwright), a fresh server per run.

    python benchmarks/studio_page.py                          # the ffmpeg KB of interactive.py
    python benchmarks/studio_page.py --kb KB --runs 7 [--root OTHER_CHECKOUT]
    python benchmarks/studio_page.py --smoke                  # the demo KB, one run

Two steps, timed in the page (``performance.now()``, to the animation frame after the lines
are added: what is painted), on the largest function of the first version (the lowest id):

- "open on the largest (first code)": the studio loaded with ``#v=V&f=LARGEST`` (its default
  view, the disassembly) as soon as the server answers (``--settle S``: S seconds later), from
  navigation start to its first lines; "... (callers)" to its
  callers and callees listed (the call graph's answer drawn).
- "C view, new version (first screen)": the page open on the other version (all of it shown,
  its callers too) in the C view, the newest version chosen in the list, then its largest
  function clicked once the list is here: from the click to
  the first lines on screen (the disassembly shown while the C is lifted, or the C); "...
  (C)" to the C itself.

With ``--pages``, also the dashboard's first paints on a fresh server (the pages that read a
whole version's function list): "dashboard heatmap (newest)" (``/``) and "... (version V)"
(``/#v=V``), from navigation to the frame after the heatmap is painted (main.js sets
``body[data-painted]``; before the compact cells existed, ``body[data-version]``: the same
moment), and "... names in" to the frame after the whole list has come (``data-version``:
tooltips, picks and code links work); "dashboard function (largest, first code)"
(``/#v=V&fn=SID``) to the function panel's first lines. ``--pages-only``: those steps alone.
``--trace``: each fresh page's fetches in the order its scripts made them, with when each
was asked and when its answer came (what waits on what).

p50/p95/max per step and the machine's load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.interactive_common import DEFAULT_KB, env, start_serve  # noqa: E402
from benchmarks.web_api import free_port, stop, wait_http  # noqa: E402

SETTLE = [0.0]  # --settle: seconds between the server answering and the page opened
TRACE = [False]  # --trace: print each cold page's requests in order, with when they went and came

# in the page (--trace): every fetch the page's scripts make, when it was made and when its
# response came (performance.now()); the <link rel=preload> fetches of the HTML are not seen
FETCHES = """() => {
  const log = (window.__fetches = []);
  const fetch0 = window.fetch;
  window.fetch = function (u, o) {
    const row = [String(u), Math.round(performance.now()), -1];
    log.push(row);
    const p = fetch0.call(this, u, o);
    p.then(() => { row[2] = Math.round(performance.now()); }, () => {});
    return p;
  };
}"""


def trace(page, step: str) -> None:
    """--trace: the page's fetches of ``step`` in the order it made them."""
    if not TRACE[0]:
        return
    print(f"  trace, {step} (load {os.getloadavg()[0]:.2f}): asked -> came (ms from navigation)")
    for path, asked, came in page.evaluate("window.__fetches || []"):
        print(f"    {asked:6d} -> {came if came >= 0 else '...':>6}  {path[:90]}")


CHROMIUM = os.environ.get("KBTOOL_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]

# in the page: the time of the frame after the first `.win` (any / not the stand-in) of a
# pager started after `since` (code.js numbers the pagers of #code) is added, and after the
# callers and callees are listed in #xrefs ("N callers")
WATCH = """(since) => {
  const t = (window.__t = {});
  const frame = (k) => { if (!(k in t)) { t[k] = -1; requestAnimationFrame(() => { t[k] = performance.now(); }); } };
  new MutationObserver(() => {
    const code = document.getElementById("code");
    if (!code || (code._pagerGen || 0) <= since) return;
    if (code.querySelector(".win")) frame("first");
    if (code.querySelector(".win:not(.meanwhile)") && !code.dataset.meanwhile) frame("main");
    const x = document.querySelector("#xrefs div.faint");
    if (x && / callers$/.test(x.textContent)) frame("xrefs");
  }).observe(document, { childList: true, subtree: true, attributes: true });
}"""


# in the dashboard: the frame after the heatmap is painted (main.js sets body[data-painted],
# or body[data-version] in a checkout from before the cells), after the whole list is in
# (body[data-version]) and after the function panel's first lines are added
DASH_WATCH = """() => {
  const t = (window.__t = {});
  const frame = (k) => { if (!(k in t)) { t[k] = -1; requestAnimationFrame(() => { t[k] = performance.now(); }); } };
  new MutationObserver(() => {
    const b = document.body;
    if (b && (b.dataset.painted || b.dataset.version)) frame("painted");
    if (b && b.dataset.version) frame("heatmap");
    if (document.querySelector("#fn-panel .win")) frame("code");
  }).observe(document, { childList: true, subtree: true, attributes: true });
}"""


def targets(kb: Path) -> tuple[int, int, int]:
    """(the first version, its largest defined function, another version or the same)."""
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        vids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
        v = vids[0]
        big = conn.execute(
            "SELECT idx FROM functions WHERE version_id = ? AND imported = 0"
            " ORDER BY body_size DESC, idx DESC LIMIT 1",
            (v,),
        ).fetchone()[0]
    finally:
        conn.close()
    return v, big, next((x for x in vids if x != v), v)


def _until(page, key: str, timeout: float = 60.0) -> float:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = page.evaluate(f"window.__t && window.__t[{json.dumps(key)}]")
        if got is not None and got >= 0:
            return float(got)
        page.wait_for_timeout(10)
    raise SystemExit(f"the page never showed {key}")


def _wait(page, expression: str, timeout: float = 60.0) -> None:
    """Poll a page expression (the page's CSP forbids Playwright's string functions)."""
    end = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {expression}")
        page.wait_for_timeout(20)


def one_run(browser, kb: Path, root: Path, v: int, big: int, other: int) -> dict[str, float]:
    port = free_port()
    proc = start_serve(kb, root, port)
    out: dict[str, float] = {}
    try:
        wait_http(port, "/api/provenance")
        time.sleep(SETTLE[0])  # --settle: the server's start-up work done (or not)
        url = f"http://127.0.0.1:{port}/studio"
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.add_init_script(f"({WATCH})(0)")
        if TRACE[0]:
            page.add_init_script(f"({FETCHES})()")
        page.goto(f"{url}#v={v}&f={big}")
        out["open on the largest (first code)"] = _until(page, "first")
        out["open on the largest (callers)"] = _until(page, "xrefs")
        trace(page, "open on the largest")
        page.close()
        if other != v:  # a fresh server again (it prepares the newest version as it starts:
            # this step is what a person waits for after that, not a cold preparation)
            stop(proc)
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "kbtool.cli", "serve"]
                + ["--db", str(kb), "--port", str(port)],
                cwd=root,
                env=env(root),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            wait_http(port, "/api/provenance")
            url = f"http://127.0.0.1:{port}/studio"
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{url}#v={other}")
            _wait(page, "Number(document.querySelector('#code').dataset.shown) > 0")
            # that version's page whole (its call graph too: it may be computed, not stored)
            _wait(page, "/ callers$/.test(document.querySelector('#xrefs div.faint')?.textContent)")
            page.click("#v-c")
            _wait(page, "Number(document.querySelector('#code').dataset.shown) > 0")
            page.select_option("#version", str(v))
            page.fill("#filter", f"#{big}")
            row = f'#flist .fn[data-index="{big}"]'
            page.wait_for_selector(row)
            page.evaluate(WATCH, page.evaluate("document.getElementById('code')._pagerGen || 0"))
            t0 = page.evaluate("performance.now()")
            page.click(row)
            out["C view, new version (first screen)"] = _until(page, "first") - t0
            out["C view, new version (C)"] = _until(page, "main") - t0
            page.close()
    finally:
        stop(proc)
    return out


def stable_id(kb: Path, v: int, index: int) -> str:
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT stable_id FROM functions WHERE version_id = ? AND idx = ?", (v, index)
        ).fetchone()[0]
    finally:
        conn.close()


def dashboard_run(browser, kb: Path, root: Path, v: int, big: int) -> dict[str, float]:
    """The dashboard's first paints, each on a fresh server (what a person opening a link
    to the dashboard waits for)."""
    sid = stable_id(kb, v, big)
    steps = [
        ("dashboard heatmap (newest)", "", ("painted", "heatmap")),
        (f"dashboard heatmap (version {v})", f"#v={v}", ("painted", "heatmap")),
        ("dashboard function (largest, first code)", f"#v={v}&fn={sid}", ("code",)),
    ]
    out: dict[str, float] = {}
    for name, frag, keys in steps:
        port = free_port()
        proc = start_serve(kb, root, port)
        try:
            wait_http(port, "/api/provenance")
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.add_init_script(f"({DASH_WATCH})()")
            if TRACE[0]:
                page.add_init_script(f"({FETCHES})()")
            page.goto(f"http://127.0.0.1:{port}/{frag}")
            for key in keys:
                out[name + (", names in" if key == "heatmap" else "")] = _until(page, key)
            trace(page, name)
            page.close()
        finally:
            stop(proc)
    return out


def stats(xs: list[float]) -> str:
    s = sorted(xs)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return f"{statistics.median(s):8.1f} {p95:8.1f} {max(s):8.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kb", type=Path, default=DEFAULT_KB)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", type=Path, default=ROOT, help="the kbtool checkout measured")
    ap.add_argument("--smoke", action="store_true", help="the demo KB, one run")
    ap.add_argument("--pages", action="store_true", help="the dashboard's first paints too")
    ap.add_argument("--pages-only", action="store_true", help="the dashboard's first paints alone")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds between the server answering and the studio opened on the largest"
        " (0: at once, while it prepares versions at start; 3: a person a moment later)",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="print each fresh page's requests in order (asked, came): what waits on what",
    )
    args = ap.parse_args(argv)
    SETTLE[0] = max(0.0, args.settle)
    TRACE[0] = args.trace
    if not os.path.exists(CHROMIUM):
        print(f"skipped: no Chromium at {CHROMIUM}")
        return 0
    from playwright.sync_api import sync_playwright

    tmp = tempfile.TemporaryDirectory()
    try:
        if args.smoke:
            args.kb, args.runs = Path(tmp.name) / "demo.db", 1
            subprocess.run(
                [sys.executable, "-P", "-m", "kbtool.cli", "demo", "--db", str(args.kb)],
                cwd=args.root,
                env=env(args.root),
                check=True,
                capture_output=True,
            )
        if not args.kb.exists():
            raise SystemExit(f"{args.kb} is missing: build it with benchmarks/interactive.py")
        v, big, other = targets(args.kb)
        load0 = os.getloadavg()
        res: dict[str, list[float]] = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for _ in range(args.runs):
                if not args.pages_only:
                    got = one_run(browser, args.kb, args.root.resolve(), v, big, other)
                    for k, ms in got.items():
                        res.setdefault(k, []).append(ms)
                if args.pages or args.pages_only or args.smoke:
                    got = dashboard_run(browser, args.kb, args.root.resolve(), v, big)
                    for k, ms in got.items():
                        res.setdefault(k, []).append(ms)
            browser.close()
        load1 = os.getloadavg()
    finally:
        tmp.cleanup()
    print(f"studio page: {args.kb} version {v}, function #{big}; {args.runs} fresh server(s)")
    print(f"machine: load average {load0[0]:.2f} {load0[1]:.2f} on {os.cpu_count()} cores")
    print(f"  {'step':40} {'p50':>8} {'p95':>8} {'max':>8}  (ms)")
    for k, xs in res.items():
        print(f"  {k:40} {stats(xs)}")
    print(f"machine at the end: load average {load1[0]:.2f} {load1[1]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
