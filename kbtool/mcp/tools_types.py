"""MCP tools for types (issue 27): ``declare_type`` and ``apply_type`` (gated writes:
provenance "agent", actor "agent:mcp", through the KB's gate) and the read ``list_types``.

Each tool is registered with :func:`kbtool.mcp.registry.tool`. No ``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

import re
from typing import Annotated, Any

from pydantic import Field

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import KBError
from kbtool.mcp.registry import MAX_INT, kb_path, tool
from kbtool.services import types as ts

AGENT = "agent"
ACTOR = "agent:mcp"
MAX_DECL = 64 * 1024


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


@tool(title="Declare a C type (gated)", read_only=False, idempotent=False)
def declare_type(
    c_declaration: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_DECL,
            description=(
                "C declarations of named types: struct, union, enum or typedef, e.g. 'typedef struct"
                " sqlite3 sqlite3; struct sqlite3 { void *pVfs; int flags; unsigned char mallocFailed; };'."
                " Nested types, arrays, pointers, function pointers and __attribute__((packed)) are"
                " understood (wasm32 layout: pointers and long are 4 bytes); bit-fields are not."
            ),
        ),
    ],
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Declare struct/union/enum/typedef types in the KB (version-independent: every
    release sees them). Written through the gate as provenance "agent": never over a
    human's declaration of the same name, over another agent's only with a higher
    confidence. A declaration that does not parse is refused and nothing is written.
    Returns {types: [{name, kind, size, written, reason}], written, unchanged, refused}."""
    conn = open_rw(kb_path(), create=False)
    try:
        return ts.add_types(
            conn,
            c_declaration,
            provenance=AGENT,
            confidence=confidence,
            actor=ACTOR,
            evidence={"tool": "declare_type"},
        )
    except KBError as exc:
        return {"written": 0, "refused": 1, "types": [], "reason": str(exc).splitlines()[0]}
    finally:
        conn.close()


@tool(title="Apply a type (gated)", read_only=False, idempotent=False)
def apply_type(
    version_id: Annotated[
        int, Field(strict=True, ge=0, le=MAX_INT, description="A version id from list_versions.")
    ],
    target: Annotated[
        str,
        Field(
            min_length=1,
            max_length=600,
            description=(
                "What to type: 'INDEX:pN' (parameter N of function INDEX of this version, e.g. 1031:p0),"
                " 'INDEX:lN' (wasm local N, parameters first), 'g:GLOBAL' (a global) or a data item"
                ' as get_xrefs_to takes it (0xADDRESS, a data label, "text).'
            ),
        ),
    ],
    type_name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=300,
            description=(
                "A C type: 'struct sqlite3 *' (a parameter or local holds a pointer), 'int', or for a"
                " data item any complete type such as 'struct config' or 'char[16]'."
            ),
        ),
    ],
    confidence: Confidence = 0.5,
) -> dict[str, Any]:
    """Apply a type to a parameter, local, global or data item. The type must fit the
    wasm value (an i32 local holds an int or a pointer). A struct pointer parameter then
    reads as ((struct sqlite3 *)(M + db))->mallocFailed in get_lifted_c. Gated like
    declare_type; the type follows the function (or the data) into later releases.
    Returns {written, reason}."""
    conn = open_rw(kb_path(), create=False)
    try:
        m = re.fullmatch(r"(\d+):([pl])(\d+)", target.strip())
        if m:
            return dict(
                ts.apply_local(
                    conn,
                    f"{version_id}:{m.group(1)}",
                    m.group(3),
                    type_name,
                    param=m.group(2) == "p",
                    provenance=AGENT,
                    confidence=confidence,
                    actor=ACTOR,
                    evidence={"tool": "apply_type"},
                )
            )
        return dict(
            ts.apply_data(
                conn,
                version_id,
                target,
                type_name,
                provenance=AGENT,
                confidence=confidence,
                actor=ACTOR,
                evidence={"tool": "apply_type"},
            )
        )
    except KBError as exc:
        return {"written": False, "reason": str(exc).splitlines()[0]}
    finally:
        conn.close()


@tool(title="List declared types")
def list_types(
    offset: Annotated[
        int, Field(strict=True, ge=0, le=MAX_INT, description="First type to return.")
    ] = 0,
    limit: Annotated[
        int, Field(strict=True, ge=1, le=200, description="How many (at most 200).")
    ] = 50,
) -> dict[str, Any]:
    """The KB's types, by name: {total, offset, types: [{name, kind, size, align,
    fields (member count), provenance, confidence, locked, uses}]}."""
    conn = open_ro(kb_path())
    try:
        return ts.list_types(conn, offset, limit)
    finally:
        conn.close()
