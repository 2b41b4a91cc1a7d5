"""What a process that ends right after its ingest keeps instead of freeing (issue #30).

The command line's own ingest ends with ``os._exit`` (no interpreter teardown): freeing its
working data before then (the decoded module, the rows written, the data walk's references)
is CPU no one needs (fresh onnxruntime: ~180 M instructions, ~3 % of the process).
:func:`keep_until_exit` (called by :mod:`kbtool.cli` for that ingest only) turns keeping on;
the ingest's layers hand what they drop to :func:`keep_also` / :func:`kept`, which do
nothing otherwise: a process that lives on (the TUI, the servers, tests) frees it as before.
Standard library only, in the bottom layer, so the data model (``kbtool.analysis``) and the
store (``kbtool.kb``) can use it as the services do.
"""

from __future__ import annotations

from typing import Any

#: what was kept (:func:`keep_until_exit`), else None
_KEPT: list | None = None


def keep_until_exit() -> None:
    """The process ends (``os._exit``) right after its ingest: keep, do not free."""
    global _KEPT
    if _KEPT is None:
        _KEPT = []


def stop_keeping() -> None:
    """Free from now on (what was kept so far goes as the list does): a later ingest's peak
    memory comes at its end, so whatever it kept would raise it (ffmpeg 0.12.10 -> 0.12.6:
    +38 MiB); a first version's peak comes at the references' write, before what it keeps
    is dropped."""
    global _KEPT
    _KEPT = None


def keeping() -> bool:
    """Whether :func:`keep_until_exit` was called in this process."""
    return _KEPT is not None


def keep_also(*objs: Any) -> None:
    """Keep ``objs`` until the process ends when keeping (the caller then drops its
    references without freeing them); nothing otherwise."""
    if _KEPT is not None:
        _KEPT.append(objs)


def kept(trash: Any) -> bool:
    """Whether ``trash`` is kept until the process ends (then the caller must not empty it)."""
    if _KEPT is None:
        return False
    _KEPT.append(trash)
    return True
