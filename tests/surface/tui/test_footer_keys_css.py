"""A footer's keys' rules are in the stylesheet from the screen's first mount: the keys' first
recompose (after the first frame) adds no source, so the stylesheet's rules are not parsed and
mapped again then (issue 30: the TUI's start). What the keys look like is the snapshots'."""

from __future__ import annotations

import pytest

from kbtool.tui.widgets.diff_footer import DiffFooter
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio

KEYS = {"KeyGroup.DEFAULT_CSS", "FooterKey.DEFAULT_CSS"}  # a group of keys, a key


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_keys_first_recompose_adds_no_rules(demo_kb, monkeypatch):
    seen: list[tuple[set[str], int]] = []
    update = DiffFooter._update_keys

    async def spy(self) -> None:
        sources = {where for _path, where in self.app.stylesheet.source}
        before = len(self.app.stylesheet.source)
        await update(self)
        seen.append((sources & KEYS, len(self.app.stylesheet.source) - before))

    monkeypatch.setattr(DiffFooter, "_update_keys", spy)
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(DiffFooter)
        assert footer.recomposed >= 1 and footer.query("FooterKey")  # the keys are shown
        assert seen and seen[0] == (KEYS, 0)  # there before the first keys, none added
