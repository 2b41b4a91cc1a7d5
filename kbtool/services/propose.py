"""An agent's name proposal for one function, verified then gated (what MCP's
``propose_symbol`` and ``propose_symbols`` write): the verifier of
:mod:`kbtool.agents.verifier` (the one ``run_agent_pass`` uses) reads the stored facts, then
:func:`kbtool.kb.gate.upsert_symbol` decides, with provenance ``agent``."""

from __future__ import annotations

from typing import Any

from kbtool.agents.proposal import Proposal as AgentProposal
from kbtool.agents.verifier import clean_summary, verify
from kbtool.kb import queries
from kbtool.kb.gate import upsert_symbol

AGENT_PROVENANCE = "agent"
AGENT_ACTOR = "agent:mcp"


def propose_name(
    conn: Any,
    stable_id: str,
    name: str,
    summary: str,
    confidence: float,
    tool: str,
    names: dict[int, dict[int, str]],
) -> dict[str, Any]:
    """One agent proposal (an MCP client's): the agent verifier (:mod:`kbtool.agents.verifier`, the one
    ``run_agent_pass`` uses), then the gate. ``names`` caches each version's names (index ->
    name) across a batch and learns the names written."""
    where = queries.functions_by_stable_id(conn, stable_id)
    if not where:  # the gate's one-line unknown-stable_id error
        queries.require_stable_id(conn, stable_id)
    vid, idx = (where[-1]["version_id"], where[-1]["index"]) if where else (None, None)
    current = queries.get_symbol(conn, stable_id)
    ctx: dict[str, Any] = {}
    taken: set[str] = set()
    if vid is not None:
        facts = queries.get_function_facts(conn, vid, idx)
        if facts is not None:
            ctx = facts_context(facts)
        if vid not in names:
            names[vid] = queries.function_names(conn, vid)
        taken = {n for i, n in names[vid].items() if i != idx}
    if current and current.get("name"):
        ctx["existing"] = {
            "name": current["name"],
            "confidence": current["confidence"],
            "provenance": current["provenance"],
        }
    proposal = AgentProposal(
        index=idx if idx is not None else -1,
        name=name,
        confidence=confidence,
        summary=summary,
        stable_id=stable_id,
    )
    verdict = verify(proposal, ctx, taken)
    if not verdict.ok:
        return {"written": False, "reason": f"verifier: {verdict.reason}"}
    decision = upsert_symbol(
        conn,
        stable_id,
        name,
        provenance=AGENT_PROVENANCE,
        actor=AGENT_ACTOR,
        confidence=confidence,
        summary=clean_summary(summary) or None,
        evidence={"actor": AGENT_ACTOR, "tool": tool},
    )
    if decision["written"] and vid is not None:
        names[vid][idx] = name
    return decision


def facts_context(facts: dict[str, Any]) -> dict[str, Any]:
    """The parts of an agent context the verifier reads, from the stored function facts."""
    stores = sum(1 for m in facts.get("memory_accesses") or () if "store" in m["op"])
    return {
        "type": facts.get("type_signature") or "",
        "callees": facts.get("callees") or [],
        "call_indirect": facts.get("indirect_call_sites") or 0,
        "mnemonics": sorted(set(facts.get("instruction_mnemonics") or ())),
        "mem_ops": {"stores": stores, "loads": len(facts.get("memory_accesses") or ()) - stores},
        "globals": facts.get("globals_used") or [],
        "strings": facts.get("referenced_strings") or [],
    }
