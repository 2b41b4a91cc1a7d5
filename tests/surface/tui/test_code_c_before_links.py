"""A huge function's C is on the terminal before its callers and callees are read (issue 30
points 1-2): reading them beside the C's first frame (a huge body's ``ref.func`` scan) held
the interpreter that frame needed. The links still come."""

from __future__ import annotations

import pytest

from kbtool.render.code import C
from kbtool.services import code
from kbtool.tui.widgets.code_view import code_width
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)

BIG = 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _huge(monkeypatch) -> None:
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()


@pytest.mark.anyio
async def test_links_are_read_after_the_c_is_drawn(code_kb, monkeypatch) -> None:
    from kbtool.tui.screens.code import CodeScreen
    from tests.support.tui import make_app, screen_text, settle, until

    _huge(monkeypatch)
    frames: list[int] = []
    seen: list[tuple[bool, int]] = []  # per neighbours call: (C shown, frames since it was)
    c_at: list[int] = []
    real = code.neighbours

    def spied(conn, vid, idx):
        if idx == BIG:
            shown = bool(c_at)
            seen.append((shown, len(frames) - c_at[0] if shown else 0))
        return real(conn, vid, idx)

    monkeypatch.setattr(code, "neighbours", spied)
    real_loaded = CodeScreen._c_loaded

    def c_loaded(self, gen, c, split):
        real_loaded(self, gen, c, split)
        c_at.append(len(frames))

    monkeypatch.setattr(CodeScreen, "_c_loaded", c_loaded)
    app = make_app(code_kb)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        display = app._display

        def spy(screen, renderable):
            if renderable is not None:
                frames.append(1)
            return display(screen, renderable)

        app._display = spy
        screen = CodeScreen(1, BIG)
        app.push_screen(screen)
        await until(pilot, lambda: screen.links is not None and screen._shown == (BIG, C))
        await settle(pilot)
        assert screen._shown == (BIG, C) and not screen.code.get("c_pending")
        # read once, after the C was applied and a frame with it was drawn
        assert len(seen) == 1 and seen[0][0] and seen[0][1] >= 1
        assert screen.links is not None and "callers (" in screen_text(app)


def test_code_width_with_its_text_is_the_same_width() -> None:
    for text in (
        "int f(void) {\n  return 1;\n}",
        "a\n" + "x" * 300 + "\nb",
        'puts("\\x1b[31m");\nx = "\x1b[31m";',  # a control character: escaped to be measured
        "a\r\nbb\u2028ccc",  # separators that are not "\n"
        "",
    ):
        lines = text.splitlines() or [""]
        assert code_width(lines, text) == code_width(lines)
    assert code_width(["ab", "\x00"], "ab\n\x00") == code_width(["ab", "\x00"]) == 4
