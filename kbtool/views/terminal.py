"""Rich terminal views over the query layer (read-only): coverage now, diff tables beside it."""

from __future__ import annotations

from rich.table import Table

from kbtool.kb import queries

PROVENANCE_STYLE = {
    "human": "bold #10b981",       # emerald
    "oracle": "#3b82f6",           # blue
    "export": "#06b6d4",           # cyan
    "diff-carry": "#f59e0b",       # amber
    "agent": "#b45309",            # darker amber
    None: "#71717a",               # zinc (unnamed)
}


def coverage_table(cov: queries.Coverage, *, title: str = "coverage") -> Table:
    """A table of defined, named, coverage % and the split by provenance."""
    t = Table(title=title)
    t.add_column("defined", justify="right")
    t.add_column("named", justify="right")
    t.add_column("coverage", justify="right")
    t.add_column("human", justify="right", style=PROVENANCE_STYLE["human"])
    t.add_column("oracle", justify="right", style=PROVENANCE_STYLE["oracle"])
    t.add_column("export", justify="right", style=PROVENANCE_STYLE["export"])
    t.add_column("agent", justify="right", style=PROVENANCE_STYLE["agent"])
    t.add_column("diff-carry", justify="right", style=PROVENANCE_STYLE["diff-carry"])
    t.add_row(
        str(cov["defined"]), str(cov["named"]), f"{cov['coverage_pct']:.1f}%",
        str(cov["human_named"]), str(cov["oracle_named"]), str(cov["export_named"]),
        str(cov["agent_named"]), str(cov["diff_carry_named"]),
    )
    return t


def coverage_panel(kb, version_id: int) -> Table:
    """Contract view: coverage of one version. ``kb`` is a KB path or an open connection."""
    from kbtool.views.kbarg import connection

    with connection(kb) as conn:
        return coverage_table(queries.coverage(conn, version_id), title=f"coverage of version {version_id}")
