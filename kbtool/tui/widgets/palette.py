"""Provenance tints and small Rich renderables shared by the TUI screens.

Colours come from the one vocabulary, :mod:`kbtool.kb.provenance` (human emerald, oracle
blue, export cyan, diff-carry amber, agent darker amber, unnamed zinc).
Everything that came out of a binary or the KB goes through :func:`kbtool.render.text.lit`,
so it is shown literally: never parsed as markup, control characters escaped.
"""

from __future__ import annotations

from rich.text import Text
from textual.color import Color

from kbtool.kb.provenance import PROVENANCES as AUTHORITY_ORDER
from kbtool.kb.provenance import colour
from kbtool.render.terminal import PROVENANCE_STYLE
from kbtool.render.text import lit

# Order used by the heatmap codes and the legend (authority order, unnamed last).
PROVENANCES: tuple[str | None, ...] = (*AUTHORITY_ORDER, None)

TINT: dict[str | None, Color] = {p: Color.parse(colour(p)) for p in PROVENANCES}


def prov_style(provenance: str | None) -> str:
    return PROVENANCE_STYLE.get(provenance, PROVENANCE_STYLE[None])


def prov_text(provenance: str | None) -> Text:
    """``human`` in emerald, ``unnamed`` in zinc, unknown values literally."""
    if provenance is None:
        return Text("unnamed", style=PROVENANCE_STYLE[None])
    return lit(provenance, prov_style(provenance))


def name_text(name: str | None, provenance: str | None = None, *, bold: bool = False) -> Text:
    if name is None:
        return Text("unnamed", style="dim italic")
    style = prov_style(provenance).replace("bold ", "")
    return lit(name, ("bold " if bold else "") + style)


def conf_text(confidence: float | None) -> Text:
    if confidence is None:
        return Text("—", style="dim")
    return Text(f"{confidence:.2f}")


def coverage_bar(split: dict[str | None, int], total: int, width: int = 20) -> Text:
    """A stacked bar of named functions by provenance, zinc for the unnamed rest."""
    out = Text()
    if total <= 0:
        return Text("·" * width, style="dim")
    used = 0
    acc = 0.0
    for prov in PROVENANCES[:-1]:
        acc += split.get(prov, 0) / total * width
        cells = round(acc) - used
        if cells > 0:
            out.append("█" * cells, style=colour(prov))
            used += cells
    if width - used > 0:
        out.append("░" * (width - used), style=colour(None))
    return out


def split_of(cov: dict) -> dict[str | None, int]:
    """Provenance split of a ``queries.coverage`` result."""
    return {
        "human": cov["human_named"],
        "oracle": cov["oracle_named"],
        "export": cov.get("export_named", 0),
        "agent": cov["agent_named"],
        "diff-carry": cov.get("diff_carry_named", 0),
        None: cov["defined"] - cov["named"],
    }
