"""``kbtool tui``'s body without Typer: the Typer command (:mod:`kbtool.commands.tui`) and the
command line's direct path (:func:`kbtool.cli._tui_direct`) both run :func:`launch`.

Typer's parameter handling imports pydantic (with Typer and Click, ~0.2-0.25 s at start on this
machine, more than the app's own start after Textual's import: issue 30), so ``kbtool tui``
with plain options never imports them.
"""

from __future__ import annotations


def launch(path: str, *, read_only: bool, version: int | None, theme: str) -> None:
    """Open the KB at ``path`` in the TUI and run it until it quits."""
    import gc

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
