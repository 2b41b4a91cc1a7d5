"""The code pane's knowledge keys, driven with Pilot on a real KB: ``;`` on an instruction
writes a line comment, ``;`` in the C writes the function comment, ``n`` on a ``local.get``
renames that local, ``y`` sets the prototype (a bad one is an error toast, nothing written);
each through the gate as human:tui and shown at once."""

from __future__ import annotations

import asyncio
import shutil

from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.tui.screens.code import CodeScreen, LinesView
from kbtool.tui.screens.knowledge import PromptScreen
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def fill(app, pilot, *values: str) -> None:
    assert isinstance(app.screen, PromptScreen)
    from textual.widgets import Input

    boxes = list(app.screen.query(Input))
    for box, v in zip(boxes[len(boxes) - len(values) :], values, strict=True):
        box.value = v
    await press(pilot, "enter")
    await asyncio.sleep(0.2)
    await settle(pilot)


def test_comment_rename_local_and_prototype_keys(code_kb, tmp_path):
    db = tmp_path / "kb.db"
    shutil.copy(code_kb, db)
    conn = open_ro(db)
    sid = queries.get_function(conn, 1, 4)["stable_id"]
    wasm_type = queries.get_function(conn, 1, 4)["type"]
    conn.close()

    async def main():
        app = make_app(db)
        async with app.run_test(size=(110, 32)) as pilot:
            await settle(pilot)
            app.push_screen(CodeScreen(1, 4, "wasm"))
            await settle(pilot)
            view = app.screen.query_one("#code-view", LinesView)
            lines = app.screen.code["mnemonics"].splitlines()
            at = next(k for k, ln in enumerate(lines) if "local.get 0" in ln)
            view.cursor = at
            await press(pilot, "semicolon")
            await fill(app, pilot, "checks the */ argument")
            shown_wasm = screen_text(app)
            view = app.screen.query_one("#code-view", LinesView)
            view.cursor = at
            await press(pilot, "n")
            await fill(app, pilot, "0", "argc")
            await press(pilot, "w")  # C
            await press(pilot, "semicolon")
            await fill(app, pilot, "Entry point of the test program.")
            await press(pilot, "y")
            await fill(app, pilot, "double main(void)")  # disagrees with the wasm signature
            toasts = [n.message for n in app._notifications]
            await press(pilot, "y")
            params = ", ".join(
                ["int argc"]
                + [f"int a{k}" for k in range(1, wasm_type.count("i32") - ("-> i32" in wasm_type))]
            )
            ret = "int" if wasm_type.endswith("-> i32") else "void"
            await fill(app, pilot, f"{ret} main({params})")
            return shown_wasm, screen_text(app), toasts

    shown_wasm, shown_c, toasts = asyncio.run(main())
    conn = open_ro(db)
    recs = {(r["kind"], r["key"]): r for r in kn.for_target(conn, sid)}
    assert recs[("comment", "")]["value"]["text"] == "Entry point of the test program."
    assert recs[("local", "0")]["value"]["name"] == "argc"
    assert all(r["provenance"] == "human" and r["locked"] for r in recs.values())
    assert any(k[0] == "line_comment" for k in recs)
    assert all(e["actor"] == "human:tui" for e in kn.events(conn, sid) if e["written"])
    assert "checks the */ argument" in shown_wasm
    assert "Entry point of the test program." in shown_c and "argc" in shown_c
    assert any("not written: prototype disagrees with the wasm signature" in m for m in toasts)
    assert ("prototype", "") in recs
