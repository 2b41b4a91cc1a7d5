"""MCP tools of the agent half of the contract: ``agent_backends`` and ``run_agent_pass``.

:func:`tools` returns ``(function, read_only, renderer)`` triples in the style of
``kbtool.mcp.server._tools``; the server appends them to its own. No
``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from kbtool.kb.db import open_rw
from kbtool.kb.errors import KBError
from kbtool.mcp.server import as_json

BackendSelector = Literal[
    "auto", "offline", "provider_a", "provider_a_alias_1", "provider_a_alias_2", "provider_b"
]


class AgentToolError(KBError):
    """A refused agent call (unknown or unavailable backend, bad argument): its one-line
    message reaches the MCP client as a tool error."""


def tools(db_path: str) -> list[tuple[Callable[..., Any], bool, Callable[[Any], str]]]:
    """(function, read_only, renderer) for the agent tools, bound to ``db_path``."""
    from pydantic import Field


    def agent_backends() -> list[dict[str, Any]]:
        """The agent backends this server can run, to choose the `backend` of
        run_agent_pass. `offline` always works (no key, no network); a provider is
        available when its SDK is installed and its API key is set in the server's
        environment.

        Returns [{name, backend, aliases, available, requires, default_model}]: name is the
        selector, backend the name written into evidence, requires the packages and
        environment variables it needs."""

        from kbtool.agents import agent_backends as entries

        return entries()

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
                description=(
                    "Rounds; each later round re-enriches contexts with the names written so far and"
                    " stops early at a fixpoint."
                ),
            ),
        ] = 1,
    ) -> dict[str, Any]:
        """Name a version's functions in one call: select candidates, build each function's
        context from stored facts, propose names with the backend, verify them and write the
        accepted ones through the KB's gate as provenance "agent" (never over a human name;
        over another agent, oracle or export name only with strictly higher confidence). A
        provider pass sends at most 500 functions to the model per call; run it again for
        more.

        Returns {backend, considered, proposed, written, rejected_by_verifier,
        rejected_by_economy, skipped_existing, specialist_proposed, specialist_written,
        rounds_run, details: [{kind (write|verifier_reject|economy_reject), index,
        stable_id, name, confidence, source, backend, model, reason}]}."""

        from kbtool.agents import BackendUnavailable
        from kbtool.services.agent_pass import run_agent_pass as run_pass

        conn = open_rw(db_path, create=False)
        try:
            return run_pass(conn, version_id, backend, only_unconfident, rounds)
        except (BackendUnavailable, ValueError) as exc:
            raise AgentToolError(str(exc).splitlines()[0]) from None
        finally:
            conn.close()

    return [
        (agent_backends, True, as_json),
        (run_agent_pass, False, as_json),
    ]
