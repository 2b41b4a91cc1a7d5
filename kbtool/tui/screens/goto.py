"""The go-to dialog (``g`` on the heatmap): a function index, ``#1031`` or ``1031``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class GotoScreen(ModalScreen[int | None]):
    """Dismisses with the typed function index, or None on Esc; a bad entry says why and stays."""

    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen #goto-box { width: 50; height: auto; border: round $accent; padding: 0 1;
                           background: $surface; }
    GotoScreen #goto-hint { color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel", key_display="esc")]

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical(id="goto-box"):
            yield Static(
                Text.assemble(("Go to function ", "bold"), (self.label, "dim")), id="goto-title"
            )
            yield Input(placeholder="#1031 or 1031", id="goto-input")
            yield Static(
                Text("⏎ moves the cursor there · esc cancels", style="dim"), id="goto-hint"
            )

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.cursor_blink = getattr(self.app, "blink", True)
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from kbtool.services import nav  # not before the first go-to (start-up)

        index = nav.parse_index(event.value)
        if index is None:
            self.query_one("#goto-hint", Static).update(
                Text("a function index: digits, optionally after #", style="bold red")
            )
            return
        self.dismiss(index)

    def action_cancel(self) -> None:
        self.dismiss(None)
