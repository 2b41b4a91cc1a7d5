"""MCP tool ``analyze_version``: static analysis of a version, written through the gate.

Each tool is registered with :func:`kbtool.mcp.registry.tool`. No
``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

from typing import Annotated, Any

from pydantic import Field

from kbtool.kb.db import open_rw
from kbtool.mcp.registry import kb_path, tool

VersionId = Annotated[int, Field(description="A version id from list_versions.")]


@tool(title="Static analysis (gated)", read_only=False, idempotent=True)
def analyze_version(version_id: VersionId) -> dict[str, Any]:
    """Run kbtool's static analysis on one version (no key, no network needed) and
    write what it finds: libc/runtime functions it recognises (memcpy, malloc, printf,
    compiler-rt helpers...) are proposed as names with provenance "agent" and actor
    "analyzer" through the KB's gate, so a human, locked or higher-confidence name is
    never replaced; thread facts and recovered structs are stored. Re-running it is
    idempotent (nothing new is written). Run it once per version before naming by hand.

    Returns {version_id, label, thread_facts: [{kind (shared_memory, atomic_site, lock,
    tls_base, worker_entry, worker_only), func_index, ...}], structs: [{name,
    source_function, fields: [{offset, size, type, name}], members}], names:
    [{func_index, stable_id, name, confidence, family, outcome (written, refused,
    unchanged, skipped), reason}], review: [{func_index, candidates, reason}], summary
    (counts)}: the contract's full answer, one entry per fact, name and struct, which
    can be hundreds of KB on a large module (341 KB seen); `summary` has the counts."""

    from kbtool.services.analyze import analyze_version as run

    conn = open_rw(kb_path(), create=False)
    try:
        return run(conn, version_id)
    finally:
        conn.close()
