"""The rename dialog (``n``): a new human name, written through the gate by the app."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kbtool.tui.screen_css import ScreenCss
from kbtool.tui.screens.base import FunctionRef
from kbtool.tui.widgets.palette import name_text


class RenameScreen(ScreenCss, ModalScreen[str | None]):
    """Dismisses with the typed name, or None on Esc, an empty box or the unchanged name:
    confirming the name the function already has (a stray ``n`` then ``enter``) writes
    nothing, so an oracle or agent name never silently becomes a locked human one."""

    TCSS = "rename"  # its rules: kbtool/tui/rename.tcss, added when first registered

    BINDINGS = [Binding("escape", "cancel", "cancel", key_display="esc")]

    def __init__(self, ref: FunctionRef) -> None:
        super().__init__()
        self.ref = ref

    def compose(self) -> ComposeResult:
        with Vertical(id="rename-box"):
            head = Text("Rename ", style="bold")
            head.append_text(name_text(self.ref.name))
            head.append(f"  (#{self.ref.index}, {self.ref.stable_id})", style="dim")
            yield Static(head, id="rename-title")
            yield Input(
                value=self.ref.name or "",
                placeholder="new_name (C identifier, :: allowed)",
                id="rename-input",
            )
            yield Static(
                Text(
                    "⏎ saves it as a human name, locked against agents and tools · esc cancels",
                    style="dim",
                ),
                id="rename-hint",
            )

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.cursor_blink = getattr(self.app, "blink", True)
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if value and value == (self.ref.name or ""):
            self.notify("name unchanged: nothing written", timeout=3)
            value = ""
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
