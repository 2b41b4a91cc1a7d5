"""A huge function whose C is kept on disk shows its C in the code screen's first frame
(issue 30 points 1-2): no "lifting C…" first screen of disassembly, no second fetch; the
callers and callees still come after it."""

from __future__ import annotations

import pytest

from kbtool.kb.db import open_ro
from kbtool.render.code import C
from kbtool.services import code, code_function, code_kept_c, code_prepared
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)

BIG = 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _refused(*args, **kw):
    raise AssertionError("the C was asked for again after the first answer")


@pytest.mark.anyio
async def test_kept_c_is_in_the_first_frame(code_kb, tmp_path, monkeypatch) -> None:
    from kbtool.tui.screens.code import CodeScreen, LinesView
    from tests.support.tui import make_app, screen_text, settle, until

    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()
    conn = open_ro(code_kb)
    try:  # the test KB's largest body counts as huge; its C lifted once and kept on disk
        cm = code_prepared.code_module(conn, 1)
        monkeypatch.setattr(code_kept_c, "MIN_BODY", code_kept_c.body_size(cm.lm, BIG))
        c_lines = code.lifted_c(conn, 1, BIG)[0].splitlines()
    finally:
        conn.close()
        code_prepared.flush_store()
    code.clear_cache()  # a fresh TUI: nothing of it in this process
    monkeypatch.setattr(code_function, "_lift", _refused)
    monkeypatch.setattr(code, "lifted_c", _refused)
    shown: list[tuple] = []
    real_show = CodeScreen._show

    def show(self) -> None:
        real_show(self)
        shown.append(self._shown)

    monkeypatch.setattr(CodeScreen, "_show", show)
    app = make_app(code_kb)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            screen = CodeScreen(1, BIG)  # the C view
            app.push_screen(screen)
            await until(pilot, lambda: screen.links is not None and screen.code is not None)
            await settle(pilot)
            assert shown and set(shown) == {(BIG, C)}  # never the disassembly meanwhile
            assert screen.code["partial"] and not screen.code.get("c_pending")
            view = screen.query_one("#code-view", LinesView)
            assert [view.render_fn(i).plain for i in range(view.count)] == c_lines
            text = screen_text(app)
            assert "lifting C" not in text and " C " in text
            assert "callers (" in text and "callers (…)" not in text
    finally:
        code.clear_cache()
        code_prepared.flush_store()
