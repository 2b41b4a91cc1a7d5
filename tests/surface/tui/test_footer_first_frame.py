"""The diff and code screens' footers show their keys in the screen's first frame and are
never rebuilt as the screen opens (issue 30 point 1): Textual's footer composes no key until
the first bindings refresh and then mounts every key again; the focused widget's key (the
table's ``⏎``) arriving just after is mounted in its place, the others kept."""

from __future__ import annotations

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from tests.support.tui import make_app, screen_text, settle

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_diff_screen_footer_is_never_rebuilt_as_it_opens(tui_kb):
    app = make_app(tui_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        app.push_screen(screen)
        await settle(pilot)
        await settle(pilot)
        footer = screen.query_one(DiffFooter)
        assert screen.query_one("#diff-table").row_count > 0
        assert footer.recomposed == 0  # Textual's footer: a rebuild of every key here
        keys = list(footer.query_children(FooterKey))
        # what Textual's footer would show now, in its order, the table's ⏎ first
        wanted = [(b.key, b.action) for _, b, _, _ in screen.active_bindings.values() if b.show]
        seen: list[tuple[str, str]] = []
        for key, action in wanted:
            if action not in {a for _, a in seen}:
                seen.append((key, action))
        assert [(k.key, k.action) for k in keys] == seen
        assert keys[0].key == "enter"
        assert footer.styles.grid_size_columns == len(keys)
        assert "⏎" in screen_text(app).splitlines()[-1]


async def test_footer_keys_added_in_place_draw_as_textuals(tui_kb, monkeypatch):
    """The same footer line as Textual's own footer shows on the same screen."""
    import kbtool.tui.screens.diff as diff_screen

    lines = []
    for footer in (DiffFooter, Footer):
        monkeypatch.setattr(diff_screen, "DiffFooter", footer)
        app = make_app(tui_kb)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.push_screen(DiffScreen(1, 2))
            await settle(pilot)
            await settle(pilot)
            assert type(app.screen.query_one(Footer)) is footer
            lines.append(screen_text(app).splitlines()[-1])
    assert lines[0] == lines[1] and "⏎" in lines[0]
