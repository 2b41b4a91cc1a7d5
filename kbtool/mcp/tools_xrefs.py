"""MCP cross-reference tools: callers, callees, strings, globals, memory regions and
``find_functions`` (what ida-pro-mcp, GhidraMCP and radare2-mcp answer), from the stored
facts (:mod:`kbtool.kb.queries`) and, for globals and memory, the stored module bytes.

Every list answer is a page ``{items, total, offset, next_offset, truncated, note}``
(:mod:`kbtool.mcp.paging`) of at most ``limit`` rows and 100 KB. No
``from __future__ import annotations``: the SDK reads the parameter annotations live.
"""

from typing import Annotated, Any

from pydantic import Field

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.mcp.paging import MAX_PAGE, call_text, page_rows
from kbtool.mcp.registry import MAX_INT, read, tool
from kbtool.services.modules import stack_pointer_index

MAX_TEXT = 4096  # longest string argument
PREVIEW = 64  # bytes of a data segment shown as text or hex
MAX_CANDIDATES = 200  # call_indirect candidates listed per answer
TABLE_STRIDE = 4  # word size used to call a segment an address table (wasm32)


class XrefToolError(KBError):
    """A refused cross-reference call (bad argument, no module bytes): a one-line tool error."""


def segment_kind(data: bytes) -> str:
    """What a data segment mostly holds: ``zeros``, ``strings`` (printable text runs),
    ``table`` (aligned 32-bit words that look like small pointers) or ``data``."""
    if not data or data.count(0) == len(data):
        return "zeros"
    printable = sum(1 for b in data if 0x20 <= b < 0x7F or b in (0, 9, 10, 13))
    if printable * 10 >= len(data) * 9 and data.count(0) * 2 < len(data):
        return "strings"
    if len(data) >= 4 * TABLE_STRIDE and len(data) % TABLE_STRIDE == 0:
        words = [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]
        nonzero = [w for w in words if w]
        if nonzero and all(w < 1 << 26 for w in nonzero) and len(nonzero) * 2 >= len(words):
            return "table"
    return "data"


def preview(data: bytes) -> str:
    head = data[:PREVIEW]
    if all(0x20 <= b < 0x7F or b in (0, 9, 10) for b in head):
        return head.replace(b"\0", b" ").decode("ascii").strip()
    return head.hex()


VersionId = Annotated[
    int, Field(strict=True, ge=0, le=MAX_INT, description="A version id from list_versions.")
]


FuncIndex = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        le=MAX_INT,
        description=("The function's index in that version (from list_functions)."),
    ),
]


Offset = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        le=MAX_INT,
        description=("First row (0-based); use the next_offset of the previous page."),
    ),
]


Limit = Annotated[
    int,
    Field(
        strict=True,
        ge=1,
        le=MAX_PAGE,
        description=(f"Rows per page (1..{MAX_PAGE}); a page is also cut at 100 KB."),
    ),
]


def _module(version_id: int):
    from kbtool.services.modules import stored_module

    m = read(stored_module, version_id)
    if m is None:
        raise XrefToolError(f"the KB holds no module bytes for version {version_id}")
    return m


Indirect = Annotated[
    bool,
    Field(
        strict=True,
        description=(
            "Also list call_indirect candidates (functions in the table whose type matches"
            " an indirect call site), from the call graph; the first call on a module"
            " builds it (seconds on a large module)."
        ),
    ),
]


def _indirect(version_id: int, func_index: int, side: str) -> dict[str, Any]:
    from kbtool.services import code as code_service

    graph = read(code_service.callgraph, version_id)
    other = "callee" if side == "caller" else "caller"
    nodes = {n["index"]: n for n in graph["nodes"]}
    found = sorted(
        {e[other] for e in graph["edges"] if e["kind"] == "indirect" and e[side] == func_index}
    )
    rows = [
        {k: nodes.get(i, {}).get(k) for k in ("stable_id", "name", "provenance")} | {"index": i}
        for i in found[:MAX_CANDIDATES]
    ]
    return {"indirect_candidates": rows, "indirect_candidates_total": len(found)}


@tool(title="Callers")
def get_callers(
    version_id: VersionId,
    func_index: FuncIndex,
    offset: Offset = 0,
    limit: Limit = 500,
    indirect: Indirect = False,
) -> dict[str, Any]:
    """Who calls this function directly (distinct callers, index order, with their
    names): to name a function from how it is used, or to see what a change affects.
    With indirect=true, also the functions whose call_indirect sites may reach it
    (`indirect_candidates`, at most 200, and `indirect_candidates_total`).

    Returns {items: [{index, stable_id, name, provenance, imported, import}], total,
    offset, next_offset, truncated, note}; an unknown version or index is an error."""
    rows = read(queries.callers, version_id, func_index)
    call = call_text("get_callers", version_id=version_id, func_index=func_index, limit=limit)
    out = page_rows(rows, offset, limit, call=call)
    if indirect:
        out.update(_indirect(version_id, func_index, "callee"))
    return out


@tool(title="Callees")
def get_callees(
    version_id: VersionId,
    func_index: FuncIndex,
    offset: Offset = 0,
    limit: Limit = 500,
    indirect: Indirect = False,
) -> dict[str, Any]:
    """What this function calls: distinct direct callees (imports and defined
    functions, with names) plus the number of its indirect call sites; with
    indirect=true also the candidates those sites may reach (`indirect_candidates`, at
    most 200, and `indirect_candidates_total`).

    Returns {items: [{index, stable_id, name, provenance, imported, import}], total,
    offset, next_offset, truncated, note, indirect_call_sites}; an unknown version or
    index is an error."""
    rows = read(queries.callees, version_id, func_index)
    call = call_text("get_callees", version_id=version_id, func_index=func_index, limit=limit)
    out = page_rows(rows, offset, limit, call=call)
    sites = [
        t
        for t in read(queries.call_target_counts, version_id, func_index)
        if t["target"] == "<indirect>"
    ]
    out["indirect_call_sites"] = sites[0]["count"] if sites else 0
    if indirect:
        out.update(_indirect(version_id, func_index, "caller"))
    return out


@tool(title="List strings")
def list_strings(
    version_id: VersionId,
    contains: Annotated[
        str,
        Field(
            strict=True,
            max_length=MAX_TEXT,
            description=('Only strings containing this (case-insensitive); "" lists all.'),
        ),
    ] = "",
    offset: Offset = 0,
    limit: Limit = 500,
) -> dict[str, Any]:
    """The strings the code of a version references (recovered from constant
    addresses into the data segments), with how many functions reference each: to
    find code by its messages, file names or format strings. Follow up with
    get_string_xrefs(text=...) or find_functions(string=...).

    Returns {items: [{text, functions}], total, offset, next_offset, truncated, note}."""
    strings = read(queries.version_strings, version_id)
    needle = contains.lower()
    rows = [
        {"text": t, "functions": len(refs)} for t, refs in strings.items() if needle in t.lower()
    ]
    call = call_text("list_strings", version_id=version_id, contains=contains or None, limit=limit)
    return page_rows(rows, offset, limit, call=call)


@tool(title="String cross-references")
def get_string_xrefs(
    version_id: VersionId,
    text: Annotated[
        str,
        Field(
            strict=True,
            min_length=1,
            max_length=MAX_TEXT,
            description=("The string exactly as list_strings gives it."),
        ),
    ],
    offset: Offset = 0,
    limit: Limit = 500,
) -> dict[str, Any]:
    """The functions that reference one string (exact text, as list_strings shows it).

    Returns {text, items: [{index, stable_id, name, provenance, imported, import}],
    total, offset, next_offset, truncated, note}; items is empty when no function
    references it."""
    refs = read(queries.version_strings, version_id).get(text, [])
    rows = read(queries.function_entries, version_id, refs)
    call = call_text("get_string_xrefs", version_id=version_id, text=text, limit=limit)
    return {"text": text, **page_rows(rows, offset, limit, call=call)}


@tool(title="Find functions by string, constant or call")
def find_functions(
    version_id: VersionId,
    string: Annotated[
        str | None,
        Field(
            strict=True,
            min_length=1,
            max_length=MAX_TEXT,
            description=("Functions referencing a string that contains this (case-insensitive)."),
        ),
    ] = None,
    constant: Annotated[
        int | None,
        Field(
            strict=True,
            description=(
                "Functions using this integer constant (e.g. a magic number or CRC polynomial)."
            ),
        ),
    ] = None,
    calls: Annotated[
        int | None,
        Field(
            strict=True,
            ge=0,
            le=MAX_INT,
            description=("Functions calling the function of this index directly."),
        ),
    ] = None,
    offset: Offset = 0,
    limit: Limit = 500,
) -> dict[str, Any]:
    """Search a version's defined functions by what their code holds: a string, a
    constant, a direct call. Give at least one; all given criteria must hold.

    Returns {items: [{index, stable_id, name, provenance, imported, import}], total,
    offset, next_offset, truncated, note}."""
    if string is None and constant is None and calls is None:
        raise XrefToolError("give at least one of string, constant, calls")
    found = read(
        queries.functions_matching_facts,
        version_id,
        string=string,
        constant=constant,
        calls=calls,
    )
    rows = read(queries.function_entries, version_id, found)
    call = call_text(
        "find_functions",
        version_id=version_id,
        string=string,
        constant=constant,
        calls=calls,
        limit=limit,
    )
    return page_rows(rows, offset, limit, call=call)


@tool(title="List globals")
def list_globals(version_id: VersionId, offset: Offset = 0, limit: Limit = 500) -> dict[str, Any]:
    """The module's globals (imported first, as wasm numbers them): type, mutability,
    constant initial value, import or export name, and the functions that use them
    (global.get/global.set). Once the version has a data model (analyze_version), each
    global also has the name and role the model inferred (`__stack_pointer` /
    stack_pointer, `__heap_base`, `__tls_base`, Go's SP and g...), with `confidence`
    and how many functions read and write it; follow up with get_xrefs_to("g:NAME").
    Without a model, the first mutable i32 global with a constant initialiser is
    called the stack pointer (role "stack_pointer") and `name` is null.

    Returns {items: [{index, type, mutable, initial, imported, import, exports, role,
    name, confidence, reads, writes, used_by: [func index], used_by_count}], total,
    offset, next_offset, truncated, note, data_model (bool)}; used_by lists at most 50
    functions."""
    m = _module(version_id)
    usage = read(queries.globals_usage, version_id)
    model = read(_model_globals, version_id)
    imports = [i for i in m.imports if i.kind == "global"]
    exports: dict[int, list[str]] = {}
    for e in m.exports:
        if e.kind == "global":
            exports.setdefault(e.index, []).append(e.name)
    sp = stack_pointer_index(m)
    rows = []
    for gi, g in enumerate(m.globals):
        imp = imports[gi] if g.imported and gi < len(imports) else None
        users = usage.get(gi, [])
        known = model.get(gi) if model is not None else None
        rows.append(
            {
                "index": gi,
                "type": g.valtype,
                "mutable": g.mutable,
                "initial": g.init if isinstance(g.init, int | float) else None,
                "imported": g.imported,
                "import": f"{imp.module}.{imp.field}" if imp else None,
                "exports": exports.get(gi, []),
                "role": known["role"]
                if known
                else ("stack_pointer" if gi == sp and model is None else None),
                "name": known["name"] if known else None,
                "confidence": known["confidence"] if known and known["name"] else None,
                "reads": known["reads"] if known else None,
                "writes": known["writes"] if known else None,
                "used_by": users[:50],
                "used_by_count": len(users),
            }
        )
    call = call_text("list_globals", version_id=version_id, limit=limit)
    return {**page_rows(rows, offset, limit, call=call), "data_model": model is not None}


@tool(title="Memory regions")
def list_memory_regions(
    version_id: VersionId, offset: Offset = 0, limit: Limit = 500
) -> dict[str, Any]:
    """The linear memory layout: the memories (initial/maximum pages, shared), every
    data segment (address, size, what it mostly holds: strings, zeros, table, data,
    and a short preview), the static data region, the stack pointer's initial value
    and the heap base where they can be inferred (wasm-ld/Emscripten layout).

    Returns {memories, static_region: {start, end} | null, stack_pointer, heap_base,
    items: [{segment, address, size, passive, kind, preview}], total, offset,
    next_offset, truncated, note}."""
    m = _module(version_id)
    rows = []
    for si, seg in enumerate(m.data_segments):
        rows.append(
            {
                "segment": si,
                "address": seg.offset,
                "size": len(seg.data),
                "passive": seg.passive,
                "kind": segment_kind(seg.data),
                "preview": preview(seg.data),
            }
        )
    placed = [
        (r["address"], r["address"] + r["size"])
        for r in rows
        if r["address"] is not None and r["size"]
    ]
    static = (
        {"start": min(a for a, _ in placed), "end": max(b for _, b in placed)} if placed else None
    )
    sp_index = stack_pointer_index(m)
    sp = m.globals[sp_index].init if sp_index is not None else None
    heap = None
    if static is not None and isinstance(sp, int):
        heap = sp if sp > static["end"] else static["end"]  # stack first: after the data
    call = call_text("list_memory_regions", version_id=version_id, limit=limit)
    memories = [
        {
            "min_pages": mem.min,
            "max_pages": mem.max,
            "shared": mem.shared,
            "imported": mem.imported,
        }
        for mem in m.memories
    ]
    return {
        "memories": memories,
        "static_region": static,
        "stack_pointer": sp,
        "heap_base": heap,
        **page_rows(rows, offset, limit, call=call),
    }


def _model_globals(conn: Any, version_id: int) -> dict[int, dict[str, Any]] | None:
    """The data model's globals by index (name, role, confidence, reads, writes), or None
    when the version has no data model yet."""
    from kbtool.services import data as data_svc

    if data_svc.status(conn, version_id) is None:
        return None
    return {g["index"]: dict(g) for g in data_svc.globals_of(conn, version_id)}
