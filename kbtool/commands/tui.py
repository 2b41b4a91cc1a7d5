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
    import gc

    path = db_path(db)
    # Textual's and the app's modules live as long as the process: no collection walks them
    # while they are imported; the app turns the collector back on after its first frame
    # (KbApp.run's heap.enable freezes them first, unwalked).
    paused = gc.isenabled()
    gc.disable()
    try:
        from kbtool.tui.app import KbApp
    except BaseException:
        if paused:
            gc.enable()
        raise
    # Opening the KB happens in the constructor: a missing file, a file that is not a KB,
    # an older schema or an unknown --version fail here with one line, before the
    # terminal switches to the full-screen app.
    app = KbApp(path, read_only=read_only, version_id=version, theme=theme, collector_paused=paused)
    app.run()
