"""Work kbtool starts in the background and never waits for (diff and code preparation after
``analyze``/``ingest``): the on/off words of their environment switches and the detached
process itself."""

from __future__ import annotations

import os
import sys

#: what turns a ``KBTOOL_..._WARM`` / ``KBTOOL_..._CACHE_DIR`` switch off
OFF = ("", "off", "0", "no", "false")


def switched_off(name: str) -> bool:
    """True when the environment variable ``name`` is set to one of :data:`OFF`."""
    env = os.environ.get(name)
    return env is not None and env.strip().lower() in OFF


def spawn(module: str, args: list[str]) -> int | None:
    """Run ``python -m module args`` detached: its own session (not stopped by the terminal's
    ^C, never waited for), no inherited descriptors, no output. Its pid, or None when no
    process could be started (the first request then does the work itself)."""
    import subprocess  # (here: an ingest that only reads the switches never loads it)

    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None
    return proc.pid
