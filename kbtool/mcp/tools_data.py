"""MCP data-model tools (issue 26): ``get_xrefs_to``, ``list_data`` and ``read_memory``, the
"who uses this global / address / string" and "what is at this address" of IDA or Ghidra.

Everything is answered by :mod:`kbtool.services.data` from the data model ``kbtool analyze``
(or the ``analyze_version`` tool) stores; no module is parsed here. Lists are bounded pages
(:mod:`kbtool.mcp.paging`); a bad target, range or kind is a one-line tool error
(``DataError`` is a ``KBError``). No ``from __future__ import annotations``: the SDK reads
the parameter annotations live.
"""

from typing import Annotated, Any

from pydantic import Field

from kbtool.mcp.paging import MAX_ANSWER_BYTES, MAX_PAGE, call_text, page_window
from kbtool.mcp.registry import MAX_INT, read, tool
from kbtool.services import data as data_svc

MAX_TARGET = 512  # longest target text (the service refuses longer)
MAX_TARGETS = 64  # table entries shown per item (``targets_total`` gives the count)
MAX_USES = 200  # calls and data uses listed for a function target


def _item(it: dict[str, Any]) -> dict[str, Any]:
    """An item as the wire carries it: its table entries cut to MAX_TARGETS."""
    out = dict(it)
    targets = out.get("targets") or []
    if len(targets) > MAX_TARGETS:
        out["targets"] = targets[:MAX_TARGETS]
        out["targets_total"] = len(targets)
    return out


VersionId = Annotated[
    int, Field(strict=True, ge=0, le=MAX_INT, description="A version id from list_versions.")
]


Offset = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        le=MAX_INT,
        description="First row (0-based); use the next_offset of the previous page.",
    ),
]


Limit = Annotated[
    int,
    Field(
        strict=True,
        ge=1,
        le=MAX_PAGE,
        description=f"Rows per page (1..{MAX_PAGE}); a page is also cut at 100 KB.",
    ),
]


@tool(title="Cross-references to a function, global, address or string")
def get_xrefs_to(
    version_id: VersionId,
    target: Annotated[
        str,
        Field(
            strict=True,
            min_length=1,
            max_length=MAX_TARGET,
            description=(
                'What to look up: a function (its name, "#index" or stable id), a global'
                ' ("g:NAME" or "g:INDEX", e.g. "g:__stack_pointer"), an address ("0x1234"),'
                ' a data label from list_data ("s_create_table") or a string (a leading'
                ' double quote: "\\"create table" finds the string equal to, else'
                " containing, that text)."
            ),
        ),
    ],
    offset: Offset = 0,
    limit: Limit = 200,
) -> dict[str, Any]:
    """Cross-references: every place that uses a function, a global, a data address or
    a string, as (function, instruction file offset, kind). Kinds: call, load, store,
    addr (an address computed or passed on), read/write (globals), funcptr (a function
    table entry), gostring, via_header, call_indirect. For a function target it also
    says what that function uses (`uses`: {calls, data}). Needs the data model: run
    analyze_version once on the version first.

    Returns {target: {kind (function, global, data), ...}, refs: [{func_index, name,
    offset, kind, target_kind, target, width}], total, uses?, page: {total, offset,
    next_offset, truncated, note}}. A target matching nothing is an error."""
    res = read(data_svc.xrefs, version_id, target, limit=limit, offset=offset)
    call = call_text("get_xrefs_to", version_id=version_id, target=target, limit=limit)
    page = page_window(
        res.pop("refs"), res["total"], offset, call=call, budget=MAX_ANSWER_BYTES // 2
    )
    res.pop("offset", None)
    res["refs"] = page.pop("items")
    res["page"] = page
    if res["target"].get("kind") == "data":
        res["target"] = _item(res["target"])
    uses = res.get("uses")
    if uses:
        cut: dict[str, int] = {}
        for key in ("calls", "data"):
            if len(uses[key]) > MAX_USES:
                cut[key] = len(uses[key]) - MAX_USES
                uses[key] = uses[key][:MAX_USES]
        if cut:
            uses["truncated"] = cut
            uses["note"] = (
                f"uses cut to {MAX_USES} entries; read the function with"
                " get_disassembly for the rest"
            )
    return res


@tool(title="Data items (pageable)")
def list_data(
    version_id: VersionId,
    kind: Annotated[
        str | None,
        Field(
            strict=True,
            max_length=32,
            description=(
                "Only items of this kind: string (every string kind), cstring, utf16,"
                " gostring, pointer_table, funcptr_table, numeric, zero, bss; null for all."
            ),
        ),
    ] = None,
    offset: Offset = 0,
    limit: Limit = 100,
    search: Annotated[
        str | None,
        Field(
            strict=True,
            min_length=1,
            max_length=MAX_TARGET,
            description="Only items whose text or label contains this (case-insensitive).",
        ),
    ] = None,
) -> dict[str, Any]:
    """The data items of a version by address, as the data model cut them: strings (C,
    UTF-16, Go), pointer and function-pointer tables, numeric data, zero blocks and
    .bss variables, each with its label (s_create_table, ptrs_1234...), size, text and
    how many code references point into it. Follow up with get_xrefs_to(label) or
    read_memory(address). Needs the data model (analyze_version).

    Returns {items: [{address, size, kind, segment, text, label, data_id, refs,
    targets}], total, offset, next_offset, truncated, note}; `targets` (table entries)
    is cut to 64 with `targets_total`."""
    res = read(data_svc.list_data, version_id, kind=kind, search=search, offset=offset, limit=limit)
    call = call_text("list_data", version_id=version_id, kind=kind, search=search, limit=limit)
    return page_window([_item(i) for i in res["items"]], res["total"], offset, call=call)


@tool(title="Read initial memory (hex + ascii)")
def read_memory(
    version_id: VersionId,
    address: Annotated[
        int,
        Field(
            strict=True,
            ge=0,
            le=MAX_INT,
            description="Start address (an integer, e.g. 4096 for 0x1000).",
        ),
    ],
    length: Annotated[
        int,
        Field(
            strict=True,
            ge=1,
            le=data_svc.MAX_READ,
            description=f"Bytes to read (1..{data_svc.MAX_READ}).",
        ),
    ] = 64,
) -> dict[str, Any]:
    """The initial linear memory at an address, as the data segments lay it out: rows
    of 16 bytes as hex and ASCII (non-printable bytes as "."), and the data item that
    holds the address (label, kind, size). Bounded to 4096 bytes; an address outside
    the initialised data is an error. Needs the data model (analyze_version).

    Returns {address, length, rows: [{address, hex, ascii}], item: {...} | null}."""
    res = read(data_svc.memory, version_id, address, length)
    if res.get("item"):
        res["item"] = _item(res["item"])
    return res
