"""``kbtool tui``: the full-screen terminal browser (Textual)."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtool.commands.common import DbOption, db_path


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)


def tui(
    db: DbOption = None,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Open the KB read-only: browsing only, no rename (n)."),
    ] = False,
    version: Annotated[
        int | None,
        typer.Option(
            "--version", "-V", help="Open the heatmap of this version id (default: the latest)."
        ),
    ] = None,
    theme: Annotated[
        str,
        typer.Option(
            "--theme", help="dark, light, or any Textual theme name (t toggles dark/light)."
        ),
    ] = "dark",
) -> None:
    """Browse the KB in the terminal: versions, heatmap, diff, search, detail, history.

    Keys: arrows/hjkl move, Enter opens, Esc goes back, / search, d diff, v versions,
    h history (H on the heatmap, where h moves left), g go to an index (heatmap),
    n rename (not with --read-only), ctrl+p jump (name, stable_id, #index, "string, =const),
    q quit.
    """
    from kbtool.commands.tui_launch import launch

    launch(db_path(db), read_only=read_only, version=version, theme=theme)
