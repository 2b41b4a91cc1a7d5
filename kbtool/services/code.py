"""Code of a version's functions, with the KB's names: disassembly, lifted C, call graph, diff.

Every surface (CLI ``kbtool code``, the TUI code screen, ``/api/disasm`` and
``/api/callgraph``, the MCP ``get_disassembly``/``get_lifted_c`` tools) calls here::

    disassembly(conn, version_id, func_index)   # the contract's Disassembly object
    module_c(conn, version_id)                  # the whole module's C, one chunk per function
    module_listing(conn, version_id)            # the whole module's disassembly, likewise
    callgraph(conn, version_id)                 # the contract's Call graph object
    function_diff(conn, stable_id, from_version_id, to_version_id)

The module bytes come from the KB (``queries.module_bytes``); function names are the KB's
(any provenance) over the module's own (name section, exports, import fields); global and
local names are the module's. A prepared module (:func:`kbtool.lift.prepare`) is kept in an
in-process LRU per (KB file, version id, change token), so on-demand calls after the first
cost one small query plus the function's own work; a rename changes the token and the next
call sees the new name. Errors are KB errors with one-line messages: unknown version
(``UnknownVersionError``), index out of range (``UnknownFunctionError``), an import
(``ImportedFunctionError``), bytes not stored (``ModuleBytesMissingError``).
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kbtool.kb import datamodel, queries
from kbtool.kb.errors import (
    ImportedFunctionError,
    KBError,
    ModuleBytesMissingError,
    UnknownFunctionError,
)
from kbtool.lift import (
    LiftModule,
    Names,
    build_callgraph,
    disassemble_function,
    disassemble_module,
    lift_function,
    lift_module,
    param_c_names,
    prepare,
)
from kbtool.lift.names import C_KEYWORDS, annotate_c, c_ident, display_name
from kbtool.services import knowledge
from kbtool.services import types as types_svc
from kbtool.wasm import WasmFormatError, analyze_module
from kbtool.wasm.instr import decode_one, read_local_decls
from kbtool.wasm.leb import encode_uleb
from kbtool.wasm.opcodes import K_REF_FUNC, KIND
from kbtool.wasm.reader import Module, parse_module

PREPARED_CACHE = 6  # prepared versions kept per process
PARSED_CACHE = 3  # parsed modules (and their analyses), by content digest
RESULT_CACHE = 128  # disassembly results kept per process
MAX_DATA_LABELS = 1_000_000  # data items labelled in the C (the data model bounds them too)


class CodeUnavailableError(KBError):
    """The stored module bytes of a version cannot be decoded."""


# ---------------------------------------------------------------- caches


@dataclass
class _Parsed:
    data: bytes
    module: Module
    names: Names
    analysis: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    graph: dict | None = None
    in_table: set[int] | None = None  # functions placed in a table (element segments)
    code_starts: list[int] | None = None  # file offset of each defined body, for bisect
    body_refs: dict[int, set[int]] = field(default_factory=dict)  # index -> ref.func targets

    def get_analysis(self) -> Any:
        with self.lock:
            if self.analysis is None:
                self.analysis = analyze_module(self.data)
            return self.analysis

    def get_graph(self) -> dict:
        """The call graph's structure (edges, candidates); names are added per KB state."""
        analysis = self.get_analysis()
        with self.lock:
            if self.graph is None:
                self.graph = build_callgraph(analysis, self.data, {}, {}, {})
            return self.graph


@dataclass
class CodeModule:
    """One version prepared for code views, with the KB's identities and names."""

    version_id: int
    lm: LiftModule
    parsed: _Parsed
    rows: dict[int, tuple]  # index -> (stable_id, imported, module, field, name, provenance)
    graph: dict | None = None
    display_index: dict[str, int] | None = None  # "$name" in a listing -> function index

    @property
    def num_functions(self) -> int:
        return self.lm.module.num_functions

    def check(self, func_index: int) -> tuple:
        """The KB row of a defined function; KB errors for out of range and imports."""
        n = self.num_functions
        if func_index < 0 or func_index >= n:
            raise UnknownFunctionError(
                f"version {self.version_id} has no function {func_index}"
                f" (its indices run 0..{n - 1})"
            )
        row = self.rows.get(func_index)
        m = self.lm.module
        if func_index < m.num_func_imports or (row is not None and row[1]):
            imp = m.func_imports[func_index] if func_index < m.num_func_imports else None
            what = f"{imp.module}.{imp.field}" if imp else f"{row[2]}.{row[3]}"
            raise ImportedFunctionError(
                f"function {func_index} of version {self.version_id} is an import ({_one_line(what)}):"
                " it has no code"
            )
        return row or (None, False, None, None, None, None)


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_item(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


_LOCK = threading.Lock()
_PREPARED = _LRU(PREPARED_CACHE)
_PARSED = _LRU(PARSED_CACHE)
_RESULTS = _LRU(RESULT_CACHE)


def clear_cache() -> None:
    """Forget every prepared module (tests; memory)."""
    with _LOCK:
        _PREPARED.clear()
        _PARSED.clear()
        _RESULTS.clear()


def _db_file(conn: sqlite3.Connection) -> str:
    return queries.database_file(conn) or f"memory:{id(conn)}"


def _parsed(data: bytes) -> _Parsed:
    digest = hashlib.blake2b(data, digest_size=16).digest()
    with _LOCK:
        hit = _PARSED.get_item(digest)
    if hit is not None:
        return hit
    try:
        module = parse_module(data)
    except WasmFormatError as exc:
        raise CodeUnavailableError(f"the stored module cannot be decoded: {exc}") from None
    parsed = _Parsed(data, module, Names.from_module(module))
    with _LOCK:
        _PARSED.put(digest, parsed)
    return parsed


def code_module(conn: sqlite3.Connection, version_id: int) -> CodeModule:
    """The prepared version (cached per KB file, version id and change token)."""
    key = (_db_file(conn), version_id, queries.change_token(conn))
    with _LOCK:
        hit = _PREPARED.get_item(key)
    if hit is not None:
        return hit
    data = queries.module_bytes(conn, version_id)  # UnknownVersionError for an unknown id
    if not data:
        raise ModuleBytesMissingError(
            f"the module bytes of version {version_id} are not in the KB (re-ingest the release"
            " to see its code)"
        )
    parsed = _parsed(data)
    rows: dict[int, tuple] = {}
    functions = dict(parsed.names.functions)
    for idx, sid, imported, mod, fld, name, prov in queries.function_identities(conn, version_id):
        rows[idx] = (sid, bool(imported), mod, fld, name, prov)
        if name:
            functions[idx] = name
    fields = StructFields(queries.structs(conn, version_id))
    global_names, data_labels = _data_names(conn, version_id)
    known = knowledge.code_knowledge(conn, version_id)
    typed = types_svc.code_types(conn, version_id, known, fields)  # KB types (issue 27) over `fields`
    names = Names(
        functions=functions,
        globals={**global_names, **parsed.names.globals, **knowledge.global_names(conn, version_id)},
        locals=knowledge.merged_locals(parsed.names.locals, known),
        field_hook=typed.hook if typed else None,
        data=data_labels,
        comments={i: k["comment"] for i, k in known.items() if k["comment"]},
        prototypes={i: k["prototype"]["text"] for i, k in known.items() if k["prototype"]},
        line_comments={i: k["lines"] for i, k in known.items() if k["lines"]},
    )
    lm = prepare((data, parsed.module), names)
    fields.lm = typed.lm = lm
    cm = CodeModule(version_id, lm, parsed, rows)
    with _LOCK:
        _PREPARED.put(key, cm)
    return cm


def _data_names(conn: sqlite3.Connection, version_id: int) -> tuple[dict[int, str], list]:
    """Global names and data labels from the version's data model (``kbtool analyze``);
    empty without one."""
    if datamodel.model_info(conn, version_id) is None:
        return {}, []
    given = knowledge.data_names(conn)  # names people and agents gave (issue 27) win
    gl = {g["index"]: g["name"] for g in datamodel.globals_of(conn, version_id) if g["name"]}
    items, _total = datamodel.list_items(conn, version_id, offset=0, limit=MAX_DATA_LABELS)
    labels = [(i["address"], i["size"], given.get(i["data_id"]) or i["label"], i["text"]) for i in items
              if i["kind"] != "zero" or i["refs"] or i["data_id"] in given]
    return gl, labels


# C type of a struct field the lifter can render as a member: (analysis type, size) -> C
_FIELD_C = {("i32", 4): "int32_t", ("ptr", 4): "int32_t", ("i64", 8): "int64_t",
            ("f32", 4): "float", ("f64", 8): "double"}
_PARAM_BASE = re.compile(r"p(\d+)\Z")


class StructFields:
    """The lifter's field hook from ``kbtool analyze``'s recovered structs: a load or store
    at a constant offset from a struct parameter (``p<k>``, never reassigned: the analysis
    proves it) whose C type is the field's becomes ``((struct S *)(M + p0))->field_8``, with
    ``struct S`` declared before the function (packed, padded to the recorded offsets), so
    the C still compiles. Overlapping or narrow fields keep the plain typed access. Struct
    and field names are untrusted: sanitised as C identifiers, in the struct-tag namespace."""

    def __init__(self, structs: list[dict[str, Any]]) -> None:
        self.lm: LiftModule | None = None
        self.layouts: list[tuple[str, dict[int, tuple[str, str]], str]] = []
        self.members: dict[tuple[int, int], int] = {}  # (func, param) -> layout
        self._params: dict[int, dict[str, int]] = {}
        tags: set[str] = set()
        for st in structs:
            layout = self._layout(st, tags)
            if layout is None:
                continue
            for m in st.get("members") or []:
                base = _PARAM_BASE.match(str(m.get("base", ""))) if isinstance(m, dict) else None
                fi = m.get("func_index") if base else None
                if isinstance(fi, int):
                    self.members.setdefault((fi, int(base.group(1))), len(self.layouts))
            self.layouts.append(layout)

    def __bool__(self) -> bool:
        return bool(self.members)

    @staticmethod
    def _layout(st: dict[str, Any], tags: set[str]):
        tag = c_ident(str(st.get("name") or "struct"))
        if tag.startswith("struct_") and not tag[7:8].isdigit() and len(tag) > 7:
            tag = tag[7:]  # `struct f34_p0`, not `struct struct_f34_p0`
        if tag in C_KEYWORDS or tag in tags:
            tag = f"{tag}_{len(tags)}"
        fields: dict[int, tuple[str, str]] = {}
        parts: list[str] = []
        names: set[str] = set()
        end = 0
        for f in sorted(st.get("fields") or [], key=lambda f: (f.get("offset", -1), -f.get("size", 0))):
            off, size = f.get("offset"), f.get("size")
            ct = _FIELD_C.get((f.get("type"), size))
            if ct is None or not isinstance(off, int) or off < end or off > 1 << 16:
                continue  # narrow, unknown or overlapping the previous field
            name = c_ident(str(f.get("name") or f"field_{off}"))
            if name in C_KEYWORDS or name in names or name.startswith("_pad"):
                name = f"{name}_{off}"
            names.add(name)
            if off > end:
                parts.append(f"uint8_t _pad{end}[{off - end}];")
            parts.append(f"{ct} {name};")
            fields[off] = (ct, name)
            end = off + size
        if not fields:
            return None
        tags.add(tag)
        decl = (
            f"#ifndef KB_S_{tag}\n#define KB_S_{tag}\n"
            f"struct __attribute__((packed)) {tag} {{ {' '.join(parts)} }};\n#endif"
        )
        return tag, fields, decl

    def hook(self, func_index: int, base: str, offset: int, ctype: str):
        if self.lm is None:
            return None
        params = self._params.get(func_index)
        if params is None:
            try:
                params = {n: k for k, n in enumerate(param_c_names(self.lm, func_index))}
            except (IndexError, ValueError):
                params = {}
            self._params[func_index] = params
        k = params.get(base)
        li = self.members.get((func_index, k)) if k is not None else None
        if li is None:
            return None
        tag, fields, decl = self.layouts[li]
        f = fields.get(offset)
        if f is None or f[0] != ctype:
            return None
        return f"((struct {tag} *)(M + {base}))->{f[1]}", f"S_{tag}", decl


def _one_line(text: object) -> str:
    from kbtool.textutil import printable

    return printable(text)


# ---------------------------------------------------------------- disassembly


HUGE_INSTRUCTIONS = 20_000  # a body this long shows its first screen before the rest
FIRST_SCREEN = 2_000  # instructions in that first screen


def disassembly(
    conn: sqlite3.Connection, version_id: int, func_index: int, *, max_lines: int | None = None
) -> dict[str, Any]:
    """The contract's Disassembly object: ``mnemonics`` (raw wasm) and ``lifted_c``, plus
    ``version_id``, ``func_index``, ``stable_id``, ``name``, ``provenance``, ``type``,
    ``truncated`` and ``reason`` (why the C is a placeholder, else null).

    ``max_lines``: disassemble at most that many instructions (the first screen of a huge
    function, in bounded time and memory); ``partial`` is then true when more remain and
    ``instructions`` says how many there are. A partial answer is not cached."""
    cm = code_module(conn, version_id)
    sid, _imp, _mod, _fld, name, prov = cm.check(func_index)
    key = (id(cm), func_index)
    with _LOCK:
        hit = _RESULTS.get_item(key)
    if hit is not None and hit[0] is cm:
        return dict(hit[1])
    total = body_instructions(conn, version_id, func_index) if max_lines is not None else None
    partial = max_lines is not None and total is not None and total > max_lines
    try:
        mnemonics = (disassemble_function(cm.lm, func_index, max_lines=max_lines) if partial
                     else disassemble_function(cm.lm, func_index))
    except WasmFormatError as exc:
        mnemonics = f";; kbtool: cannot disassemble this body: {_one_line(exc)}\n"
    res = lift_function(cm.lm, func_index)
    out = {
        "mnemonics": mnemonics,
        "lifted_c": annotate_c(res.text, func_index, cm.lm.names),
        "version_id": version_id,
        "func_index": func_index,
        "stable_id": sid,
        "name": name or cm.lm.names.functions.get(func_index),
        "provenance": prov,
        "type": cm.lm.module.func_type(func_index).text(),
        "truncated": bool(res.truncated),
        "reason": res.reason or None,
        "call_lines": call_lines(cm, mnemonics),
        # comments, prototype, line comments, local names with provenance (issue 27)
        "knowledge": knowledge.function_knowledge(conn, sid, version_id) if sid else None,
        "partial": partial,
    }
    if total is not None:
        out["instructions"] = total
    if not partial:
        with _LOCK:
            _RESULTS.put(key, (cm, out))
    return dict(out)


def body_instructions(conn: sqlite3.Connection, version_id: int, func_index: int) -> int | None:
    """Instructions in a defined body (stored at ingest), or None when unknown."""
    try:
        n = queries.get_function(conn, version_id, func_index).get("instr_count")
    except KBError:
        return None
    return n if isinstance(n, int) else None


def is_cached(conn: sqlite3.Connection, version_id: int) -> bool:
    """Whether the version is prepared for code views in this process (no work to wait for)."""
    key = (_db_file(conn), version_id, queries.change_token(conn))
    with _LOCK:
        return key in _PREPARED


def code_window(
    conn: sqlite3.Connection,
    version_id: int,
    func_index: int,
    *,
    kind: str = "wasm",
    offset: int = 0,
    limit: int = 200,
) -> dict[str, Any]:
    """A window of one function's code: lines ``offset..offset+limit`` of its disassembly
    (``kind="wasm"``) or lifted C (``"c"``), as ``{kind, lines, offset, limit, total,
    next_offset, version_id, func_index}`` (``next_offset`` null at the end). The disassembly
    of a window near the top decodes only the instructions up to it (a huge function's first
    screen costs what a small one costs); the C is lifted whole (and cached)."""
    if kind not in ("wasm", "c"):
        raise ValueError(f"kind must be wasm or c, not {_one_line(kind)[:20]}")
    offset, limit = max(0, offset), max(1, min(limit, 20_000))
    cm = code_module(conn, version_id)
    cm.check(func_index)
    with _LOCK:
        hit = _RESULTS.get_item((id(cm), func_index))
    if kind == "c" or (hit is not None and hit[0] is cm):
        d = disassembly(conn, version_id, func_index)
        lines = (d["lifted_c"] if kind == "c" else d["mnemonics"]).splitlines()
        total = len(lines)
        window = lines[offset: offset + limit]
    else:
        total_instr = body_instructions(conn, version_id, func_index) or 0
        want = offset + limit
        try:
            text = disassemble_function(cm.lm, func_index, max_lines=want)
        except WasmFormatError as exc:
            text = f";; kbtool: cannot disassemble this body: {_one_line(exc)}\n"
        lines = text.splitlines()
        if total_instr > want and lines and lines[-1].startswith(" ;; ... truncated after"):
            lines.pop()  # the window's own cut, not the function's
            head = len(lines) - want  # header, comment and locals lines above the code
            total = head + total_instr
        else:
            total = len(lines)
        window = lines[offset: offset + limit]
    end = offset + len(window)
    return {"kind": kind, "lines": window, "offset": offset, "limit": limit, "total": total,
            "next_offset": end if end < total else None, "version_id": version_id,
            "func_index": func_index}


def module_c(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """The whole version lifted to C with the KB's names: a header comment, then every
    defined function in index order (one chunk each). The text compiles as one file with
    ``gcc -fsyntax-only -include prelude.h``. ``workers`` processes lift it (default: every
    usable core); ``progress(done, total)`` is called as functions come back."""
    return _whole_module(conn, version_id, "c", workers, progress)


def module_listing(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """The whole version's disassembly with the KB's names, objdump-like: a header line,
    then every defined function's listing in index order (one chunk each); as
    :func:`module_c` otherwise."""
    return _whole_module(conn, version_id, "listing", workers, progress)


def _whole_module(
    conn: sqlite3.Connection,
    version_id: int,
    kind: str,
    workers: int | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[str]:
    cm = code_module(conn, version_id)
    label = _one_line(queries.get_version(conn, version_id).get("label") or "")
    m = cm.lm.module
    total = m.num_functions - m.num_func_imports
    if kind == "c":
        yield (
            f"/* kbtool: version {version_id} ({label.replace('*/', '* /')}), {total} functions"
            " lifted to C with the KB's names.\n"
            "   Check: gcc -fsyntax-only -include prelude.h FILE"
            " (prelude.h: python -c 'import kbtool.lift as l; print(l.prelude_path())') */\n\n"
        )
        texts = (annotate_c(res.text, res.func_index, cm.lm.names)
                 for res in lift_module(cm.lm, workers=workers))
    else:
        yield f";; kbtool: version {version_id} ({label}), {total} functions, KB names\n\n"
        texts = disassemble_module(cm.lm, workers=workers)
    for done, text in enumerate(texts, 1):
        if progress is not None:
            progress(done, total)
        yield text + "\n"


_CALL = re.compile(
    r"^ [0-9a-f]+: +(?:call|return_call|ref\.func) (\$.*?|func\[(\d+)\] <[^>]*>)(?:  ;; .*)?$"
)


def call_lines(cm: CodeModule, mnemonics: str) -> list[list[int]]:
    """``[[line, callee index], ...]`` (1-based lines of the listing that call or reference a
    function), so a front end can make those lines links."""
    if cm.display_index is None:
        inverse: dict[str, int] = {}
        for i in range(cm.num_functions):
            name = cm.lm.func_display(i)
            if name:
                inverse.setdefault("$" + name, i)
        cm.display_index = inverse
    out = []
    for n, line in enumerate(mnemonics.splitlines(), 1):
        if "call" not in line and "ref.func" not in line:
            continue
        m = _CALL.match(line)
        if m is None:
            continue
        idx = int(m.group(2)) if m.group(2) is not None else cm.display_index.get(m.group(1))
        if idx is not None:
            out.append([n, idx])
    return out


# ---------------------------------------------------------------- call graph


def callgraph(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    """The contract's Call graph object for a version.

    ``nodes``: ``{index, stable_id, name, status, provenance, imported, in_table}`` with
    ``status`` ``named`` (the KB has a name; ``provenance`` says whose), ``unnamed`` or
    ``import``; ``edges``: ``{caller, callee, kind, count}`` with ``kind`` ``direct``,
    ``ref`` (``ref.func``) or ``indirect`` (a ``call_indirect`` candidate, with
    ``candidates`` = the candidate set size); ``indirect`` and ``candidates``: the
    call_indirect sites whose candidate sets are too large to expand (see
    :func:`kbtool.lift.build_callgraph`)."""
    cm = code_module(conn, version_id)
    if cm.graph is None:
        base = cm.parsed.get_graph()  # structure: once per module, whatever the names
        names = cm.lm.names.functions
        nodes = []
        for node in base["nodes"]:
            i = node["index"]
            r = cm.rows.get(i)
            named = r is not None and bool(r[4])
            status = (
                "import"
                if (r[1] if r is not None else node["imported"])
                else ("named" if named else "unnamed")
            )
            nodes.append(
                dict(
                    node,
                    stable_id=r[0] if r is not None else None,
                    name=names.get(i),
                    status=status,
                    provenance=r[5] if named else None,
                )
            )
        cm.graph = {**base, "nodes": nodes, "version_id": version_id}
    return cm.graph


def neighbours(conn: sqlite3.Connection, version_id: int, func_index: int) -> dict[str, list[dict]]:
    """Direct callers and callees of one function: ``{callers, callees}``, each ``[{index,
    stable_id, name, status, provenance, imported, in_table, kind}]`` in index order.

    Per function, never a whole-module pass: direct calls come from the call edges ingest
    stored; ``ref.func`` edges from this body (callees) and from the bodies holding
    ``ref.func <this index>`` (callers: the code bytes are searched for the instruction's
    encoding, each hit confirmed by decoding its body). Once the whole call graph was built
    in this process (``callgraph``), it answers instead: the same edges."""
    cm = code_module(conn, version_id)
    if cm.graph is not None:
        return _neighbours_from_graph(cm.graph, func_index)
    cm.check(func_index)
    callees = {c["index"]: "direct" for c in queries.callees(conn, version_id, func_index)}
    callers = {c["index"]: "direct" for c in queries.callers(conn, version_id, func_index)}
    for i in sorted(_body_refs(cm, func_index)):
        callees.setdefault(i, "ref")
    for i in sorted(_ref_holders(cm, func_index)):
        callers.setdefault(i, "ref")

    def entries(found: dict[int, str]) -> list[dict]:
        return [dict(_node(cm, i), kind=k) for i, k in sorted(found.items())]

    return {"callers": entries(callers), "callees": entries(callees)}


def _neighbours_from_graph(graph: dict, func_index: int) -> dict[str, list[dict]]:
    nodes = {n["index"]: n for n in graph["nodes"]}
    callers: dict[int, str] = {}
    callees: dict[int, str] = {}
    for e in graph["edges"]:
        if e["kind"] == "indirect":
            continue
        if e["callee"] == func_index:
            callers.setdefault(e["caller"], e["kind"])
        if e["caller"] == func_index:
            callees.setdefault(e["callee"], e["kind"])

    def entries(found: dict[int, str]) -> list[dict]:
        return [dict(nodes.get(i, {"index": i}), kind=k) for i, k in sorted(found.items())]

    return {"callers": entries(callers), "callees": entries(callees)}


def _in_table(cm: CodeModule) -> set[int]:
    found = cm.parsed.in_table
    if found is None:
        m = cm.lm.module
        found = {fi for el in m.elements if el.mode != "declarative" for fi in el.func_indices
                 if fi is not None and 0 <= fi < m.num_functions}
        cm.parsed.in_table = found
    return found


def _node(cm: CodeModule, i: int) -> dict[str, Any]:
    """One call-graph node (the shape of :func:`callgraph`'s nodes) from the prepared module."""
    r = cm.rows.get(i)
    m = cm.lm.module
    imported = bool(r[1]) if r is not None else i < m.num_func_imports
    named = r is not None and bool(r[4])
    name = cm.lm.names.functions.get(i)
    return {
        "index": i,
        "stable_id": r[0] if r is not None else None,
        "name": display_name(name) if name else None,
        "status": "import" if imported else ("named" if named else "unnamed"),
        "imported": imported,
        "in_table": i in _in_table(cm),
        "provenance": r[5] if named else None,
    }


def _body_refs(cm: CodeModule, func_index: int) -> set[int]:
    """``ref.func`` targets in one defined body (cached per parsed module)."""
    cache = cm.parsed.body_refs
    hit = cache.get(func_index)
    if hit is not None:
        return hit
    m = cm.lm.module
    k = func_index - m.num_func_imports
    out: set[int] = set()
    if 0 <= k < len(m.code) and cm.lm.data.find(b"\xd2", *m.code[k]) >= 0:  # else: no ref.func
        start, end = m.code[k]
        data = cm.lm.data
        try:
            _decls, p = read_local_decls(data, start, end)
            while p < end:
                op, p, imms = decode_one(data, p, end)
                if KIND[op] == K_REF_FUNC:
                    out.add(imms[0])
        except WasmFormatError:
            pass
    cache[func_index] = out
    return out


def _ref_holders(cm: CodeModule, func_index: int) -> set[int]:
    """Defined functions whose body holds ``ref.func func_index``: a byte search for the
    instruction's encoding (0xd2 + the index as LEB128) over the code, each candidate body
    decoded to confirm (a hit inside another instruction's immediates is not a reference)."""
    m = cm.lm.module
    if not m.code:
        return set()
    data = cm.lm.data
    pattern = b"\xd2" + encode_uleb(func_index)
    starts = cm.parsed.code_starts
    if starts is None:
        starts = cm.parsed.code_starts = [s for s, _e in m.code]
    lo, hi = m.code[0][0], m.code[-1][1]
    seen: set[int] = set()
    out: set[int] = set()
    p = data.find(pattern, lo, hi)
    while p >= 0:
        k = bisect.bisect_right(starts, p) - 1
        if k >= 0 and p < m.code[k][1]:
            fi = m.num_func_imports + k
            if fi not in seen:
                seen.add(fi)
                if func_index in _body_refs(cm, fi):
                    out.add(fi)
            p = data.find(pattern, max(p + 1, m.code[k][1]), hi)  # the next body
        else:
            p = data.find(pattern, p + 1, hi)
    return out


# ---------------------------------------------------------------- per-function diff

# one disassembly line: " 011a39:   global.get $__stack_pointer  ;; note"
_LINE = re.compile(r"^ ([0-9a-f]+): ( *)(\S+) ?(.*)$")
_NUMBER = re.compile(r"-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)|nan|[-+]?inf")
_FUNC_REF = re.compile(r"\$\S+|func\[\d+\] <[^>]*>")
_TOKEN = re.compile(r"func\[\d+\] <[^>]*>|;;.*|\S+")


def _kind(mnemonic: str) -> str:
    if mnemonic in ("call", "return_call", "ref.func"):
        return "callee"
    if mnemonic.endswith(".const"):
        return "const"
    if ".load" in mnemonic or ".store" in mnemonic or ".atomic." in mnemonic:
        return "offset"
    if mnemonic.startswith("global."):
        return "global"
    if mnemonic.startswith("call_indirect") or mnemonic.startswith("return_call_indirect"):
        return "type"
    return "operand"


@dataclass
class _Instr:
    text: str  # the line without its file offset
    key: str  # indent + mnemonic + operand shape (numbers and names normalised)
    mnemonic: str
    operands: str  # immediates (without the note)
    note: str


def _parse_lines(mnemonics: str) -> list[_Instr]:
    out = []
    for line in mnemonics.splitlines():
        m = _LINE.match(line)
        if m is None:  # header, locals, notes: compared as they are
            out.append(_Instr(line, "\0" + line, "", "", ""))
            continue
        indent, mnemonic, rest = m.group(2), m.group(3), m.group(4)
        cut = (" " + rest).find(" ;; ")
        operands, note = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
        shape = (
            "@" if _kind(mnemonic) == "callee" else _NUMBER.sub("#", _FUNC_REF.sub("@", operands))
        )
        out.append(
            _Instr(
                indent + mnemonic + (" " + rest if rest else ""),
                f"{indent}{mnemonic} {shape}",
                mnemonic,
                operands.strip(),
                note,
            )
        )
    return out


def _changed_spans(a: _Instr, b: _Instr) -> tuple[list[list[int]], list[list[int]]]:
    """Character spans of the operand tokens that differ, on each side."""

    def spans(x: _Instr) -> list[tuple[int, int, str]]:
        head = len(x.text) - len(x.text.lstrip(" ")) + len(x.mnemonic)
        # a callee reference may contain spaces ("func[3] <unnamed>"): one token each
        return [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(x.text, head)]

    if _kind(a.mnemonic) == "callee":  # the whole reference (a name may hold spaces)

        def whole(x: _Instr) -> list[list[int]]:
            start = len(x.text) - len(x.text.lstrip(" ")) + len(x.mnemonic) + 1
            return [[start, start + len(x.operands)]]

        return whole(a), whole(b)
    ta, tb = spans(a), spans(b)
    sa: list[list[int]] = []
    sb: list[list[int]] = []
    for i in range(max(len(ta), len(tb))):
        x = ta[i] if i < len(ta) else None
        y = tb[i] if i < len(tb) else None
        if x is not None and y is not None and x[2] == y[2]:
            continue
        if x is not None:
            sa.append([x[0], x[1]])
        if y is not None:
            sb.append([y[0], y[1]])
    return sa, sb


_LOCAL_OPS = ("local.get", "local.set", "local.tee")


def _local_map(la: list[_Instr], lb: list[_Instr], blocks: list) -> dict[str, str]:
    """Old local -> new local, matched by use: every pair of aligned ``local.*`` lines votes
    for its two numbers; the strongest votes win, one to one (a renumbered local, label or
    temporary then compares equal, so only real differences show)."""
    votes: dict[tuple[str, str], int] = {}
    for tag, i1, i2, j1, j2 in blocks:
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            x, y = la[i], lb[j]
            if x.mnemonic in _LOCAL_OPS and x.mnemonic == y.mnemonic:
                k = (x.operands, y.operands)
                votes[k] = votes.get(k, 0) + 1
    out: dict[str, str] = {}
    taken: set[str] = set()
    for (a, b), _n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if a not in out and b not in taken:
            out[a] = b
            taken.add(b)
    return out


_OPENERS = ("block", "loop", "if", "try", "try_table")
_BRANCHES = ("br", "br_if", "br_table")
_CALLEE_IDX = re.compile(r"func\[(\d+)\]")


def _branch_targets(lines: list[_Instr]) -> dict[int, tuple[int, ...]]:
    """Line of each branch -> where each of its targets lands: a loop's own line, else the
    first line after the block's ``end`` that is not itself an ``end`` (leaving nested
    blocks that end together lands at the same place); -1 past the last line."""
    stack: list[int] = []
    ends: dict[int, int] = {}
    pending: list[tuple[int, list[int]]] = []
    for i, x in enumerate(lines):
        m = x.mnemonic
        if m in _OPENERS:
            stack.append(i)
        elif m == "end":
            if stack:
                ends[stack.pop()] = i
        elif m in _BRANCHES:
            try:
                depths = [int(t) for t in x.operands.split()]
            except ValueError:
                continue
            pending.append((i, [stack[-1 - d] if d < len(stack) else -1 for d in depths]))

    def land(op: int) -> int:
        if op < 0:
            return -1
        if lines[op].mnemonic == "loop":
            return op
        k = ends.get(op, len(lines)) + 1
        while k < len(lines) and lines[k].mnemonic == "end":
            k += 1
        return k if k < len(lines) else -1

    return {i: tuple(land(o) for o in ops) for i, ops in pending}


def _same_label(i: int, j: int, ta: dict, tb: dict, lmap_: dict[int, int]) -> bool:
    """Do branch lines ``i`` (old) and ``j`` (new) land at the same (aligned) lines?"""
    if i not in ta or j not in tb or len(ta[i]) != len(tb[j]):
        return False
    return all((x == -1 and y == -1) or (x >= 0 and lmap_.get(x) == y)
               for x, y in zip(ta[i], tb[j], strict=True))


def diff_lines(a_mnemonics: str, b_mnemonics: str, *, align: bool = True,
               same_callee: Callable[[int, int], bool] | None = None) -> dict[str, Any]:
    """Align two listings and mark what changed.

    Lines are aligned by difflib over a key with file offsets dropped and numbers and callee
    names normalised, so a changed constant, memory offset or callee keeps its line paired;
    paired lines whose operands differ are ``changed`` with ``kinds`` (``const``,
    ``offset``, ``callee``, ``global``, ``type``, ``operand``, ``string``) and the character
    spans of the differing tokens (``a_spans``/``b_spans``). Returns ``{rows, summary}``;
    a row is ``{op: equal|changed|replace|delete|insert, a, b, a_line, b_line, kinds,
    a_spans, b_spans}`` (``a_line``/``b_line``: 1-based line numbers in each listing).

    ``align`` (default): locals are matched between the two bodies by use first
    (:func:`_local_map`), so a line that differs only by a renumbered local is ``equal``
    (``summary["aligned"]`` counts them; ``summary["local_map"]`` is the mapping); lines are
    aligned whatever their nesting (a block wrapped around code does not make the code
    inside it a change; in functions over 4,000 lines, where difflib junks popular lines,
    the nesting-aware alignment is kept when it is shorter), branches are compared by where they land (a label depth that
    changed because a block was added around the branch is not a change: ``labels``), and
    with ``same_callee(old_index, new_index)`` (the pairing of the two versions) a call to
    the same function under a shifted index is not a change either (``callees``)."""
    la, lb = _parse_lines(a_mnemonics), _parse_lines(b_mnemonics)

    big = len(la) + len(lb) > 4000  # difflib junks popular lines there

    def opcodes(flat: bool) -> list:
        ka = [x.key.lstrip(" ") if flat else x.key for x in la]
        kb = [x.key.lstrip(" ") if flat else x.key for x in lb]
        return difflib.SequenceMatcher(None, ka, kb, autojunk=big).get_opcodes()

    def cost(ops: list) -> int:
        return sum(max(i2 - i1, j2 - j1) for t, i1, i2, j1, j2 in ops if t != "equal")

    blocks = opcodes(align)
    if align and big:  # with autojunk either key can align better: keep the shorter diff
        nested = opcodes(False)
        if cost(nested) < cost(blocks):
            blocks = nested
    lmap = _local_map(la, lb, blocks) if align else {}
    ta = tb_ = bmap = None
    if align:
        ta, tb_ = _branch_targets(la), _branch_targets(lb)
        bmap = {}  # aligned lines, old -> new
        for tag, i1, i2, j1, j2 in blocks:
            if tag == "equal":
                bmap.update(zip(range(i1, i2), range(j1, j2), strict=True))
    rows: list[dict[str, Any]] = []
    summary = {
        "equal": 0,
        "changed": 0,
        "deleted": 0,
        "inserted": 0,
        "const": 0,
        "offset": 0,
        "callee": 0,
        "global": 0,
        "type": 0,
        "operand": 0,
        "string": 0,
        "aligned": 0,
        "labels": 0,
        "callees": 0,
        "local_map": {a: b for a, b in lmap.items() if a != b},
    }

    def row(op: str, i: int | None, j: int | None, kinds=(), sa=(), sb=()) -> None:
        rows.append(
            {
                "op": op,
                "a": la[i].text if i is not None else None,
                "b": lb[j].text if j is not None else None,
                "a_line": None if i is None else i + 1,
                "b_line": None if j is None else j + 1,
                "kinds": list(kinds),
                "a_spans": list(sa),
                "b_spans": list(sb),
            }
        )

    for tag, i1, i2, j1, j2 in blocks:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                x, y = la[i], lb[j]
                if x.text == y.text or (align and x.text.lstrip(" ") == y.text.lstrip(" ")):
                    summary["equal"] += 1
                    row("equal", i, j)
                    continue
                if align and x.note == y.note and x.mnemonic == y.mnemonic:
                    if x.mnemonic in _BRANCHES and _same_label(i, j, ta, tb_, bmap):
                        summary["equal"] += 1
                        summary["labels"] += 1
                        row("equal", i, j)
                        continue
                    ca, cb = _CALLEE_IDX.match(x.operands), _CALLEE_IDX.match(y.operands)
                    if (same_callee is not None and _kind(x.mnemonic) == "callee" and ca and cb
                            and same_callee(int(ca.group(1)), int(cb.group(1)))):
                        summary["equal"] += 1
                        summary["callees"] += 1
                        row("equal", i, j)
                        continue
                if (x.mnemonic in _LOCAL_OPS and x.mnemonic == y.mnemonic and x.note == y.note
                        and lmap.get(x.operands) == y.operands):
                    summary["equal"] += 1
                    summary["aligned"] += 1
                    row("equal", i, j)
                    continue
                kinds = []
                if x.operands != y.operands:
                    kinds.append(_kind(x.mnemonic) if x.mnemonic else "operand")
                if x.note != y.note:
                    kinds.append("string")
                for k in kinds:
                    summary[k] += 1
                summary["changed"] += 1
                sa, sb = _changed_spans(x, y)
                row("changed", i, j, kinds, sa, sb)
            continue
        a_n, b_n = i2 - i1, j2 - j1
        paired = min(a_n, b_n) if tag == "replace" else 0
        for k in range(paired):
            summary["deleted"] += 1
            summary["inserted"] += 1
            row(
                "replace",
                i1 + k,
                j1 + k,
                (),
                [[0, len(la[i1 + k].text)]],
                [[0, len(lb[j1 + k].text)]],
            )
        for i in range(i1 + paired, i2):
            summary["deleted"] += 1
            row("delete", i, None, (), [[0, len(la[i].text)]])
        for j in range(j1 + paired, j2):
            summary["inserted"] += 1
            row("insert", None, j, (), (), [[0, len(lb[j].text)]])
    return {"rows": rows, "summary": summary}


def function_diff(
    conn: sqlite3.Connection,
    stable_id: str,
    from_version_id: int,
    to_version_id: int,
) -> dict[str, Any]:
    """One logical function in two versions: both sides' Disassembly objects (``from``,
    ``to``), the aligned listing diff (``rows``, ``summary``: see :func:`diff_lines`) and a
    unified diff of the lifted C (``c_diff``)."""
    queries.require_stable_id(conn, stable_id)
    where = {w["version_id"]: w["index"] for w in queries.functions_by_stable_id(conn, stable_id)}
    idx = []
    for vid in (from_version_id, to_version_id):
        queries.get_version(conn, vid)
        if vid not in where:
            raise UnknownFunctionError(
                f"function {stable_id} does not appear in version {vid}"
                f" (it appears in: {', '.join(str(v) for v in sorted(where)) or 'none'})"
            )
        idx.append(where[vid])
    return function_diff_at(conn, from_version_id, idx[0], to_version_id, idx[1])


def callee_pairing(conn: sqlite3.Connection, va: int, vb: int) -> Callable[[int, int], bool]:
    """``(old index, new index) -> same logical function?`` (by stable id; read on first use)."""
    ids: list[dict[int, str]] = []

    def same(i: int, j: int) -> bool:
        if not ids:
            for v in (va, vb):
                ids.append({r["index"]: r["stable_id"]
                            for r in queries.list_functions(conn, v, include_imports=True)})
        a = ids[0].get(i)
        return a is not None and a == ids[1].get(j)

    return same


def function_diff_at(
    conn: sqlite3.Connection,
    from_version_id: int,
    from_index: int,
    to_version_id: int,
    to_index: int,
) -> dict[str, Any]:
    """:func:`function_diff` for two functions given by index (their identities may differ)."""
    a = disassembly(conn, from_version_id, from_index)
    b = disassembly(conn, to_version_id, to_index)
    lines = diff_lines(a["mnemonics"], b["mnemonics"],
                       same_callee=callee_pairing(conn, from_version_id, to_version_id))
    c_diff = "".join(
        difflib.unified_diff(
            a["lifted_c"].splitlines(keepends=True),
            b["lifted_c"].splitlines(keepends=True),
            fromfile=f"v{from_version_id}/func[{from_index}].c",
            tofile=f"v{to_version_id}/func[{to_index}].c",
        )
    )
    return {
        "stable_id": b["stable_id"] or a["stable_id"],
        "from": a,
        "to": b,
        **lines,
        "c_diff": c_diff,
    }
