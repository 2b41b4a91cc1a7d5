"""MCP tools that show code: ``get_disassembly`` and ``get_lifted_c`` (what RE servers call
disassemble/decompile), answered by :mod:`kbtool.services.code` on a read-only connection.

Each answer is plain text, bounded: at most ``limit`` lines from line ``offset`` and at
most ``MAX_CHARS`` characters; when more remains, the last line says which ``offset`` to
ask for next. No ``from __future__ import annotations``: the SDK reads the annotations.

Both read a window (:func:`kbtool.services.code.code_window`), not the whole Disassembly
object: a disassembly window within the first screen decodes only up to it (a huge
function's first page costs what a small one's does), later windows are slices of the
listing the service renders once and keeps, and the C is lifted without disassembling.
"""

from typing import Annotated, Any

from pydantic import Field

from kbtool.mcp import reads
from kbtool.mcp.registry import kb_path, tool

MAX_CHARS = 100_000  # one answer's size bound (characters)
DEFAULT_LIMIT = 2_000  # lines per answer unless the caller asks otherwise
MAX_LIMIT = 20_000


def page(
    text: str,
    offset: int,
    limit: int,
    *,
    tool: str,
    version_id: int,
    func_index: int,
    comment: tuple[str, str],
) -> str:
    """Lines ``offset..offset+limit`` of ``text`` within MAX_CHARS, plus a note on what is left."""
    lines = text.splitlines()
    offset = max(0, offset)
    limit = max(1, min(limit, MAX_LIMIT))
    return page_window(
        lines[offset : offset + limit],
        len(lines),
        offset,
        tool=tool,
        version_id=version_id,
        func_index=func_index,
        comment=comment,
    )


def page_window(
    window: list[str],
    total: int,
    offset: int,
    *,
    tool: str,
    version_id: int,
    func_index: int,
    comment: tuple[str, str],
) -> str:
    """The answer for ``window`` (lines from ``offset`` of a text of ``total`` lines):
    within MAX_CHARS, plus a note on what is left."""
    out: list[str] = []
    size = 0
    end = offset
    for line in window:
        if size + len(line) + 1 > MAX_CHARS and out:
            break
        out.append(line[:MAX_CHARS])
        size += len(line) + 1
        end += 1
    open_, close = comment
    if offset >= total and total:
        return (
            f"{open_} kbtool: offset {offset} is past the end: the text has {total} lines{close}\n"
        )
    if end < total:
        out.append(
            f"{open_} kbtool: truncated: lines {offset + 1}-{end} of {total} shown; for the rest call"
            f" {tool}(version_id={version_id}, func_index={func_index}, offset={end}){close}"
        )
    elif offset:
        out.append(f"{open_} kbtool: lines {offset + 1}-{end} of {total}{close}")
    return "\n".join(out) + "\n"


VersionId = Annotated[int, Field(description="A version id from list_versions.")]


FuncIndex = Annotated[
    int,
    Field(
        description=(
            "The function's index in that version (from list_functions); imports have no code."
        )
    ),
]


Offset = Annotated[
    int,
    Field(
        ge=0,
        description=(
            "First line to return (0-based); use the offset a truncated answer names to get the rest."
        ),
    ),
]


Limit = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_LIMIT,
        description=(
            f"Maximum number of lines (the answer is also capped at {MAX_CHARS:,} characters)."
        ),
    ),
]


def window(version_id: int, func_index: int, kind: str, offset: int, limit: int) -> dict[str, Any]:
    """:func:`kbtool.services.code.code_window`: the lines asked for and the total, without
    the whole Disassembly object (a window of a huge function's first screen decodes only up
    to it; later windows are slices of the listing the service keeps)."""
    from kbtool.services import code as code_service

    return reads.pool_for(kb_path()).read(
        code_service.code_window,
        version_id,
        func_index,
        kind=kind,
        offset=max(0, offset),
        limit=max(1, min(limit, MAX_LIMIT)),
    )


@tool(title="Disassembly", text=True)
def get_disassembly(
    version_id: VersionId,
    func_index: FuncIndex,
    offset: Offset = 0,
    limit: Limit = DEFAULT_LIMIT,
) -> str:
    """The raw WebAssembly of one defined function, one instruction per line
    (`<file offset>: <mnemonic> <immediates>`, indented by block structure), with the
    KB's names on calls (`call $name`, `call func[N] <unnamed>`), global names,
    call_indirect signatures and `;; "..."` notes on constants that point at strings.
    Use it to check exactly what a function does, or when get_lifted_c is a placeholder.
    Long functions come in pages: a last line starting `;; kbtool: truncated` gives the
    offset to ask for next. An unknown version, an index out of range or an imported
    function is an error."""
    w = window(version_id, func_index, "wasm", offset, limit)
    return page_window(
        w["lines"],
        w["total"],
        w["offset"],
        tool="get_disassembly",
        version_id=version_id,
        func_index=func_index,
        comment=(";;", ""),
    )


@tool(title="Decompiled C", text=True)
def get_lifted_c(
    version_id: VersionId,
    func_index: FuncIndex,
    offset: Offset = 0,
    limit: Limit = DEFAULT_LIMIT,
) -> str:
    """One defined function decompiled to C: structured control flow, typed locals
    (pN parameters, lN locals), memory as `*(int32_t *)(M + p + 8)`, calls by the KB's
    names, prototypes of what it calls first. The quickest way to understand a
    function before proposing a name. Over the lifter's size/time budget the body is
    a stub whose comment says `kbtool: not lifted` (read get_disassembly then).
    Long output comes in pages: a last line `/* kbtool: truncated ... */` gives the
    offset to ask for next. An unknown version, an index out of range or an imported
    function is an error."""
    w = window(version_id, func_index, "c", offset, limit)
    return page_window(
        w["lines"],
        w["total"],
        w["offset"],
        tool="get_lifted_c",
        version_id=version_id,
        func_index=func_index,
        comment=("/*", " */"),
    )
