"""Data symbols and cross-references of a version (issue 26): build and store the data model
(:mod:`kbtool.analysis.datamodel`), and answer "who uses this" for functions, globals,
addresses and strings.

``build(conn, version_id, analysis, data)`` runs inside ingest (names from the binary) and
again inside ``kbtool analyze`` (with the recognizers' names); every read here works on the
stored model (no module pass per request). A version ingested by an older kbtool has none
until ``kbtool analyze`` builds it (the reads say so). Targets of :func:`xrefs`:

- a function: a name, ``#index`` or a stable id -> its callers (and, ``uses``, what it calls
  and the data and globals it touches);
- a global: ``g:NAME`` or ``g:INDEX``;
- an address: ``0x1234`` (or a decimal number) -> the item holding it;
- a string: ``"text`` (the item whose text equals it, else contains it) or a data label.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from kbtool.analysis.datamodel import (
    build_data_model,
    item_rows,
    memory_image,
    read_memory,
    ref_columns,
    role_labels,
)
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.kb import datamodel as dm_store
from kbtool.kb import datarefs, queries, store
from kbtool.kb.errors import KBError
from kbtool.textutil import LazyPattern
from kbtool.wasm import ModuleAnalysis
from kbtool.wasm.datamap import passive_addresses
from kbtool.wasm.facts import decode_workers, gc_paused
from kbtool.wasm.kept import keep_also

MAX_READ = 4096  # bytes read_memory answers at most
MAX_XREFS = 500  # references listed per answer (the total is always given)
ITEM_KINDS = (
    "cstring",
    "utf16",
    "gostring",
    "pointer_table",
    "funcptr_table",
    "numeric",
    "zero",
    "bss",
)
STRING_KINDS = ("cstring", "utf16", "gostring")
_HEX = LazyPattern(r"(0x[0-9a-f]+|\d+)\Z", re.IGNORECASE)
_GLOBAL = LazyPattern(r"g:(.+)\Z", re.IGNORECASE)


class DataError(KBError):
    """A data-model request that cannot be answered: bad target or range, no model yet."""


class DataNotFoundError(DataError):
    """Nothing there: no data model yet, a target that matches nothing, an address outside
    the data (a 404 on the web; a bad request is a plain :class:`DataError`)."""


# --------------------------------------------------------------------------- build


class Walked:
    """The data model's pure part for one module (:func:`prepare`): the walk, the passive
    segments' addresses and the initial memory image; ``seconds``/``cpu_seconds`` spent."""

    __slots__ = ("model", "passive", "base", "image", "seconds", "cpu_seconds", "refs_written")

    def __init__(self, model, passive, base, image, seconds: float, cpu_seconds: float):
        self.model, self.passive, self.base, self.image = model, passive, base, image
        self.seconds, self.cpu_seconds = seconds, cpu_seconds
        self.refs_written = False  # (:func:`write_refs`)


def write_refs(conn: sqlite3.Connection, version_id: int, walked: Walked) -> None:
    """The references of ``walked`` stored for ``version_id`` now (they need no stable id
    nor label: a later ingest writes them while its matcher runs); :func:`build` then
    writes the rest of the model."""
    t0, c0 = time.perf_counter(), time.process_time()
    # (the walk's list as it is: the writer leaves it unchanged)
    datarefs.write(conn, version_id, walked.model.ref_rows, ref_columns())
    walked.refs_written = True
    walked.seconds += time.perf_counter() - t0
    walked.cpu_seconds += time.process_time() - c0


def _is_go(analysis: ModuleAnalysis) -> bool:
    tc = (analysis.toolchain_version or "").lower()
    return tc.startswith("go") or any(
        f.import_module == "gojs" or (f.import_module or "").startswith("go")
        for f in analysis.functions
        if f.imported
    )


def prepare(
    analysis: ModuleAnalysis,
    data: bytes,
    *,
    go: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> Walked:
    """The part of :func:`build` that reads only the module (no KB): ingest runs it while
    the matcher works in another process. ``workers``: the walk's processes (default
    :func:`kbtool.wasm.facts.decode_workers`; the same model either way)."""
    t0, c0 = time.perf_counter(), time.process_time()
    if go is None:
        go = _is_go(analysis)
    with gc_paused():  # hundreds of thousands of small objects, no cycles (as the decoder)
        sp = stack_pointer_global(analysis, data) if not go else None
        model = build_data_model(
            analysis,
            data,
            stack_pointer=sp,
            go=go,
            progress=progress,
            workers=decode_workers(len(data)) if workers is None else workers,
        )  # as the decoder: 2 for big modules
        passive = passive_addresses(data, analysis.module)
        # one copy of the initial memory for every item
        base, image = memory_image(analysis, passive=passive)
    return Walked(model, passive, base, image, time.perf_counter() - t0, time.process_time() - c0)


def build(
    conn: sqlite3.Connection,
    version_id: int,
    analysis: ModuleAnalysis,
    data: bytes,
    *,
    go: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    walked: Walked | None = None,
    names: dict[int, str] | None = None,
) -> dict[str, Any]:
    """Build and store the data model of a version (in the caller's transaction); return
    its counts, ``seconds`` and ``cpu_seconds`` (the build and its writes). ``walked``:
    :func:`prepare`'s answer for this module when the caller already has it. ``names``:
    the functions' names the labels read (:func:`role_labels`), when the caller knows
    them (None: the version's names in the KB, :func:`kbtool.kb.queries.function_names`)."""
    if walked is None:
        walked = prepare(analysis, data, go=go, progress=progress)
    t0, c0 = time.perf_counter(), time.process_time()
    with gc_paused():  # hundreds of thousands of small objects, no cycles (as the decoder)
        out = _build(conn, version_id, analysis, walked, names)
    out["seconds"] = round(walked.seconds + time.perf_counter() - t0, 3)
    out["cpu_seconds"] = round(walked.cpu_seconds + time.process_time() - c0, 3)
    return out


def _build(
    conn: sqlite3.Connection,
    version_id: int,
    analysis: ModuleAnalysis,
    walked: Walked,
    names: dict[int, str] | None = None,
) -> dict[str, Any]:
    model, passive, base, image = walked.model, walked.passive, walked.base, walked.image
    # labels from the functions the KB knows around an item (errno, malloc state, tables)
    if names is None:
        names = queries.function_names(conn, version_id)
    role_labels(model, analysis, names)
    rows = item_rows(
        model.items, image, base, lambda a, n: read_memory(analysis, a, n, passive), store.NULL
    )  # the stored rows with their data ids, one compiled pass (with the data walk)
    globals_ = [
        {
            "index": g.index,
            "type": g.type,
            "mutable": g.mutable,
            "initial": g.initial,
            "imported": g.imported,
            "import_name": g.import_name,
            "exports": g.exports,
            "role": g.role,
            "name": g.name,
            "confidence": g.confidence,
            "reads": g.reads,
            "writes": g.writes,
        }
        for g in model.globals
    ]
    dm_store.replace_data_model(
        conn,
        version_id,
        globals_=globals_,
        item_rows=rows,
        refs=model.ref_rows,
        data_start=model.data_start,
        data_end=model.data_end,
        truncated=model.truncated,
        ref_columns=ref_columns(),  # (the data walk's compiled packing, when built)
        refs_written=walked.refs_written,
    )
    keep_also(rows, globals_)  # (a process ending after: never freed)
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r[2]] = kinds.get(r[2], 0) + 1
    return {
        "items": len(rows),
        "items_by_kind": dict(sorted(kinds.items())),
        "globals": len(globals_),
        "named_globals": sum(1 for g in globals_ if g["name"]),
        "refs": len(model.ref_rows),
        "truncated": model.truncated,
    }


# --------------------------------------------------------------------------- reads


def _require_model(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    queries.get_version(conn, version_id)  # UnknownVersionError for an unknown id
    info = dm_store.model_row(conn, version_id)  # (no counts: every read passes here)
    if info is None:
        raise DataNotFoundError(
            f"version {version_id} has no data model yet (ingested before ingest built one):"
            f" run `kbtool analyze {version_id}`"
        )
    return info


def status(conn: sqlite3.Connection, version_id: int) -> dict[str, Any] | None:
    queries.get_version(conn, version_id)
    return dm_store.model_info(conn, version_id)


def globals_of(conn: sqlite3.Connection, version_id: int) -> list[dict[str, Any]]:
    """The version's globals with roles, names and use counts."""
    from kbtool.services import knowledge  # (the reads only: an ingest's build needs none)

    _require_model(conn, version_id)
    return knowledge.overlay_globals(conn, list(dm_store.globals_of(conn, version_id)))


def list_data(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    kind: str | None = None,
    search: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> dict[str, Any]:
    """A page of data items: ``{items, total, offset, next_offset}``. ``kind``: one item
    kind, or ``string`` for every string kind."""
    from kbtool.services import knowledge  # (the reads only: an ingest's build needs none)

    _require_model(conn, version_id)
    kinds = None
    if kind:
        if kind in ("string", "strings"):
            kinds = STRING_KINDS
        elif kind in ITEM_KINDS:
            kinds = (kind,)
        else:
            raise DataError(f"unknown kind {kind[:40]!r}: one of string, {', '.join(ITEM_KINDS)}")
    if offset < 0 or limit < 1:
        raise DataError(f"bad page: offset {offset}, limit {limit}")
    items, total = dm_store.list_items(
        conn, version_id, kinds=kinds, search=search, offset=offset, limit=limit
    )
    nxt = offset + len(items)
    items = knowledge.overlay_items(conn, list(items))  # names given in the KB (issue 27)
    return {
        "items": items,
        "total": total,
        "offset": offset,
        "next_offset": nxt if nxt < total else None,
    }


def strings(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    search: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> dict[str, Any]:
    return list_data(conn, version_id, kind="string", search=search, offset=offset, limit=limit)


def memory(conn: sqlite3.Connection, version_id: int, address: int, length: int) -> dict[str, Any]:
    """``length`` bytes of the initial memory at ``address`` (at most MAX_READ), as hex and
    ASCII rows of 16 bytes, with the item that holds ``address``."""
    if address < 0 or length <= 0:
        raise DataError(f"bad range: address {address}, length {length} (both must be positive)")
    if length > MAX_READ:
        raise DataError(f"length {length} is over the bound of {MAX_READ} bytes")
    info = _require_model(conn, version_id)
    if address >= info["data_end"] or address + length <= info["data_start"]:
        raise DataNotFoundError(
            f"address 0x{address:x} is outside the initialised data"
            f" (0x{info['data_start']:x}..0x{info['data_end']:x})"
        )
    data = queries.module_bytes(conn, version_id)
    if data is None:
        raise DataNotFoundError(f"version {version_id} has no stored module bytes")
    from kbtool.wasm import parse_module  # the segments only (no code decode)

    module = parse_module(data)
    raw = _read_segments(module, address, length, passive_addresses(data, module))
    rows = []
    for k in range(0, len(raw), 16):
        chunk = raw[k : k + 16]
        rows.append(
            {
                "address": address + k,
                "hex": " ".join(f"{b:02x}" for b in chunk),
                "ascii": "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk),
            }
        )
    return {
        "address": address,
        "length": len(raw),
        "rows": rows,
        "item": dm_store.item_at(conn, version_id, address),
    }


def _read_segments(module: Any, address: int, length: int, passive: dict[int, int]) -> bytes:
    out = bytearray(length)
    for k, s in enumerate(module.data_segments):
        if s.memory_index != 0:
            continue
        if s.passive:
            if k not in passive:
                continue
            base = int(passive[k])
        elif s.offset is None:
            continue
        else:
            base = int(s.offset)
        lo, hi = max(base, address), min(base + len(s.data), address + length)
        if lo < hi:
            out[lo - address : hi - address] = s.data[lo - base : hi - base]
    return bytes(out)


def _func_entry(names: dict[int, str], index: int) -> dict[str, Any]:
    return {"index": index, "name": names.get(index)}


def _resolve_function(conn: sqlite3.Connection, version_id: int, text: str) -> int | None:
    t = text.strip()
    if t.startswith("#") and t[1:].isdigit():
        return int(t[1:])
    if re.fullmatch(r"[0-9a-f]{16}", t):
        for f in queries.functions_by_stable_id(conn, t):
            if f.get("version_id") == version_id:
                return int(f["index"])
    return dm_store.function_by_name(conn, version_id, t)


def xrefs(
    conn: sqlite3.Connection,
    version_id: int,
    target: str,
    *,
    limit: int = MAX_XREFS,
    offset: int = 0,
) -> dict[str, Any]:
    """Cross-references of ``target`` (see the module docstring):
    ``{target: {kind, ...}, refs: [{func_index, name, offset, kind, ...}], total, offset,
    uses?}``; ``refs`` is the page ``[offset, offset + limit)`` of the ``total``."""
    target = (target or "").strip()
    if not target:
        raise DataError('empty target: give a function, g:GLOBAL, 0xADDRESS or "text')
    if len(target) > 512:
        raise DataError("target longer than 512 characters")
    if offset < 0 or limit < 1:
        raise DataError(f"bad page: offset {offset}, limit {limit}")
    _require_model(conn, version_id)
    res = _xrefs(conn, version_id, target, limit, offset)
    res["offset"] = offset
    return res


def _xrefs(
    conn: sqlite3.Connection, version_id: int, target: str, limit: int, offset: int
) -> dict[str, Any]:
    from kbtool.services import knowledge  # (the reads only: an ingest's build needs none)

    def entries(refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        names = dm_store.function_names_for(conn, version_id, {r["func_index"] for r in refs})
        return [dict(r, name=names.get(r["func_index"])) for r in refs]

    m = _GLOBAL.match(target)
    if m:
        key = m.group(1)
        gl = knowledge.overlay_globals(conn, list(dm_store.globals_of(conn, version_id)))
        g = next(
            (
                x
                for x in gl
                if (key.isdigit() and x["index"] == int(key))
                or key in (x["name"], x.get("analysis_name"))
            ),
            None,
        )
        if g is None:
            raise DataNotFoundError(
                f"no global {key!r} in version {version_id} (see `kbtool globals {version_id}`)"
            )
        refs, total = dm_store.refs_to(
            conn, version_id, "global", g["index"], limit=limit, offset=offset
        )
        return {
            "target": {"kind": "global", **knowledge.overlay_globals(conn, [dict(g)])[0]},
            "refs": entries(refs),
            "total": total,
        }
    if target.startswith('"'):
        text = target[1:].rstrip('"')
        found = dm_store.items_by_text(conn, version_id, text, limit=2)
        if not found:
            raise DataNotFoundError(f"no string {text[:60]!r} in version {version_id}")
        return _item_xrefs(conn, version_id, found[0], entries, limit, offset)
    if _HEX.match(target):
        address = int(target, 0)
        it = dm_store.item_at(conn, version_id, address)
        if it is None:
            raise DataNotFoundError(f"no data item at 0x{address:x} in version {version_id}")
        return _item_xrefs(conn, version_id, it, entries, limit, offset)
    it = dm_store.item_by_label(conn, version_id, target) or knowledge.item_by_given_name(
        conn, version_id, target
    )
    if it is not None:
        return _item_xrefs(conn, version_id, it, entries, limit, offset)
    idx = _resolve_function(conn, version_id, target)
    if idx is None or queries.function_at_index(conn, version_id, idx) is None:
        raise DataNotFoundError(
            f"{target[:60]!r} matches nothing in version {version_id}: give a function name,"
            ' #index or stable id, g:GLOBAL, 0xADDRESS, a data label or "text'
        )
    callers = queries.callers(conn, version_id, idx)
    uses = dm_store.refs_from(conn, version_id, idx, limit=limit)
    gnames = {g["index"]: g["name"] for g in dm_store.globals_of(conn, version_id) if g["name"]}
    name = dm_store.function_names_for(conn, version_id, {idx}).get(idx)
    return {
        "target": {"kind": "function", "index": idx, "name": name},
        "refs": [
            {"func_index": c["index"], "name": c.get("name"), "kind": "call", "offset": None}
            for c in callers
        ][offset : offset + limit],
        "total": len(callers),
        "uses": {
            "calls": queries.callees(conn, version_id, idx),
            "data": [_use(conn, version_id, r, gnames) for r in uses],
        },
    }


def _use(
    conn: sqlite3.Connection, version_id: int, r: dict[str, Any], gnames: dict[int, str]
) -> dict[str, Any]:
    out = dict(r)
    if r["target_kind"] == "global" and r["target"] in gnames:
        out["label"] = gnames[r["target"]]
    if r["target_kind"] == "data":
        it = dm_store.item_at(conn, version_id, r["target"])
        if it is not None:
            out["label"], out["text"] = it["label"], it["text"]
    return out


def _item_xrefs(
    conn: sqlite3.Connection,
    version_id: int,
    it: dict[str, Any],
    entries: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    limit: int,
    offset: int,
) -> dict[str, Any]:
    from kbtool.services import knowledge  # (the reads only: an ingest's build needs none)

    refs, total = dm_store.refs_to(
        conn,
        version_id,
        "data",
        it["address"],
        it["address"] + max(it["size"], 1),
        limit=limit,
        offset=offset,
    )
    return {
        "target": {"kind": "data", **knowledge.overlay_items(conn, [dict(it)])[0]},
        "refs": entries(refs),
        "total": total,
    }


# --------------------------------------------------------------------------- code lines

_C_WORDS = frozenset(
    {
        "if",
        "else",
        "while",
        "for",
        "do",
        "break",
        "continue",
        "goto",
        "switch",
        "case",
        "default",
        "return",
        "sizeof",
        "void",
        "char",
        "short",
        "int",
        "long",
        "float",
        "double",
        "unsigned",
        "signed",
        "const",
        "static",
        "extern",
        "enum",
        "struct",
        "union",
        "typedef",
        "M",
        "define",
        "ifndef",
        "endif",
        "include",
        "bool",
        "true",
        "false",
        "NULL",
    }
)
_C_IDENT = LazyPattern(r"[A-Za-z_]\w*")
_C_LOCAL = LazyPattern(r"(?:[plL]\d+|.*_t|KB_D_\w*|f32|f64|i32|i64|v128)\Z")
_C_COMMENT = LazyPattern(r"/\*.*?\*/")
_NOTE_STRING = LazyPattern(r'"((?:[^"\\]|\\.)*)"')
_FN_INDEX = LazyPattern(r"(?:f|func_?)(\d+)\Z|.*_(\d+)\Z")


def line_targets(line: str, mode: str, *, call_target: int | None = None) -> list[str]:
    """What one line of lifted or cleaned C refers to (the identifiers a reader points at),
    most specific first, as :func:`xrefs` targets: a data label, a global, a string in a
    comment, a called function. ``mode`` is ``c``; raw wasm reads the instruction's record
    instead (:func:`kbtool.services.code.instr_targets`). The caller tries each target until
    one resolves."""
    out: list[str] = []

    def add(t: str) -> None:
        if t and t not in out:
            out.append(t)

    if call_target is not None:
        add(f"#{call_target}")
    if mode != "c":  # raw wasm: the instruction's record (services.code.instr_targets)
        raise ValueError(f"line_targets reads C lines only, not {mode!r}")
    strings = [_unescape(x) for x in _NOTE_STRING.findall(" ".join(_C_COMMENT.findall(line)))]
    code = _C_COMMENT.sub(" ", line)
    calls: list[str] = []
    for m in _C_IDENT.finditer(code):
        word = m.group(0)
        if word in _C_WORDS or _C_LOCAL.match(word):
            continue
        if code[m.end() :].lstrip().startswith("("):
            calls.append(word)
            continue
        add(word)  # a data label, else a function name
        add("g:" + word)
    for text in strings:
        add('"' + text)
    for word in calls:
        add(word)
        n = _FN_INDEX.match(word)
        if n:
            add("#" + (n.group(1) or n.group(2)))
    return out


def _unescape(text: str) -> str:
    try:
        import json

        return str(json.loads('"' + text + '"'))
    except ValueError:
        return text


def first_xrefs(
    conn: sqlite3.Connection, version_id: int, targets: list[str], *, limit: int = MAX_XREFS
) -> tuple[str, dict[str, Any]] | None:
    """The first of ``targets`` that resolves, with its :func:`xrefs` answer; None when
    none does (a missing model still raises)."""
    _require_model(conn, version_id)
    for t in targets:
        try:
            return t, xrefs(conn, version_id, t, limit=limit)
        except DataNotFoundError:
            continue
    return None
