"""Rich helpers that render untrusted strings literally (never as markup, never raw controls)."""

from __future__ import annotations

from rich.text import Text

from kbtool.textutil import printable


def lit(value: object, style: str = "") -> Text:
    """A Rich Text of ``value`` shown literally: markup is not parsed, controls are escaped."""
    if value is None:
        return Text("—", style="dim")
    return Text(printable(value), style=style)
