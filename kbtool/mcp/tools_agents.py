"""MCP tools of the agent half of docs/interface.md: ``agent_backends`` and ``run_agent_pass``, and
the read-only ``list_suggestions`` (agent names kept below the write floor; accepting them is a
person's act, not a tool's).

A running pass stops calling providers once its client is gone: :func:`client_gone` (stdin's
pipe hung up, or the client process that started this server exited) is the pass's
cancellation check, asked before every backend call.

Each tool is registered with :func:`kbtool.mcp.registry.tool`. No
``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

import os
import select
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError
from kbtool.mcp.registry import kb_path, tool

BackendSelector = Literal[
    "auto", "offline", "provider_a", "provider_a_alias_1", "provider_a_alias_2", "provider_b"
]


class AgentToolError(KBError):
    """A refused agent call (unknown or unavailable backend, bad argument): its one-line
    message reaches the MCP client as a tool error."""


def stdin_hung_up() -> bool:
    """True when this process's stdin is a pipe or socket whose other end has closed (the MCP
    client went away). Non-consuming (``poll`` with no events asked), so the server's own
    reader is undisturbed; False when stdin is not a pollable descriptor."""
    try:
        fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else 0
        poller = select.poll()
        poller.register(fd, 0)  # POLLHUP/POLLERR/POLLNVAL are always reported
        return any(
            ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _fd, ev in poller.poll(0)
        )
    except (OSError, ValueError, AttributeError):
        return False


def client_gone_check(parent: int | None = None) -> Callable[[], bool]:
    """The cancellation check of a pass run for an MCP client: stdin hung up, or the process
    that started this server (``parent``, default the current parent) exited."""
    parent = os.getppid() if parent is None else parent

    def gone() -> bool:
        return stdin_hung_up() or (parent > 1 and os.getppid() != parent)

    return gone


SUGGESTION_PAGE_MAX = 500
#: the CLI's bounds (``kbtool agent --rounds`` / ``--max-functions``)
MAX_ROUNDS = 100
MAX_FUNCTIONS = 1_000_000


client_gone = client_gone_check()


@tool(title="Agent backends")
def agent_backends() -> list[dict[str, Any]]:
    """The agent backends this server can run, to choose the `backend` of
    run_agent_pass. `offline` always works (no key, no network); a provider is
    available when its SDK is installed and its API key is set in the server's
    environment.

    Returns [{name, backend, aliases, available, requires, default_model}]: name is the
    selector, backend the name written into evidence, requires the packages and
    environment variables it needs."""

    from kbtool.services.agents import agent_backends as entries

    return entries()


@tool(title="Run an agent naming pass (gated)", read_only=False, idempotent=False)
def run_agent_pass(
    version_id: Annotated[int, Field(description="A version id from list_versions.")],
    backend: Annotated[
        BackendSelector,
        Field(
            description=(
                "Which backend proposes names: auto (first available of provider_a, provider_b,"
                " offline), offline, provider_a (or its aliases), provider_b."
            )
        ),
    ] = "auto",
    only_unconfident: Annotated[
        bool,
        Field(
            description=(
                "Skip locked functions and functions already named at confidence 0.5 or more,"
                " before any backend call."
            )
        ),
    ] = True,
    rounds: Annotated[
        int,
        Field(
            ge=1,
            json_schema_extra={"maximum": MAX_ROUNDS},
            description=(
                "Rounds (1..100); each later round re-enriches contexts with the names written so far and"
                " stops early at a fixpoint."
            ),
        ),
    ] = 1,
    max_functions: Annotated[
        int | None,
        Field(
            ge=0,
            json_schema_extra={"maximum": MAX_FUNCTIONS},
            description="Cost guard: candidates sent to a provider (default 500; "
            "0 = no cap; at most 1,000,000).",
        ),
    ] = None,
    opinions: Annotated[
        int | None,
        Field(
            ge=1,
            le=2,
            description="2 (default): a second prompt checks each provider "
            "answer; 1 halves the calls.",
        ),
    ] = None,
) -> dict[str, Any]:
    """Name a version's functions in one call: select candidates, build each function's
    context from stored facts, propose names with the backend, verify them and write the
    accepted ones through the KB's gate as provenance "agent" (never over a human name;
    over another agent, oracle or export name only with strictly higher confidence). A
    provider pass sends at most 500 functions to the model per call; run it again for
    more.

    Returns {backend, considered, proposed, written, rejected_by_verifier,
    rejected_by_economy, skipped_existing, specialist_proposed, specialist_written,
    rounds_run, suggested, cancelled, details: [{kind (write|suggest|verifier_reject|
    economy_reject), index, stable_id, name, confidence, source, backend, model, reason}]}.
    Names below calibrated confidence 0.5 are not written: they are kept as suggestions
    (`suggested`; see list_suggestions) for a person to accept. If this client goes away
    the pass makes no further provider call. A provider pass names callees first, keeps
    every answer in the KB (a re-run sends only what has no answer) and adds calls,
    cached_answers, tokens_in, tokens_out, estimated_cost_usd and circuit_open; with a
    progressToken it sends notifications/progress as functions are done."""

    if rounds > MAX_ROUNDS or (max_functions or 0) > MAX_FUNCTIONS:
        which, cap = (
            ("rounds", MAX_ROUNDS) if rounds > MAX_ROUNDS else ("max_functions", MAX_FUNCTIONS)
        )
        raise AgentToolError(
            f"{which} must be at most {cap:,} (as kbtool agent's --{which.replace('_', '-')})"
        )
    from kbtool.mcp import progress as mcp_progress
    from kbtool.services.agent_pass import plan_agent_pass
    from kbtool.services.agent_pass import run_agent_pass as run_pass
    from kbtool.services.agents import BackendUnavailable

    conn = open_rw(kb_path(), create=False)
    try:
        plan = plan_agent_pass(
            conn, version_id, backend, only_unconfident, max_functions, opinions=opinions
        )
        meter = getattr(plan.backend, "meter", None)
        sink = mcp_progress.current()  # provider calls run on worker threads

        def report(stage: str, done: int, total: int | None) -> None:
            spend = ""
            if meter is not None:
                m = meter.to_dict()
                usd = m["estimated_cost_usd"]
                spend = (
                    f"; {m['calls']} calls ({m['cached_answers']} stored), "
                    f"{m['tokens_in']} tokens in, {m['tokens_out']} out"
                    + (f", ${usd:.4f}" if usd is not None else "")
                    + (
                        f" of ~${m['projected_cost_usd']:.4f} (round 1, projected)"
                        if m.get("projected_cost_usd") is not None
                        else ""
                    )
                )
            if sink is not None:
                try:
                    sink(done, total, f"{stage}: {done} functions{spend}")
                except Exception:  # the client went away: the pass's own check stops it
                    pass

        return run_pass(
            conn,
            version_id,
            backend,
            only_unconfident,
            rounds,
            cancelled=client_gone,
            plan=plan,
            progress=report,
        )
    except (BackendUnavailable, ValueError) as exc:
        raise AgentToolError(str(exc).splitlines()[0]) from None
    finally:
        conn.close()


@tool(title="Agent name suggestions (pageable)")
def list_suggestions(
    version_id: Annotated[int, Field(description="A version id from list_versions.")],
    offset: Annotated[int, Field(ge=0, description="Rows to skip (paging).")] = 0,
    limit: Annotated[
        int, Field(ge=1, le=SUGGESTION_PAGE_MAX, description="Rows per page (1..500).")
    ] = 100,
    min_confidence: Annotated[
        float | None, Field(ge=0.0, le=1.0, description="Only suggestions at this or more.")
    ] = None,
) -> dict[str, Any]:
    """Agent names kept below the write floor (calibrated confidence under 0.5) for a
    person to accept or dismiss; open ones only, highest confidence first. Read-only:
    accepting is done by a person (`kbtool suggestions accept SID`, the TUI).

    Returns {version_id, total, offset, limit, next_offset, items: [{stable_id, index,
    name, confidence, backend, model, rule, source, evidence, status, created_at,
    current (the function's annotation now, or null)}]}."""
    from kbtool.kb import queries

    conn = open_ro(kb_path())
    try:
        page = queries.suggestions(
            conn, version_id, offset=offset, limit=limit, min_confidence=min_confidence
        )
    finally:
        conn.close()
    end = page["offset"] + len(page["items"])
    return {**page, "next_offset": end if end < page["total"] else None}
