"""Rule confidences measured on data (``benchmarks/agents.py --calibrate`` writes the table).

A rule's confidence is the share of its proposals that were exactly right on the calibration
split, shrunk toward a prior so a rule seen a few times cannot claim certainty:
``(right + STRENGTH * PRIOR) / (n + STRENGTH)``, capped at ``CAP``. A rule absent from the
table gets ``PRIOR``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

PRIOR = 0.3
STRENGTH = 4.0
CAP = 0.95
TABLE_FILE = "calibration.json"


def smoothed(right: int, n: int) -> float:
    """Shrunk hit rate of a rule that was right ``right`` times out of ``n``."""
    return round(min(CAP, (right + STRENGTH * PRIOR) / (n + STRENGTH)), 3)


@lru_cache(maxsize=1)
def load_table() -> dict[str, Any]:
    """The shipped table: ``{"rules": {rule: {"n", "right", "confidence"}}, "source": ...}``."""
    try:
        text = resources.files(__package__).joinpath(TABLE_FILE).read_text("utf-8")
    except (FileNotFoundError, OSError):
        return {"rules": {}, "source": None}
    return json.loads(text)


def rule_confidence(rule: str, table: dict[str, Any] | None = None) -> float:
    """Calibrated confidence of ``rule`` (``PRIOR`` when the rule was never measured)."""
    rules = (table or load_table()).get("rules", {})
    entry = rules.get(rule)
    if not entry:
        return PRIOR
    return float(entry["confidence"])


def build_table(counts: dict[str, tuple[int, int]], source: str) -> dict[str, Any]:
    """Table from ``{rule: (right, n)}`` measured on ``source`` (a description of the data)."""
    return {
        "source": source,
        "prior": PRIOR,
        "strength": STRENGTH,
        "rules": {
            r: {"n": n, "right": right, "confidence": smoothed(right, n)}
            for r, (right, n) in sorted(counts.items())
        },
    }
