"""The terminal library functions a user calls with a KB (the contract's ``diff_table``,
``render_diff`` and ``coverage_panel``, and ``changelog_renderable``): each fetches through the
services and draws with :mod:`kbtool.render.terminal`, which stays pure (data in, text out).
``kb`` is a KB path or an open connection; every one is read-only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kbtool.render.terminal import (
    changelog_from_data,
    coverage_table,
    diff_table_from_report,
    parse_only,
    render_view,
)
from kbtool.services.diff.view import changelog_of, coverage_of, diff_view

__all__ = ["coverage_panel", "diff_table", "render_diff", "changelog_renderable"]


def coverage_panel(kb, version_id: int) -> Table:
    """Contract view: coverage of one version. ``kb`` is a KB path or an open connection."""
    return coverage_table(coverage_of(kb, version_id), title=f"coverage of version {version_id}")


def diff_table(kb, from_version_id: int, to_version_id: int, *, only=None) -> Table:
    """Contract view: one row per change (classification, from/to index, name, provenance,
    confidence, score, runtime/churn and review flags). ``kb`` is a KB path or an open
    connection; the stored report is used when there is one, else it is computed with
    carry-over off (a pure read)."""
    view = diff_view(kb, from_version_id, to_version_id, with_changelog=False)
    return diff_table_from_report(
        view["report"], only=only, toolchain_changed=view["toolchain_changed"]
    )


def changelog_renderable(report: dict, kb=None, *, only=None):
    """The semantic changelog of a report as a Rich renderable. ``kb`` (path or connection)
    supplies the facts; without it this returns None (a report alone has no facts)."""
    if kb is None:
        return None
    return changelog_from_data(changelog_of(kb, report), only=only)


def render_diff(kb, from_version_id: int, to_version_id: int, console=None, *, only=None) -> None:
    """Contract view: print the summary, the change table, then the semantic changelog.
    Read-only: the stored report if saved, else computed with carry-over off."""

    console = console or Console(highlight=False)
    render_view(diff_view(kb, from_version_id, to_version_id), console, only=parse_only(only))
