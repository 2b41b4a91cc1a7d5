"""The CLI's two Rich consoles and its JSON printer, without Typer: ``kbtool ingest`` runs
on them with no Typer (nor pydantic) import (:func:`kbtool.cli.main`'s ingest path);
:mod:`kbtool.commands.common` re-exports them for every other command."""

from __future__ import annotations

import errno
import json
import sys
from typing import Any

from rich.console import Console

from kbtool.textutil import json_safe


class _Console(Console):
    """A Rich console whose broken pipe is an ``OSError(EPIPE)`` like any other write's
    (Rich's own handler exits with status 1); ``kbtool.cli.main`` ends such a run quietly."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


console = _Console(highlight=False)
err_console = _Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    """The JSON shapes of docs/interface.md on stdout: UTF-8 as is, except the characters a terminal or a
    JavaScript reader treats specially (C1 controls, U+2028/U+2029, bidi controls), which
    are written as ``\\uXXXX`` escapes (C0 controls are escaped by JSON itself)."""
    sys.stdout.write(json_safe(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")
