"""The TUI's data screens (issue 26), driven with Pilot on an analysed module: ``x`` on a line
of the code screen lists the xrefs of what it references (a global, a data label, a call, a
string) and Enter jumps to the referencing instruction; ``s`` lists the strings and globals,
Enter on one lists its xrefs; a line with nothing to look up says so; two snapshots."""

from __future__ import annotations

import asyncio

import pytest

from kbtool.kb.db import open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from kbtool.tui.screens.code import WASM, C, CodeScreen, LinesView
from kbtool.tui.screens.data import DataScreen
from kbtool.tui.screens.xrefs import XrefsScreen
from testkit.wasmbuild import FIXTURES, build_wat, have_wabt
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")


def _wat() -> str:
    wat = (FIXTURES / "datamodel.wat").read_text()
    old = '"create table %s' + "\\00" * 16 + '"'
    new = "create [b]%s[/b]"  # 16 bytes of Rich markup: must show literally
    return wat.replace(old, '"' + new + "\\00" * 16 + '"')


@pytest.fixture(scope="module")
def data_kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("datatui")
    wasm = build_wat(_wat(), d, name="datatui")
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        analyze_version(conn, 1)
    finally:
        conn.close()
    return db


def drive(db, steps, size=(100, 30)):
    async def main():
        app = make_app(db)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            return await steps(app, pilot)

    return asyncio.run(main())


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def open_code(app, pilot, mode: str, contains: str) -> CodeScreen:
    app.push_screen(CodeScreen(1, 1, mode))
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, CodeScreen) and screen.code is not None
    text = screen.code["mnemonics" if mode == WASM else "lifted_c"].splitlines()
    line = next(k for k, x in enumerate(text) if contains in x)
    screen.query_one("#code-view", LinesView).action_cursor_to(line)
    await settle(pilot)
    return screen


def test_x_on_a_global_and_enter_jumps_to_the_instruction(data_kb):
    async def steps(app, pilot):
        await open_code(app, pilot, WASM, "global.set $__stack_pointer")
        await press(pilot, "x")
        xs = app.screen
        assert isinstance(xs, XrefsScreen) and xs.target == "g:__stack_pointer"
        text = screen_text(app)
        refs = xs.result["refs"]
        await press(pilot, "down", "enter")  # the second reference: a write
        code = app.screen
        assert isinstance(code, CodeScreen) and code.mode == WASM
        view = code.query_one("#code-view", LinesView)
        line = code.code["mnemonics"].splitlines()[view.cursor]
        return text, refs, line

    text, refs, line = drive(data_kb, steps)
    assert "global __stack_pointer" in text and "3 reference(s)" in text
    assert [r["kind"] for r in refs] == ["read", "write", "write"]
    assert line.lstrip().startswith(f"{refs[1]['offset']:06x}:") and "global.set" in line


def test_x_in_the_c_on_a_data_label_a_call_and_nothing(data_kb):
    async def steps(app, pilot):
        await open_code(app, pilot, C, "  puts(")
        await press(pilot, "x")
        label = app.screen
        assert isinstance(label, XrefsScreen)
        label_text = screen_text(app)
        await press(pilot, "escape")
        assert isinstance(app.screen, CodeScreen)
        await press(pilot, "w")  # Raw WASM: the call line
        code = app.screen
        text = code.code["mnemonics"].splitlines()
        code.query_one("#code-view", LinesView).action_cursor_to(
            next(k for k, x in enumerate(text) if "call $puts" in x)
        )
        await press(pilot, "x")
        call = app.screen
        assert isinstance(call, XrefsScreen)
        call_text = screen_text(app)
        await press(pilot, "escape")
        code.query_one("#code-view", LinesView).action_cursor_to(
            next(k for k, x in enumerate(text) if x.strip().endswith("local.get 0"))
        )
        await press(pilot, "x")
        still = app.screen
        notes = [n.message for n in app._notifications]
        return label.target, label_text, call.target, call.result, call_text, still, notes

    target, label_text, call_target, call_res, call_text, still, notes = drive(data_kb, steps)
    assert target.startswith("s_create")
    assert f"cstring {target}" in label_text and "'create [b]%s[/b]'" in label_text
    assert call_target == "#0" and call_res["target"]["name"] == "puts"
    assert "#1" in call_text  # function 1 calls puts
    assert isinstance(still, CodeScreen)
    assert any("nothing on this line" in n for n in notes)


def test_strings_and_globals_screen(data_kb):
    async def steps(app, pilot):
        await press(pilot, "s")  # from the heatmap of version 1
        ds = app.screen
        assert isinstance(ds, DataScreen)
        text = screen_text(app)
        await press(pilot, "enter")  # the string's xrefs
        xs = app.screen
        assert isinstance(xs, XrefsScreen)
        string_refs = xs.result
        await press(pilot, "escape", "tab", "enter")  # the first global
        gx = app.screen
        await press(pilot, "escape", "slash", *"nomatch", "enter")
        empty = screen_text(app)
        return text, string_refs, gx.target, gx.result, empty

    text, string_refs, gtarget, gres, empty = drive(data_kb, steps)
    assert "create [b]%s[/b]" in text  # literal: the markup is not applied
    assert "__stack_pointer" in text and "stack_pointer" in text
    assert string_refs["total"] == 1 and string_refs["refs"][0]["func_index"] == 1
    assert gtarget == "g:0" and gres["target"]["name"] == "__stack_pointer"
    assert "0 string(s)" in empty and "no strings" in empty


def test_without_a_model_x_says_how_to_build_it(tmp_path):
    from kbtool.kb.datamodel import drop_data_model

    wasm = build_wat(_wat(), tmp_path, name="nomodel")
    db = tmp_path / "kb.db"
    conn = open_rw(str(db), create=True)
    ingest_file(conn, str(wasm), label="1.0")
    with conn:  # a version ingested before ingest built the model
        drop_data_model(conn, 1)
    conn.close()

    async def steps(app, pilot):
        await open_code(app, pilot, WASM, "global.set")
        await press(pilot, "x")
        return app.screen, [n.message for n in app._notifications]

    screen, notes = drive(db, steps)
    assert isinstance(screen, CodeScreen)
    assert any("kbtool analyze 1" in n for n in notes)


def _open_xrefs(app):
    app.push_screen(XrefsScreen(1, "g:__stack_pointer"))


def test_xrefs_snapshot(snap_compare, data_kb):
    async def run(pilot):
        await settle(pilot)
        _open_xrefs(pilot.app)
        await settle(pilot)

    assert snap_compare(make_app(data_kb), terminal_size=(80, 24), run_before=run)


def test_data_screen_snapshot(snap_compare, data_kb):
    async def run(pilot):
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)

    assert snap_compare(make_app(data_kb), terminal_size=(80, 24), run_before=run)
