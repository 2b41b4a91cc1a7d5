"""What every kbtool screen shares: back, history, rename, live reload, the function under focus."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, TypeVar

from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from kbtool.plainclass import FrozenPlain
from kbtool.tui.workers import ReleasingWorkers

if TYPE_CHECKING:
    from kbtool.tui.app import KbApp


class FunctionRef(FrozenPlain):
    """A function of one version, as the screens hand it to each other: a frozen dataclass's
    behaviour without its generated methods compiled at the TUI's start (issue 30)."""

    _FIELDS = ("version_id", "index", "stable_id", "name")
    __slots__ = _FIELDS
    version_id: int
    index: int
    stable_id: str
    name: str | None

    def __init__(
        self, version_id: int, index: int, stable_id: str, name: str | None = None
    ) -> None:
        object.__setattr__(self, "version_id", version_id)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "stable_id", stable_id)
        object.__setattr__(self, "name", name)


BACK = Binding("escape,backspace", "back", "back", key_display="esc")
BACK_HIDDEN = Binding("escape,backspace", "back", "back", show=False)
RENAME = Binding("n", "rename", "rename")
HISTORY = Binding("h", "history", "history")


# screens made and not mounted yet (a Pilot test or the benchmark makes one, then awaits
# before pushing it): short-lived, so the app does not freeze while one exists (issue 30)
_UNSHOWN: weakref.WeakSet = weakref.WeakSet()


def unshown_screens(stack: list) -> bool:
    """A kbtool screen was made, not mounted yet and not on ``stack`` (the screen stack,
    whose screens are judged by what they are: see ``KbApp.resident_only``)."""
    return any(s not in stack for s in list(_UNSHOWN))


def _breakpoints(screen: Screen) -> bool:
    """Whether the screen's classes follow its size (Textual's breakpoints): then every
    Resize goes to Textual's handler, which sets them."""
    app = screen.app
    h = (
        app.HORIZONTAL_BREAKPOINTS
        if screen.HORIZONTAL_BREAKPOINTS is None
        else screen.HORIZONTAL_BREAKPOINTS
    )
    v = (
        app.VERTICAL_BREAKPOINTS
        if screen.VERTICAL_BREAKPOINTS is None
        else screen.VERTICAL_BREAKPOINTS
    )
    return bool(h or v)


def style_inputs(app) -> tuple:
    """What a screen's computed styles depend on beyond its own widgets: the app's CSS
    generation (a theme change bumps it; Textual restyles only the screens on the stack
    then) and the app's classes (``-small``). A kept screen closed and shown again with these
    unchanged has its styles as they were (issue 30)."""
    return (getattr(app, "_css_update_count", None), app.classes, app.theme)


S = TypeVar("S", bound=Screen)


def push_kept(app, name: str, cls: type[S], *args: Any) -> S:
    """Push ``cls(*args)`` the way the app keeps one screen of a kind (issue 30): its kept
    screen (installed as ``name``) shown again with ``args`` swapped in (``swap(*args)``:
    not composed, mounted and styled again); a new one while the kept one is open (a call
    followed from it) or not running; the first one made is installed as ``name``."""
    kept = app.get_screen(name) if app.is_screen_installed(name) else None
    if kept is None or not isinstance(kept, cls):
        screen = cls(*args)
        if kept is None:
            app.install_screen(screen, name)
    elif kept in app.screen_stack or not kept.is_running:
        screen = cls(*args)
    else:
        kept.swap(*args)  # (every kept kind has swap, taking its constructor's arguments)
        screen = kept
    app.push_screen(screen)
    return screen


def _laid_out_at(screen: Screen, size: object) -> bool:
    """Whether the screen is laid out at ``size`` already (False when it cannot tell)."""
    compositor = getattr(screen, "_compositor", None)
    return compositor is not None and compositor.size == size


class KbScreen(ReleasingWorkers, Screen):
    """Base of the kbtool screens.

    Subclasses implement :meth:`reload` (re-read from the KB keeping the cursor; called on
    mount and whenever the KB changes underneath) and :meth:`current_function` (what
    ``n``, ``h`` and Enter act on).
    """

    BINDINGS: list = []  # each screen lists its own keys (BACK, HISTORY, RENAME, ...)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        _UNSHOWN.add(self)  # until mounted: frozen meanwhile, a closed one would leak

    @property
    def kb(self) -> KbApp:
        return self.app  # type: ignore[return-value]

    def current_function(self) -> FunctionRef | None:
        return None

    def reload(self) -> None:
        """Re-read everything shown from the KB, keeping the cursor where it was."""

    seen_token: tuple[int, int] | None = None

    def refresh_from_kb(self) -> None:
        if not self.is_current:
            self.seen_token = None  # not visible: re-read when it is shown again
            return
        self.seen_token = self.kb.kb_token
        self.reload()
        self.refresh_bindings()  # what n / h / Enter can act on may have changed

    def on_mount(self) -> None:
        # Textual calls on_mount of every class in the MRO: subclasses set up their widgets
        # in their own on_mount (which runs first) and must not call super().on_mount().
        _UNSHOWN.discard(self)
        self.refresh_from_kb()

    async def _on_resize(self, event: events.Resize) -> None:
        # A pushed screen's first layout sends the screen itself a Resize (it was just
        # shown), and Textual's handler lays it out again at the same size, then every screen
        # under it: one full layout and render per open for nothing (~40 ms CPU of a detail
        # open on ffmpeg). A Resize to the size every screen is already laid out at is
        # dropped here; a real one (the terminal's) goes on to Textual's handler.
        # (Textual's private parts: a release without them keeps its own handler's work)
        compositor = getattr(self, "_compositor", None)
        stack = getattr(self.app, "_background_screens", None)
        if compositor is None or stack is None:
            return
        if event.size == compositor.size and not _breakpoints(self):
            if all(_laid_out_at(s, event.size) for s in stack if s is not self):
                event.stop()
                event.prevent_default()

    def on_screen_resume(self) -> None:
        # Coming back from a screen pushed on top: the KB may have changed meanwhile.
        if self.seen_token != self.kb.kb_token:
            self.refresh_from_kb()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("rename", "history") and isinstance(self.focused, Input):
            return False  # typing: n and h are letters here
        if action == "rename":
            if self.kb.read_only:
                return False  # hidden: --read-only removes the action
            return True if self.current_function() is not None else None
        if action == "history":
            return True if self.current_function() is not None else None
        if action == "back":
            return len(self.app.screen_stack) > 1
        return True

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_history(self) -> None:
        ref = self.current_function()
        if ref is not None:
            self.kb.open_history(ref.stable_id)

    def action_rename(self) -> None:
        ref = self.current_function()
        if ref is not None and not self.kb.read_only:
            self.kb.start_rename(ref)

    def action_open(self) -> None:
        ref = self.current_function()
        if ref is not None:
            self.kb.open_detail(ref.version_id, ref.index)
