"""A screen's rules of kbtool's stylesheet, added when the first screen of its kind is registered.

``kbtool.tcss`` (the app's ``CSS_PATH``) holds what the first screen needs; the rules of screens
not shown at start are in ``<name>.tcss`` beside it and are parsed only when used (issue 30: the
start parsed every screen's rules before its first frame). They go into the stylesheet as the
app's own file would (user rules, tie-breaker 0, no scope), after it: each file's rules keep
their order, and only select the nodes of their screen, so what wins is what won when they were
all in ``kbtool.tcss``.

The file is added in the screen's ``_post_register`` (where Textual adds every widget's
``DEFAULT_CSS``), before the stylesheet is applied to the screen: nothing is styled twice.
Textual's own ``Screen.CSS_PATH`` loads its file after the screen is registered and then
styles every node of the app again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from textual.app import App

HERE = Path(__file__).resolve().parent


def add_screen_css(app: App, name: str) -> bool:
    """Add ``<name>.tcss`` to the app's stylesheet unless it is there (True when added)."""
    path = str(HERE / f"{name}.tcss")
    stylesheet = app.stylesheet
    if stylesheet.has_source(path, ""):
        return False
    css = Path(path).read_text(encoding="utf-8")
    stylesheet.add_source(css, read_from=(path, ""), is_default_css=False)
    return True


class ScreenCss:
    """Mixed into a screen whose rules are in ``TCSS`` (a ``<name>.tcss`` file's name)."""

    TCSS: ClassVar[str | None] = None

    def _post_register(self, app: App) -> None:
        if self.TCSS:
            add_screen_css(app, self.TCSS)
        super()._post_register(app)  # type: ignore[misc]
