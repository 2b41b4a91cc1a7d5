"""MCP tools for knowledge beyond names (issue 27): ``set_comment``, ``set_prototype``,
``rename_local``, ``name_data`` (gated writes: provenance "agent", actor "agent:mcp", the agent
verifier first, then the KB's gate) and the reads ``get_comments``, ``get_prototype``.

Each tool is registered with :func:`kbtool.mcp.registry.tool`. No ``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from kbtool.kb import knowledge as kn
from kbtool.kb.db import open_ro, open_rw
from kbtool.mcp.registry import MAX_INT, kb_path, tool
from kbtool.services import knowledge as ks

AGENT = "agent"
ACTOR = "agent:mcp"
MAX_LINE_COMMENTS = 15  # x at most ~4 KB each (plus locals: bounded by the function's locals)


Function = Annotated[
    str,
    Field(
        min_length=1,
        max_length=300,
        description=(
            "The function: its stable_id (16 hex digits), or VERSION:INDEX such as 2:1031."
        ),
    ),
]


Confidence = Annotated[
    float,
    Field(
        strict=True,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="How sure you are, 0.0 to 1.0.",
    ),
]


VersionId = Annotated[
    int, Field(strict=True, ge=0, le=MAX_INT, description="A version id from list_versions.")
]


def _write(
    kind: str, checked: str | None, fn: Callable[..., Any], *args: Any, **kw: Any
) -> dict[str, Any]:
    if checked is not None:
        why = ks.agent_check(kind, checked)
        if why:
            return {"written": False, "reason": why}
    conn = open_rw(kb_path(), create=False)
    try:
        return dict(fn(conn, *args, provenance=AGENT, actor=ACTOR, **kw))
    except ks.KnowledgeError as exc:
        return {"written": False, "reason": str(exc).splitlines()[0]}
    finally:
        conn.close()


def _read(fn: Callable[..., Any], *args: Any) -> Any:
    conn = open_ro(kb_path())
    try:
        return fn(conn, *args)
    finally:
        conn.close()


@tool(title="Comment a function or a line (gated)", read_only=False, idempotent=False)
def set_comment(
    function: Function,
    text: Annotated[
        str,
        Field(
            min_length=1,
            max_length=kn.MAX_COMMENT,
            description=(
                "The comment: plain text, newlines and tabs allowed (no other control characters)."
            ),
        ),
    ],
    line: Annotated[
        int | None,
        Field(
            strict=True,
            ge=0,
            le=MAX_INT,
            description=(
                "An instruction's offset as get_disassembly shows it (hex there; pass the number):"
                " a comment on that line. Omit for the function comment."
            ),
        ),
    ] = None,
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Comment a function (what it does, how) or one of its instructions. Written through
    the KB's gate as provenance "agent": never over a human comment, over another agent's
    only with a higher confidence; every decision is kept in the history. The comment is
    shown above the function in get_lifted_c and after the line in get_disassembly, and
    follows the function into later releases. Returns {written, reason}."""
    return _write(
        "line_comment" if line is not None else "comment",
        text,
        ks.set_comment,
        function,
        text,
        line=line,
        confidence=confidence,
        evidence={"tool": "set_comment"},
    )


@tool(title="Set a function's prototype (gated)", read_only=False, idempotent=False)
def set_prototype(
    function: Function,
    prototype: Annotated[
        str,
        Field(
            min_length=1,
            max_length=kn.MAX_PROTOTYPE,
            description=(
                "A C prototype such as 'int sqlite3_exec(sqlite3 *db, const char *zSql, void *cb,"
                " void *arg, char **pzErr)'. It must agree with the wasm signature: one wasm"
                " parameter per C parameter (pointers and int are i32, long long i64, double f64)."
            ),
        ),
    ],
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Declare a function's prototype; its parameter names become the parameter names of
    the lifted C. Refused when it does not parse or disagrees with the wasm signature
    (the reason says how). Gated like set_comment. Returns {written, reason}."""
    return _write(
        "prototype",
        None,
        ks.set_prototype,
        function,
        prototype,
        confidence=confidence,
        evidence={"tool": "set_prototype"},
    )


@tool(title="Name a local or parameter (gated)", read_only=False, idempotent=False)
def rename_local(
    function: Function,
    local: Annotated[
        str,
        Field(
            min_length=1,
            max_length=300,
            description=(
                "The wasm local index (parameters first: 0 is the first parameter), as 3, l3 or p0,"
                " or the local's current name."
            ),
        ),
    ],
    name: Annotated[
        str, Field(min_length=1, max_length=kn.MAX_NAME, description="A C identifier.")
    ],
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Name a parameter or local variable of a function (shown in get_lifted_c and
    get_disassembly). Gated like set_comment; an unknown local is refused. Returns
    {written, reason}."""
    return _write(
        "local",
        name,
        ks.rename_local,
        function,
        local,
        name,
        confidence=confidence,
        evidence={"tool": "rename_local"},
    )


@tool(title="Name a data address (gated)", read_only=False, idempotent=False)
def name_data(
    version_id: VersionId,
    target: Annotated[
        str,
        Field(
            min_length=1,
            max_length=512,
            description=(
                'A data item or global as get_xrefs_to takes it: 0xADDRESS, a data label, "text'
                " (a string's text) or g:GLOBAL."
            ),
        ),
    ],
    name: Annotated[
        str, Field(min_length=1, max_length=kn.MAX_NAME, description="A C identifier.")
    ],
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Name a data item (kept with its content: every release holding the same bytes shows
    the name) or a global. Needs the version's data model (analyze_version). Gated like
    set_comment. Returns {written, reason}."""
    return _write(
        "data_name",
        name,
        ks.name_data,
        version_id,
        target,
        name,
        confidence=confidence,
        evidence={"tool": "name_data"},
    )


@tool(title="A function's comments")
def get_comments(function: Function) -> dict[str, Any]:
    """A function's comment, line comments (offset in the body, address in the version;
    the first 15, with a note when there are more) and local names, each with provenance,
    confidence and lock.
    Returns {stable_id, version_id, index, comment, line_comments, locals, prototype}."""

    def run(conn: Any) -> dict[str, Any]:
        f = ks.resolve_function(conn, function)
        k = ks.function_knowledge(conn, f["stable_id"], f["version_id"])
        total = len(k["line_comments"])
        if total > MAX_LINE_COMMENTS:  # the answer stays well under 100 KB
            k["line_comments"] = k["line_comments"][:MAX_LINE_COMMENTS]
            k["line_comments_truncated"] = (
                f"the first {MAX_LINE_COMMENTS} of {total} (kbtool knowledge shows all)"
            )
        return {
            "stable_id": f["stable_id"],
            "version_id": f["version_id"],
            "index": f["index"],
            **k,
        }

    return _read(run)


@tool(title="A function's prototype")
def get_prototype(function: Function) -> dict[str, Any]:
    """A function's declared prototype {text, params: [{name, type}], provenance,
    confidence, locked} (null when none) and its wasm signature."""

    def run(conn: Any) -> dict[str, Any]:
        f = ks.resolve_function(conn, function)
        k = ks.function_knowledge(conn, f["stable_id"])
        return {
            "stable_id": f["stable_id"],
            "wasm_type": f["type_sig"],
            "prototype": k["prototype"],
        }

    return _read(run)
