"""Rich helpers that render untrusted strings literally (never as markup, never raw controls)."""

from __future__ import annotations

from rich.text import Text

from kbtool.textutil import printable


def lit(value: object, style: str = "") -> Text:
    """A Rich Text of ``value`` shown literally: markup is not parsed, controls are escaped."""
    if value is None:
        return Text("—", style="dim")
    return Text(printable(value), style=style)


#: the one word every human surface (CLI, TUI, web) shows for a toolchain that was not
#: detected; the API and MCP keep ``null`` (docs/interface.md)
UNKNOWN_TOOLCHAIN = "unknown"


def toolchain_text(value: str | None, width: int | None = None) -> Text:
    """The toolchain of a version for a human: the detected version (literal, clipped to
    ``width``), or :data:`UNKNOWN_TOOLCHAIN` (dim) when none was detected."""
    if not value:
        return Text(UNKNOWN_TOOLCHAIN, style="dim")
    shown = printable(value)
    if width is not None and len(shown) > width:
        shown = shown[: max(0, width - 1)] + "…"
    return Text(shown)
