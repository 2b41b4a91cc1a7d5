"""Code views without whole-module passes (issue 30): callers/callees per function from the stored
edges (the same answer the whole call graph gives), windows of a huge function's code, and the
TUI's code pane showing a huge function's first screen before the rest."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code
from kbtool.services.ingest import ingest_bytes
from tests.support.codefixtures import BIG_REPEAT, code_kb_fixture  # noqa: F401  (fixture)

GREET, HELPER_A, HELPER_B, MAIN, BIG = 1, 2, 3, 4, 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


REFS = """
(module
  (import "env" "log" (func $log (param i32)))
  (table 2 funcref)
  (elem (i32.const 0) $a $b)
  (elem declare func $c $d)
  (func $a (param i32) (result i32) local.get 0 call $log local.get 0)
  (func $b (result funcref) ref.func $c)
  (func $c (result i32) i32.const 210 call $a)
  (func $d (result funcref) ref.func $c drop ref.func $d)
  (func $e (result i32)
    i32.const 0xd2   ;; the byte of ref.func inside an immediate: not a reference
    drop
    call $c)
)
"""


@pytest.fixture
def conn(code_kb):
    c = open_ro(code_kb)
    code.clear_cache()
    yield c
    c.close()


@pytest.fixture
def refs_kb(tmp_path: Path) -> Path:
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    (tmp_path / "r.wat").write_text(REFS)
    subprocess.run(
        ["wat2wasm", str(tmp_path / "r.wat"), "-o", str(tmp_path / "r.wasm")], check=True
    )
    db = tmp_path / "kb.db"
    w = open_rw(db)
    ingest_bytes(w, (tmp_path / "r.wasm").read_bytes(), label="refs")
    w.close()
    return db


def _shape(nb: dict) -> dict:
    return {
        k: [
            (
                e["index"],
                e["kind"],
                e["name"],
                e["status"],
                e["in_table"],
                e["stable_id"],
                e["provenance"],
                e["imported"],
            )
            for e in v
        ]
        for k, v in nb.items()
    }


def test_neighbours_per_function_equal_the_whole_graph(refs_kb: Path) -> None:
    conn = open_ro(refs_kb)
    code.clear_cache()
    n = code.code_module(conn, 1).num_functions
    fast = {i: _shape(code.neighbours(conn, 1, i)) for i in range(1, n)}
    assert code.code_module(conn, 1).graph is None  # no whole-module pass was made
    assert code.code_module(conn, 1).parsed.analysis is None
    code.callgraph(conn, 1)  # now the whole graph answers
    whole = {i: _shape(code.neighbours(conn, 1, i)) for i in range(1, n)}
    assert fast == whole
    c = fast[3]  # $c: called by $e, referenced by $b and $d; calls $a
    assert [(x[0], x[1]) for x in c["callers"]] == [(2, "ref"), (4, "ref"), (5, "direct")]
    assert [(x[0], x[1]) for x in c["callees"]] == [(1, "direct")]
    assert [(x[0], x[1]) for x in fast[4]["callees"]] == [(3, "ref"), (4, "ref")]
    assert fast[5]["callers"] == []  # i32.const 0xd2 is no ref.func
    conn.close()


def test_neighbours_on_the_code_fixture(conn) -> None:
    nb = code.neighbours(conn, 1, MAIN)
    assert [c["index"] for c in nb["callees"]] == [GREET, HELPER_A] and nb["callers"] == []
    assert [c["index"] for c in code.neighbours(conn, 1, GREET)["callers"]] == [MAIN]


def test_windows_are_slices_of_the_whole_listing(conn) -> None:
    whole = code.disassembly(conn, 1, BIG)["mnemonics"].splitlines()
    code.clear_cache()  # windows without the whole listing cached
    got: list[str] = []
    offset: int | None = 0
    while offset is not None:
        w = code.code_window(conn, 1, BIG, kind="wasm", offset=offset, limit=1_500)
        assert w["total"] == len(whole)
        got += w["lines"]
        offset = w["next_offset"]
    assert got == whole
    c = code.disassembly(conn, 1, BIG)["lifted_c"].splitlines()
    w = code.code_window(conn, 1, BIG, kind="c", offset=10, limit=5)
    assert w["lines"] == c[10:15] and w["total"] == len(c) and w["next_offset"] == 15
    assert code.code_window(conn, 1, BIG, offset=len(whole) + 5)["lines"] == []
    with pytest.raises(ValueError, match="kind must be"):
        code.code_window(conn, 1, BIG, kind="asm")


def test_first_screen_of_a_huge_function_is_partial_and_not_cached(conn) -> None:
    d = code.disassembly(conn, 1, BIG, max_lines=100)
    assert d["partial"] and d["instructions"] == 4 * BIG_REPEAT + 2  # the header is the other line
    lines = d["mnemonics"].splitlines()
    assert len(lines) == 1 + 100 + 1 and "truncated after 100" in lines[-1]
    full = code.disassembly(conn, 1, BIG)
    assert not full["partial"] and full["mnemonics"].splitlines()[:101] == lines[:101]
    small = code.disassembly(conn, 1, MAIN, max_lines=100)
    assert not small["partial"]


def _get(db, path: str, query: dict) -> tuple[int, dict]:
    from kbtool.web.router import route

    status, _ctype, body = route(str(db), path, {k: [v] for k, v in query.items()})
    return status, json.loads(body)


def test_api_window(code_kb) -> None:
    code.clear_cache()
    status, body = _get(code_kb, f"/api/disasm/1/{BIG}", {"offset": "0", "limit": "50"})
    assert status == 200
    assert (
        len(body["lines"]) == 50
        and body["next_offset"] == 50
        and body["total"] == 4 * BIG_REPEAT + 3
    )
    assert _get(code_kb, f"/api/disasm/1/{BIG}", {"kind": "c", "limit": "3"})[1]["lines"][
        0
    ].startswith("/*")
    assert _get(code_kb, f"/api/disasm/1/{BIG}", {"kind": "x"})[0] == 400
    assert _get(code_kb, f"/api/disasm/1/{BIG}", {"offset": "-1"})[0] == 400
    assert "mnemonics" in _get(code_kb, f"/api/disasm/1/{BIG}", {})[1]  # the contract's object


@pytest.mark.anyio
async def test_tui_shows_the_first_screen_then_the_rest(code_kb, monkeypatch) -> None:
    from kbtool.render.code import WASM
    from kbtool.tui.screens.code import CodeScreen, LinesView
    from tests.support.tui import make_app, screen_text, settle

    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()
    seen: list[bool] = []
    real = CodeScreen._loaded

    def spy(self, gen, result, error):
        seen.append(bool(result and result[0].get("partial")))
        return real(self, gen, result, error)

    monkeypatch.setattr(CodeScreen, "_loaded", spy)
    app = make_app(code_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = CodeScreen(1, BIG, WASM)
        app.push_screen(screen)
        for _ in range(200):
            await pilot.pause(0.02)
            if screen._pages is not None:
                break
        assert seen == [True]  # the first screen came partial ...
        view = screen.query_one("#code-view", LinesView)
        assert view.count == 4 * BIG_REPEAT + 3  # ... then the rest, by pages
        await pilot.press("pagedown")
        await settle(pilot)
        assert view.cursor > 0
        assert "Raw WASM" in screen_text(app)
