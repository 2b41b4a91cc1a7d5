"""The one provenance vocabulary: order, authority, labels, colours, event kinds.

The gate decides with ``AUTHORITY``; the terminal, the TUI and the web page draw with
``COLOURS`` (the web page reads :func:`stylesheet`, served as ``/static/provenance.css``,
and ``/api/provenance``); nothing else spells these values.
"""

from __future__ import annotations

from typing import Any

#: provenances, highest authority first (docs/interface.md's order; unnamed is None)
PROVENANCES: tuple[str, ...] = ("human", "oracle", "export", "agent", "diff-carry")
#: the gate's authority ranks (higher wins)
AUTHORITY: dict[str, int] = {"diff-carry": 1, "agent": 2, "export": 3, "oracle": 4, "human": 5}
UNNAMED = "unnamed"

#: tints (docs/interface.md): human emerald, oracle blue, export cyan, diff-carry amber, agent darker amber,
#: unnamed zinc
COLOURS: dict[str, str] = {
    "human": "#10b981",
    "oracle": "#3b82f6",
    "export": "#06b6d4",
    "agent": "#b45309",
    "diff-carry": "#f59e0b",
    UNNAMED: "#71717a",
}
LABELS: dict[str, str] = {
    "human": "human",
    "oracle": "oracle",
    "export": "export",
    "agent": "agent",
    "diff-carry": "diff-carry",
    UNNAMED: "unnamed",
}

#: the annotation event kind each writer's decision is recorded as
EVENT_KIND: dict[str, str] = {
    "human": "human-edit",
    "oracle": "oracle-match",
    "export": "export",
    "agent": "agent-guess",
    "diff-carry": "diff-carry",
}
#: colours of event kinds (history views): each writer's kind takes its provenance colour
EVENT_COLOURS: dict[str, str] = {
    **{kind: COLOURS[p] for p, kind in EVENT_KIND.items()},
    "revert": COLOURS["human"],
    "rejection": "#ef4444",
    "lock": COLOURS[UNNAMED],
    "unlock": COLOURS[UNNAMED],
}

#: diff classifications and their colours (one meaning on every surface)
CLASSIFICATION_COLOURS: dict[str, str] = {
    "unchanged": "#71717a",
    "moved": "#a78bfa",
    "modified": "#eab308",
    "new": "#22c55e",
    "deleted": "#ef4444",
}


def colour(provenance: str | None) -> str:
    """The tint of a provenance (unnamed and unknown values: zinc)."""
    return COLOURS.get(provenance or UNNAMED, COLOURS[UNNAMED])


def vocabulary() -> dict[str, Any]:
    """Everything above as one JSON-ready object (``/api/provenance``)."""
    return {
        "order": [*PROVENANCES, UNNAMED],
        "authority": AUTHORITY,
        "labels": LABELS,
        "colours": COLOURS,
        "event_colours": EVENT_COLOURS,
        "classification_colours": CLASSIFICATION_COLOURS,
    }


def stylesheet() -> str:
    """CSS custom properties and classes for the web pages, generated from this module."""
    lines = [":root {"]
    lines += [f"  --{p}: {c};" for p, c in COLOURS.items()]
    lines += [f"  --c-{k}: {c};" for k, c in CLASSIFICATION_COLOURS.items()]
    lines.append("}")
    lines += [f".p-{p} {{ color: var(--{p}); }}" for p in COLOURS]
    lines += [f".c-{k} {{ color: var(--c-{k}); }}" for k in CLASSIFICATION_COLOURS]
    return "\n".join(lines) + "\n"
