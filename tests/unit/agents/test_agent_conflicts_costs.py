"""Issue 31, round 3: one name claimed by two functions' model answers makes both suggestions
(at most one is right); the cost projection shown beside the progress bar is re-scaled by the
provider's billed usage as answers arrive."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from kbtool.agents import run_rounds
from kbtool.agents.costs import LIVE_MIN, Meter
from kbtool.agents.proposal import Proposal
from kbtool.commands.agent import spend_text


class _Model:
    """A provider-like backend: calibrated model answers (source llm) from a script."""

    name, backend, model = "provider_b", "openai", "m"

    def __init__(self, names: Mapping[int, str], conf: float = 0.8) -> None:
        self.names, self.conf = names, conf
        self.seen: dict[int, list[Any]] = {}
        self.lock = threading.Lock()

    def propose(self, ctx: Mapping[str, Any], taken: Any) -> Proposal:
        i = int(ctx["index"])
        with self.lock:
            self.seen[i] = [e.get("name") for e in ctx.get("callees") or []]
        return Proposal(
            index=i,
            name=self.names[i],
            confidence=self.conf,
            source="llm",
            backend="openai",
            model="m",
            rule="llm_agreed_evidenced",
            calibration={"agree": True},
        )


def _chain() -> list[dict[str, Any]]:
    """f0 <- f1 (f1 calls f0: two bottom-up waves), f2 alone."""
    return [
        {"index": 0, "callees": [], "callers": [{"index": 1}]},
        {"index": 1, "callees": [{"index": 0}], "callers": []},
        {"index": 2, "callees": [], "callers": []},
    ]


def _run(names: Mapping[int, str], floor: float = 0.5):
    written: list[tuple[int, str]] = []
    suggested: list[tuple[int, str, float, str | None]] = []
    model = _Model(names)

    def gate(p: Proposal) -> tuple[bool, str]:
        written.append((p.index, p.name or ""))
        return True, "unnamed"

    def suggest(p: Proposal) -> tuple[bool, str]:
        suggested.append((p.index, p.name or "", p.confidence, p.rule))
        return True, "below the floor"

    out = run_rounds(model, _chain(), set(), gate, floor=floor, suggest=suggest, concurrency=1)
    return out, written, suggested, model


def test_one_name_claimed_by_two_functions_becomes_two_suggestions():
    out, written, suggested, model = _run({0: "read_header", 1: "read_header", 2: "crc32"})
    assert written == [(2, "crc32")]
    assert sorted(suggested) == [
        (0, "read_header", 0.4, "llm_name_conflict"),
        (1, "read_header", 0.4, "llm_name_conflict"),
    ]
    assert out.written == 1 and out.suggested == 2 and out.rejected_by_verifier == 0
    # the caller's prompt (second wave) saw its callee's claimed name, as if written
    assert model.seen[1] == ["read_header"]


def test_distinct_names_are_written_and_callers_see_them():
    _, written, suggested, model = _run({0: "read_header", 1: "parse_frame", 2: "crc32"})
    assert sorted(written) == [(0, "read_header"), (1, "parse_frame"), (2, "crc32")]
    assert suggested == [] and model.seen[1] == ["read_header"]


def test_a_floor_below_the_shared_confidence_still_writes_one_name_once():
    _, written, suggested, _ = _run({0: "read_header", 1: "read_header", 2: "crc32"}, floor=0.3)
    assert sorted(written) == [(0, "read_header"), (2, "crc32")]  # never two functions
    assert suggested == []


def test_projection_rescales_by_billed_usage_as_answers_arrive():
    m = Meter(price=(3.0, 15.0))
    assert m.projection() is None and "projected_tokens_in" not in m.to_dict()
    m.plan(1000, 10, ratio=1.0, per_answer=100)
    assert m.projection()["projected_tokens_in"] == 1000
    for _ in range(LIVE_MIN - 1):
        m.add(110, 50, estimate=100)
    early = m.projection()
    assert early["projection_basis"] == "pre-pass estimate"
    assert early["projected_tokens_in"] == 7 * 110 + 300  # the rest still at the estimate
    m.add(110, 50, estimate=100)
    late = m.projection()
    assert late["projection_basis"] == f"calibrated on {LIVE_MIN} answers billed in this pass"
    assert late["projected_tokens_in"] == 8 * 110 + 2 * 110  # 10 % more than estimated
    assert late["projected_tokens_out"] == 8 * 50 + 2 * 50  # per answer = per input token
    assert late["projected_cost_usd"] == round((1100 * 3 + 500 * 15) / 1e6, 6)
    for _ in range(2):
        m.add(110, 50, estimate=100)
    done = m.projection()  # every planned call made: the projection is what was spent
    assert (done["projected_tokens_in"], done["projected_tokens_out"]) == (
        m.tokens_in,
        m.tokens_out,
    )
    bar = spend_text(m.to_dict(), live=True)
    assert bar.endswith(f" of ~${done['projected_cost_usd']:.4f}")
    assert "of ~" not in spend_text(m.to_dict())  # the summary line shows what was spent


def test_output_projection_lies_between_per_answer_and_per_input_token():
    """Callees come first: the first answers are small functions' (short prompts); the
    answers still to come are projected midway between "as long as so far" and "growing
    with their prompts"."""
    m = Meter(price=None)
    m.plan(100_000, 1000, ratio=1.0, per_answer=300)
    for _ in range(LIVE_MIN):
        m.add(55, 40, estimate=50)  # small prompts
    p = m.projection()
    assert p["projection_basis"] == f"calibrated on {LIVE_MIN} answers billed in this pass"
    left_in = round((100_000 - 8 * 50) * 1.1)
    assert p["projected_tokens_in"] == 8 * 55 + left_in
    per_answer, per_token = 992 * 40, left_in * 40 / 55
    assert p["projected_tokens_out"] == 8 * 40 + round((per_answer + per_token) / 2)
    assert p["projected_cost_usd"] is None  # no price: tokens only
    assert spend_text(m.to_dict(), live=True).endswith(
        f" of ~{p['projected_tokens_in'] + p['projected_tokens_out']:,} tokens"
    )
