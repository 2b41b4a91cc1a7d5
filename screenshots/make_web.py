"""Screenshots of the web dashboard, one per state, into screenshots/web-*.png.

    python screenshots/make_web.py [--big BENCH_KB]

Builds the demo KB (the two bundled zstd releases) in a temporary directory, records one
short annotation story through the gate on an unnamed function (an agent guess, an oracle
match that outranks it, a refused agent write) so the history panel has a timeline, serves
it with a real ``kbtool serve`` subprocess on a free loopback port, and drives Debian's
headless Chromium with Playwright. ``--big`` adds the 50,000-cell heatmap of the KB that
``benchmarks/web_api.py --kb PATH`` builds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
VIEWPORT = {"width": 1500, "height": 900}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, db: Path) -> None:
        self.db, self.port = db, free_port()

    def __enter__(self) -> Server:
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "serve",
                "--db",
                str(self.db),
                "--port",
                str(self.port),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(600):  # a loaded machine: up to ~30 s
            try:
                urllib.request.urlopen(self.url + "api/versions", timeout=2).read()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def build(db: Path) -> str:
    """The demo KB plus an annotation story; returns the story function's stable id."""
    from kbtool.kb import queries
    from kbtool.kb.db import open_rw
    from kbtool.kb.gate import upsert_symbol
    from kbtool.services.deep import run_deep
    from kbtool.services.demo import build_demo

    build_demo(db, echo=lambda _m: None)
    conn = open_rw(db)
    try:
        vids = [v["id"] for v in queries.list_versions(conn)]
        fns = queries.list_functions(conn, vids[-1])
        pick = next(
            f
            for f in fns
            if f["name"] is None
            and f["index"] > 150
            and len(queries.functions_by_stable_id(conn, f["stable_id"])) == len(vids)
        )
        sid = pick["stable_id"]
        upsert_symbol(
            conn,
            sid,
            "maybe_bit_reader",
            provenance="agent",
            confidence=0.35,
            actor="agent:offline",
            evidence={"why": "shifts and masks a 64-bit accumulator in a loop"},
            version_id=vids[0],
        )
        upsert_symbol(
            conn,
            sid,
            "BIT_reloadDStream",
            provenance="oracle",
            confidence=0.9,
            actor="oracle:zstd-1.5.6-debug",
            summary="Refill the bit container of a backward bit stream; returns the stream status.",
            evidence={"match": "symbolised debug build", "score": 0.97},
            version_id=vids[-1],
        )
        upsert_symbol(
            conn,
            sid,
            "read_bits",
            provenance="agent",
            confidence=0.5,
            actor="agent:mcp",
            version_id=vids[-1],
        )
        # deep analysis of the story function (and a few more, for the Agents panel)
        run_deep(conn, vids[-1], functions=[pick["index"], pick["index"] + 1, pick["index"] + 2])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sid


def settle(page) -> None:
    page.mouse.move(2, VIEWPORT["height"] - 2)
    page.wait_for_timeout(150)


def shoot(page, name: str) -> None:
    path = HERE / f"web-{name}.png"
    page.screenshot(path=str(path))
    print(f"wrote {path.relative_to(ROOT)}")


def cell_center(page, position: int) -> tuple[float, float]:
    box = page.locator("#heatmap").bounding_box()
    cell = int(page.get_attribute("#heatmap", "data-cell"))
    cols = int(page.get_attribute("#heatmap", "data-cols"))
    return box["x"] + (position % cols) * cell + cell / 2, box["y"] + (
        position // cols
    ) * cell + cell / 2


def data_shots(tmp: Path) -> None:
    """The Data tab (strings, globals, the xrefs of a string) and the studio's data xrefs, on
    the demo KB's latest version after ``kbtool analyze`` (issue 26)."""
    from playwright.sync_api import sync_playwright

    from kbtool.kb import queries
    from kbtool.kb.db import open_rw
    from kbtool.services.analyze import analyze_version
    from kbtool.services.demo import build_demo

    db = tmp / "data.db"
    build_demo(db, echo=lambda _m: None)
    conn = open_rw(db)
    try:
        vid = queries.latest_version_id(conn)
        analyze_version(conn, vid)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    with Server(db) as srv, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{srv.url}#v={vid}")
        page.wait_for_selector("body[data-ready='1']")
        page.click("#tab-data")
        page.wait_for_selector("#data-strings tbody tr.ds")
        strings = json.loads(urllib.request.urlopen(f"{srv.url}api/strings/{vid}?limit=500").read())
        top = max(strings["items"], key=lambda i: i["refs"])
        page.fill("#data-target", hex(top["address"]))
        page.press("#data-target", "Enter")
        page.wait_for_selector("#data-xrefs tr.xr")
        page.click("#data-xrefs tr.xr a.tag")
        page.wait_for_selector("#fn-data a.dataref")
        settle(page)
        shoot(page, "data")
        xr = json.loads(
            urllib.request.urlopen(f"{srv.url}api/xrefs/{vid}?target={hex(top['address'])}").read()
        )
        index = xr["refs"][0]["func_index"]
        page.goto(f"{srv.url}studio#v={vid}&f={index}")
        page.wait_for_selector("#dataxrefs a.dataref")
        page.locator("#dataxrefs a.dataref").first.click()
        page.wait_for_selector("#dataxrefs tr.xr")
        settle(page)
        shoot(page, "studio-data")
        browser.close()


def diff_shots(page) -> None:
    """web-diff (the triaged changelog above the table) and web-fndiff (side by side)."""
    page.click("#tab-diff")
    page.click("#diff-run")
    page.wait_for_function(
        "() => !document.getElementById('diff-out').classList.contains('hidden')"
        " || !document.getElementById('diff-error').classList.contains('hidden')",
        timeout=60_000,
    )
    if page.is_visible("#diff-error"):
        raise SystemExit("diff failed: " + page.text_content("#diff-error"))
    page.wait_for_selector("#cl-box .cl-entry", timeout=60_000)  # the changelog panel
    settle(page)
    shoot(page, "diff")
    # a modified row: the function's old and new disassembly side by side
    page.select_option("#diff-class", "modified")
    page.click("#diff-changelog > summary")  # fold the changelog away
    page.locator("#diff-table tbody tr.mod").first.click()
    page.wait_for_selector("#diff-fn .sbs-table tbody tr")
    settle(page)
    shoot(page, "fndiff")


def knowledge_shots(tmp: Path) -> None:
    """The studio on a function with knowledge (issue 27): its comment, prototype, local
    names and a line comment in the C, the "Comments · prototype · locals" panel, and the
    Types panel with the struct applied to one of its parameters opened. The writes are
    those of ``screenshots/make_tui.py`` (``write_knowledge``: a person through the gate)."""
    import importlib.util

    from playwright.sync_api import sync_playwright

    from kbtool.kb.db import open_rw
    from kbtool.services.demo import build_demo

    spec = importlib.util.spec_from_file_location("make_tui", HERE / "make_tui.py")
    make_tui = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tui)
    db = tmp / "knowledge.db"
    build_demo(db, echo=lambda _m: None)
    make_tui.write_knowledge(db)
    conn = open_rw(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    vid, idx = make_tui.KNOWLEDGE_FN
    with Server(db) as srv, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{srv.url}studio#v={vid}&f={idx}")
        page.wait_for_selector("#kn-comment")
        page.click("#v-c")
        page.wait_for_selector("#types .tyrow")
        page.locator("#types .tyrow", has_text="struct HIST_wksp").click()
        page.wait_for_selector("#type-detail .ty-members")
        settle(page)
        shoot(page, "studio-knowledge")
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--big",
        type=Path,
        help="the KB built by benchmarks/web_api.py --kb PATH (50,000-function version)",
    )
    ap.add_argument(
        "--only",
        choices=["data", "diff", "knowledge"],
        help="only the data screenshots (web-data, web-studio-data), the diff "
        "ones (web-diff, web-fndiff) or web-studio-knowledge",
    )
    args = ap.parse_args()
    if args.only == "knowledge":  # web-studio-knowledge: comments, prototype, locals, types
        with tempfile.TemporaryDirectory() as tmp:
            knowledge_shots(Path(tmp))
        return
    if args.only == "data":
        with tempfile.TemporaryDirectory() as tmp:
            data_shots(Path(tmp))
        return
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        story = build(db)
        with Server(db) as srv, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(srv.url)
            page.wait_for_selector("body[data-ready='1']")
            settle(page)
            if args.only == "diff":
                diff_shots(page)
                browser.close()
                return
            shoot(page, "overview")

            vid = int(page.get_attribute("body", "data-version"))
            fns = json.loads(
                urllib.request.urlopen(f"{srv.url}api/versions/{vid}/functions").read()
            )
            pos = next(i for i, f in enumerate(fns) if f["provenance"] == "human" and i > 40)
            x, y = cell_center(page, pos)
            page.mouse.move(x, y)
            page.wait_for_selector("#tooltip:not(.hidden)")
            shoot(page, "heatmap-hover")
            page.mouse.click(x, y)
            page.wait_for_function(
                "() => !['loading…', ''].includes(document.getElementById('fn-name').textContent)"
            )
            settle(page)
            shoot(page, "detail")
            # the function panel's code section (Raw WASM / C / Cleaned C, highlighted locally)
            page.wait_for_selector("#fn-code .code .kw, #fn-code .code .num")
            page.click("#code-c")
            page.locator("#fn-code").scroll_into_view_if_needed()
            page.wait_for_selector("#fn-code .code .ty")
            settle(page)
            shoot(page, "code")

            diff_shots(page)

            page.click("#tab-heatmap")
            page.fill("#search", "huf_")
            page.wait_for_function(
                "() => document.getElementById('search-results').dataset.q === 'huf_'"
            )
            page.wait_for_timeout(100)
            shoot(page, "search")

            page.fill("#search", "BIT_reload")
            page.wait_for_function(
                "() => document.getElementById('search-results').dataset.q === 'BIT_reload'"
            )
            page.locator("#search-results .sr").first.click()
            page.wait_for_function(
                "() => document.getElementById('fn-name').textContent === 'BIT_reloadDStream'"
            )
            page.click("#tab-history")
            page.wait_for_selector("#fn-history:not(.hidden) #timeline")
            page.locator("#tt-slider").fill("0")
            settle(page)
            shoot(page, "history")

            # the studio: the story function with its cleaned C, understanding and live feed
            hist = json.loads(urllib.request.urlopen(f"{srv.url}api/history/{story}").read())
            index = hist["function"]["index"]
            page.goto(f"{srv.url}studio#v={vid}&f={index}")
            page.wait_for_selector(f".fn.sel[data-index='{index}']")
            page.wait_for_selector("#feed .ev")
            page.click("#v-clean")
            page.wait_for_function(
                "() => document.getElementById('code').textContent.includes('{')"
            )
            settle(page)
            shoot(page, "studio")
            page.click("#v-wasm")
            page.wait_for_function(
                "() => document.getElementById('code').textContent.includes('end')"
            )
            settle(page)
            shoot(page, "studio-wasm")
            assert story
            browser.close()
        if args.big:
            with Server(args.big.resolve()) as srv, sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                versions = json.loads(urllib.request.urlopen(srv.url + "api/versions").read())
                big = max(versions, key=lambda v: v["functions"])
                page.goto(f"{srv.url}#v={big['id']}")
                page.wait_for_selector(
                    f"body[data-ready='1'][data-version='{big['id']}']", timeout=60_000
                )
                x, y = cell_center(page, 20_000)
                page.mouse.move(x, y)
                page.wait_for_selector("#tooltip:not(.hidden)")
                shoot(page, "heatmap-50k")
                browser.close()


if __name__ == "__main__":
    main()
