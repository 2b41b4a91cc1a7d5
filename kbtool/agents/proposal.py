"""What every proposer returns and what the verifier answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SOURCES = ("specialist", "heuristic", "llm")


@dataclass(slots=True)
class Proposal:
    """One proposed name for one function.

    ``name`` is None when the proposer failed to produce one (``error`` says why, for instance
    a provider's malformed JSON); the verifier rejects such a proposal and the pass counts it
    in ``rejected_by_verifier``. ``backend``/``model`` record who produced it (evidence).
    """

    index: int
    name: str | None
    confidence: float
    summary: str = ""
    reasons: list[str] = field(default_factory=list)
    stable_id: str | None = None
    backend: str = "offline"
    model: str | None = None
    source: str = "heuristic"
    rule: str | None = None
    error: str | None = None
    locals: dict[str, str] = field(default_factory=dict)  # C variable -> better name
    prototype: str = ""
    calibration: dict[str, Any] = field(default_factory=dict)  # how the confidence was made

    def evidence(self) -> dict[str, Any]:
        """The evidence object to store with the annotation (JSON-ready)."""
        ev: dict[str, Any] = {
            "backend": self.backend,
            "model": self.model,
            "source": self.source,
            "reasons": list(self.reasons),
        }
        if self.rule:
            ev["rule"] = self.rule
        if self.error:
            ev["error"] = self.error
        if self.calibration:
            ev["calibration"] = dict(self.calibration)
        return ev

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "stable_id": self.stable_id,
            "name": self.name,
            "summary": self.summary,
            "confidence": self.confidence,
            "source": self.source,
            "evidence": self.evidence(),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verifier's answer: ``ok`` or a one-line ``reason`` (stable ``code`` for counting)."""

    ok: bool
    code: str
    reason: str

    @classmethod
    def accept(cls) -> Verdict:
        return cls(True, "ok", "ok")

    @classmethod
    def reject(cls, code: str, reason: str) -> Verdict:
        return cls(False, code, reason)
