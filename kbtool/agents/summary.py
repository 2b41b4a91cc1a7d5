"""Pure helpers for the pass service: which symbols a pass considers, and the pass summary.

:class:`PassSummary` holds exactly the keys of the "Agent pass summary" of docs/interface.md;
the service records each outcome and returns :meth:`PassSummary.to_dict`, with two extra
fields: ``suggested`` (proposals below the write floor kept for a person) and ``cancelled``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .proposal import Proposal, Verdict

UNCONFIDENT_BELOW = (
    0.5  # docs/interface.md (run_agent_pass): only_unconfident skips confidence 0.5 or more
)


def should_consider(symbol: Mapping[str, Any] | None, only_unconfident: bool = True) -> bool:
    """True when a pass should propose for a function whose annotation is ``symbol``.

    With ``only_unconfident`` a locked symbol and a symbol at confidence 0.5 or more are
    skipped (counted as ``skipped_existing``); without it every function is considered and the
    gate decides.
    """
    if not only_unconfident or not symbol or symbol.get("name") is None:
        return True
    if symbol.get("locked"):
        return False
    conf = symbol.get("confidence")
    return conf is None or float(conf) < UNCONFIDENT_BELOW


@dataclass
class PassSummary:
    """Counters of one ``run_agent_pass`` (all rounds)."""

    backend: str
    considered: int = 0
    proposed: int = 0
    written: int = 0
    rejected_by_verifier: int = 0
    rejected_by_economy: int = 0
    skipped_existing: int = 0
    specialist_proposed: int = 0
    specialist_written: int = 0
    rounds_run: int = 0
    suggested: int = 0  # extra field: names kept as suggestions (below the write floor)
    cancelled: bool = False  # extra field: the caller went away; the pass stopped early
    details: list[dict[str, Any]] = field(default_factory=list)

    def record_proposal(self, p: Proposal) -> None:
        self.proposed += 1
        self.specialist_proposed += p.source == "specialist"

    def record_verifier_reject(self, p: Proposal, v: Verdict) -> None:
        self.rejected_by_verifier += 1
        self.details.append(self._detail("verifier_reject", p, v.reason, code=v.code))

    def record_write(self, p: Proposal, reason: str = "written") -> None:
        self.written += 1
        self.specialist_written += p.source == "specialist"
        self.details.append(self._detail("write", p, reason))

    def record_suggestion(self, p: Proposal, reason: str = "suggested") -> None:
        self.suggested += 1
        self.details.append(self._detail("suggest", p, reason))

    def record_economy_reject(self, p: Proposal, reason: str) -> None:
        self.rejected_by_economy += 1
        self.details.append(self._detail("economy_reject", p, reason))

    @staticmethod
    def _detail(kind: str, p: Proposal, reason: str, **extra: Any) -> dict[str, Any]:
        return {
            "kind": kind,
            "index": p.index,
            "stable_id": p.stable_id,
            "name": p.name,
            "confidence": p.confidence,
            "source": p.source,
            "backend": p.backend,
            "model": p.model,
            "reason": reason,
            **extra,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "considered": self.considered,
            "proposed": self.proposed,
            "written": self.written,
            "rejected_by_verifier": self.rejected_by_verifier,
            "rejected_by_economy": self.rejected_by_economy,
            "skipped_existing": self.skipped_existing,
            "specialist_proposed": self.specialist_proposed,
            "specialist_written": self.specialist_written,
            "rounds_run": self.rounds_run,
            "suggested": self.suggested,
            "cancelled": self.cancelled,
            "details": list(self.details),
        }
