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


# ----------------------------------------------------------------- provider answers
# A model's own confidence is not calibrated (7.5 and 0.9 both mean "sure"). The written
# confidence of a provider answer comes from what can be checked instead:
#   * evidence: every string, callee, constant or line of code the answer claims must be in
#     the prompt's facts; one false claim means the model is reading something that is not
#     there (a confabulation);
#   * agreement: a second, differently ordered prompt (or a second model) names the function
#     independently; a guess rarely repeats, a reading does;
#   * consistency: the name shares a word with a callee, a string or a data label.
# The levels below were set on the fake provider's error model (benchmarks/agent_pass.py) and
# are deliberately conservative: only agreed, evidenced answers reach the 0.5 write floor.
LLM_FALSE_EVIDENCE = 0.1
LLM_DISAGREE = 0.2
LLM_AGREED_EVIDENCED = 0.8
LLM_AGREED_BARE = 0.4
LLM_SINGLE_STRONG = 0.55  # one prompt, two or more verified claims, a name word among them
LLM_SINGLE = 0.35
LLM_CONSISTENT_BONUS = 0.05


def llm_confidence(
    *, verified: int, false: int, agree: bool | None, consistent: bool, linked: bool = False
) -> tuple[float, str]:
    """(written confidence, rule) of a provider answer from its checks (see above).

    ``verified``/``false``: evidence claims found / not found in the facts; ``agree``: the
    second opinion gave the same name (None: no second opinion); ``consistent``: a name word
    appears among the callees, strings or data labels; ``linked``: a name word appears in a
    verified claim."""
    if false:
        return LLM_FALSE_EVIDENCE, "llm_false_evidence"
    if agree is False:
        return LLM_DISAGREE, "llm_disagree"
    bonus = LLM_CONSISTENT_BONUS if consistent else 0.0
    if agree:
        if verified:
            return round(LLM_AGREED_EVIDENCED + bonus, 3), "llm_agreed_evidenced"
        return round(LLM_AGREED_BARE + bonus, 3), "llm_agreed_bare"
    if verified >= 2 and linked:
        return round(LLM_SINGLE_STRONG + bonus, 3), "llm_single_strong"
    return round(LLM_SINGLE + bonus, 3), "llm_single"
