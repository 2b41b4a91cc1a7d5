"""Write an SVG screenshot of every ``kbtool tui`` screen into ``screenshots/``.

The screens show the demo KB (two real zstd releases, built here with ``kbtool demo``'s
code and a frozen clock), driven with Pilot exactly as a user would with the keyboard:

    python screenshots/make_tui.py            # -> screenshots/tui-*.svg
    python screenshots/make_tui.py --out DIR  # somewhere else

Sizes: 80x24 (the size the TUI is designed to work at) unless noted in the table below.
``--only NAME`` (repeatable) writes just those screenshots (e.g. ``--only code --only code-diff``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("KBTOOL_FROZEN_TIME", "2026-01-15T12:00:00.000000Z")

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_ro, open_rw  # noqa: E402
from kbtool.services.deep import run_deep  # noqa: E402
from kbtool.services.demo import build_demo  # noqa: E402
from kbtool.tui.app import KbApp  # noqa: E402


async def settle(pilot) -> None:
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def keys(*presses: str):
    async def run(pilot) -> None:
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)

    return run


def call(fn, *presses: str):
    async def run(pilot) -> None:
        await settle(pilot)
        fn(pilot.app)
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)

    return run


async def shoot(db: Path, out: Path, name: str, step, size=(80, 24), **app_kw) -> Path:
    app = KbApp(db, poll_seconds=None, blink=False, **app_kw)
    async with app.run_test(size=size) as pilot:
        await step(pilot)
        path = out / f"tui-{name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
    return path


def plan(db: Path) -> list[tuple[str, object, tuple[int, int], dict]]:
    conn = open_ro(db)
    try:
        named = queries.search_symbols(conn, "HUF_decompress", limit=1) or queries.search_symbols(
            conn, "_", limit=1
        )
        target = queries.functions_by_stable_id(conn, named[0]["stable_id"])[-1]
    finally:
        conn.close()
    detail = (target["version_id"], target["index"])
    return [
        ("heatmap", keys(*"llllllllllllj"), (80, 24), {}),
        ("heatmap-wide", keys(*"lllllllllllllllllllj"), (120, 36), {}),
        ("heatmap-light", keys(*"llllllllllllj"), (80, 24), {"theme": "light"}),
        ("versions", keys("v"), (80, 24), {}),
        ("diff", keys("d"), (80, 24), {}),
        ("diff-changelog", keys("d", "2", "c"), (100, 32), {}),
        ("search", keys("slash", *"huf_dec", "down"), (80, 24), {}),
        ("detail", call(lambda app: app.open_detail(*detail)), (80, 24), {}),
        ("history", call(lambda app: app.open_detail(*detail), "h"), (80, 24), {}),
        ("rename", call(lambda app: app.open_detail(*detail), "n"), (80, 24), {}),
        ("palette", keys("ctrl+p", *"ZSTD_dec"), (80, 24), {}),
        ("small-terminal", keys("l"), (60, 18), {}),
        ("read-only", call(lambda app: app.open_detail(*detail)), (80, 24), {"read_only": True}),
        ("code", call(lambda app: app.open_detail(*detail), "c"), (100, 30), {}),
        ("code-wasm", call(lambda app: app.open_detail(*detail), "c", "w"), (100, 30), {}),
        ("code-diff", keys("d", "2", "enter"), (120, 32), {}),
        ("code-diff-unified", keys("d", "2", "enter", "u", "n"), (100, 30), {}),
        ("feed", keys("a"), (100, 24), {}),
    ]


def data_plan(db: Path) -> list[tuple[str, object, tuple[int, int], dict]]:
    """The data screens (issue 26) on the analysed copy of the demo KB: the strings and
    globals of the latest version, and the xrefs of its most used string."""
    from kbtool.services import data as data_svc
    from kbtool.tui.screens.xrefs import XrefsScreen

    conn = open_ro(db)
    try:
        vid = queries.latest_version_id(conn)
        items = data_svc.strings(conn, vid, limit=100_000)["items"]
        top = max(items, key=lambda i: i["refs"])
    finally:
        conn.close()
    return [
        ("data", keys("s"), (100, 30), {}),
        (
            "xrefs",
            call(lambda app: app.push_screen(XrefsScreen(vid, hex(top["address"])))),
            (100, 30),
            {},
        ),
    ]


KNOWLEDGE_FN = (2, 100)  # zstd's HIST_countFast_wksp in the demo (unnamed there)
KNOWLEDGE_SHOTS = {"code-comment", "code-prototype", "code-knowledge", "types"}


def knowledge_plan(db: Path) -> list[tuple[str, object, tuple[int, int], dict]]:
    """The knowledge shots (issue 27) on the demo KB: the line-comment dialog on an
    instruction of Raw WASM (``;``) and the prototype dialog (``y``, prefilled from the wasm
    signature)."""
    vid, idx = KNOWLEDGE_FN
    return [
        (
            "code-comment",
            call(
                lambda app: app.open_detail(vid, idx),
                "c",
                "w",
                *"jjjjjjj",
                "semicolon",
                *"workspace must be 4-aligned",
            ),
            (100, 30),
            {},
        ),
        ("code-prototype", call(lambda app: app.open_detail(vid, idx), "c", "y"), (100, 30), {}),
    ]


def write_knowledge(db: Path) -> None:
    """What the dialogs write, as a person would (through the gate, ``human:tui``): a name,
    the function comment, a line comment, the prototype and local names; and a header of
    types, one applied to a parameter."""
    from kbtool.kb.gate import upsert_symbol
    from kbtool.services import knowledge as ks
    from kbtool.services import types as ts

    vid, idx = KNOWLEDGE_FN
    target, who = f"{vid}:{idx}", "human:tui"
    conn = open_rw(db)
    try:
        f = ks.resolve_function(conn, target)
        upsert_symbol(
            conn,
            f["stable_id"],
            "HIST_countFast_wksp",
            provenance="human",
            confidence=1.0,
            actor=who,
            lock=True,
            version_id=vid,
        )
        ks.set_comment(
            conn,
            target,
            "Counts the bytes of source into count[0..255]; needs a 4-aligned workspace of 4 KiB.",
            actor=who,
        )
        from kbtool.services.code import disassembly

        offs = [
            int(ln[1:7], 16)
            for ln in disassembly(conn, vid, idx)["mnemonics"].splitlines()
            if len(ln) > 8 and ln[7] == ":" and ln[1:7].isalnum()
        ]
        ks.set_comment(conn, target, "workspace must be 4-aligned", line=offs[3], actor=who)
        ks.set_prototype(
            conn,
            target,
            "int HIST_countFast_wksp(unsigned *count, unsigned *maxSymbolValuePtr,"
            " const void *source, int sourceSize, void *workSpace, int workSpaceSize)",
            actor=who,
        )
        for local, name in (("l6", "largest"), ("l7", "symbol")):
            ks.rename_local(conn, target, local, name, actor=who)
        ts.add_types(
            conn,
            "struct HIST_wksp { unsigned counting[4][256]; };\n"
            "typedef enum { trustInput, checkMaxSymbolValue } HIST_checkInput_e;\n"
            "struct ZSTD_inBuffer { const void *src; int size; int pos; };\n",
        )
        ts.apply_local(conn, target, 4, "struct HIST_wksp *", param=True)
    finally:
        conn.close()


def knowledge_after_plan(db: Path) -> list[tuple[str, object, tuple[int, int], dict]]:
    """The code pane after the writes (comment, prototype, local names, a line comment in
    the C) and the types screen (``T``) on the struct applied to a parameter."""
    vid, idx = KNOWLEDGE_FN
    return [
        ("code-knowledge", call(lambda app: app.open_detail(vid, idx), "c"), (100, 30), {}),
        ("types", keys("T", "down"), (100, 30), {}),
    ]


async def main_async(out: Path, big: bool, only: list[str] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kbtool-demo.db"
        build_demo(db, echo=lambda _m: None)
        conn = open_rw(db)
        run_deep(conn, 2, max_functions=8)  # events for the agents feed screen
        conn.close()
        written = []
        for name, step, size, kw in plan(db):
            if only and name not in only:
                continue
            written.append(await shoot(db, out, name, step, size, **kw))
        if not only or {"data", "xrefs"} & set(only):
            import shutil

            from kbtool.services.analyze import analyze_version

            adb = Path(tmp) / "analysed.db"  # analyze writes names: the other shots keep the demo
            shutil.copyfile(db, adb)
            conn = open_rw(adb)
            analyze_version(conn, queries.latest_version_id(conn))
            conn.close()
            for name, step, size, kw in data_plan(adb):
                if only and name not in only:
                    continue
                written.append(await shoot(adb, out, name, step, size, **kw))
        if not only or KNOWLEDGE_SHOTS & set(only):
            import shutil

            for name, step, size, kw in knowledge_plan(db):
                if not only or name in only:
                    written.append(await shoot(db, out, name, step, size, **kw))
            kdb = Path(tmp) / "knowledge.db"  # the writes stay off the other shots
            shutil.copyfile(db, kdb)
            write_knowledge(kdb)
            for name, step, size, kw in knowledge_after_plan(kdb):
                if not only or name in only:
                    written.append(await shoot(kdb, out, name, step, size, **kw))
        if big and not only:
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "bench_tui", ROOT / "benchmarks" / "tui.py"
            )
            bench = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(bench)  # benchmarks/tui.py: 50,000 generated functions
            build_big = bench.build

            big_db = Path(tmp) / "big.db"
            build_big(big_db, 50_000, False)
            written.append(
                await shoot(big_db, out, "heatmap-50k", keys(*"jjjjjlllll", "pagedown"), (100, 30))
            )
        if only:
            return written
        empty = Path(tmp) / "empty.db"
        open_rw(empty).close()
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            written.append(await shoot(Path("empty.db"), out, "empty-kb", keys(), (80, 24)))
        finally:
            os.chdir(cwd)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots")
    ap.add_argument(
        "--no-big", action="store_true", help="skip the 50,000-function heatmap (takes ~10 s)"
    )
    ap.add_argument(
        "--only", action="append", help="only this screenshot (name without tui-); repeatable"
    )
    args = ap.parse_args()
    for path in asyncio.run(main_async(args.out.resolve(), not args.no_big, args.only)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
