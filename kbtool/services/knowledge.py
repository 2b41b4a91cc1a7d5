"""Knowledge beyond names (issue 27): comments, line comments, prototypes, local names and data
names, as use cases over the one gate (:func:`kbtool.kb.gate.upsert_knowledge`).

Every front-end (CLI ``kbtool comment/set-type/rename-local/name-data``, the TUI code pane,
the MCP ``set_comment``/``set_prototype``/``rename_local``/``name_data`` tools, the agent pass
and ``kbtool deep``) calls here; these functions resolve a target, check what needs the module
(a line offset is an instruction of the body, a local index is within the function's locals)
and hand the value to the gate. Carry-over to a new release (:func:`carry_knowledge`) runs at
ingest beside the name carry; data names carry by content identity when the new release's data
model is built (:func:`apply_data_names`).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from kbtool.kb import datamodel as dm_store
from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.kb.gate import Decision, upsert_knowledge

# re-exported: the code model and the carry-over were split out and stay importable from here
from kbtool.services.knowledge_carry import CARRY_ACTOR, carry_knowledge  # noqa: F401
from kbtool.services.knowledge_code import (  # noqa: F401
    _PARSED,
    _PARSED_LOCK,
    ANCHOR,
    KnowledgeError,
    _anchor,
    _Code,
    _line_key,
    _match_line,
    body_instructions,
    locate_line,
)
from kbtool.textutil import LazyPattern

_SID = LazyPattern(r"[0-9a-f]{16}\Z")


# --------------------------------------------------------------------------- functions


def resolve_function(
    conn: sqlite3.Connection, target: str, version_id: int | None = None
) -> dict[str, Any]:
    """A function by stable id, ``#index`` / ``VERSION:INDEX`` or name ->
    ``{version_id, index, stable_id, type_sig}`` (the latest version holding it by default)."""
    t = (target or "").strip()
    if not t:
        raise KnowledgeError("empty function: give a stable id, #INDEX, VERSION:INDEX or a name")
    if len(t) > 300:
        raise KnowledgeError("function target longer than 300 characters")
    m = re.fullmatch(r"(?:(\d+):|#)(\d+)", t)
    if m:
        vid = int(m.group(1)) if m.group(1) else (version_id or queries.latest_version_id(conn))
        if vid is None:
            raise KnowledgeError("the KB has no versions")
        row = queries.function_at_index(conn, vid, int(m.group(2)))
        if row is None:
            raise KnowledgeError(f"version {vid} has no function {m.group(2)}")
        return _entry(conn, row["stable_id"], vid)
    if _SID.match(t):
        rows = queries.functions_by_stable_id(conn, t)
        if rows:
            if version_id is not None:
                rows = [r for r in rows if r["version_id"] == version_id] or rows
            return _entry(conn, t, rows[-1]["version_id"])
    vid = version_id or queries.latest_version_id(conn)
    if vid is not None:
        for idx, name in queries.function_names(conn, vid).items():
            if name == t:
                row = queries.function_at_index(conn, vid, idx)
                if row is not None:
                    return _entry(conn, row["stable_id"], vid)
    raise KnowledgeError(
        f"no function {t[:60]!r} (give a stable id, #INDEX, VERSION:INDEX or a name)"
    )


def _entry(conn: sqlite3.Connection, stable_id: str, version_id: int) -> dict[str, Any]:
    for f in queries.functions_by_stable_id(conn, stable_id):
        if f["version_id"] == version_id:
            row = queries.get_function(conn, version_id, int(f["index"]))
            if row["imported"]:
                raise KnowledgeError(
                    f"function {row['index']} of version {version_id} is an import:"
                    " it has no code to annotate"
                )
            return {
                "version_id": version_id,
                "index": int(row["index"]),
                "stable_id": stable_id,
                "type_sig": row["type"] or "",
                "name": row["name"],
            }
    raise KnowledgeError(f"stable id {stable_id} is not in version {version_id}")


def _who(provenance: str, actor: str | None) -> str:
    return actor or ("human:cli" if provenance == "human" else provenance)


def set_comment(
    conn: sqlite3.Connection,
    target: str,
    text: str | None,
    *,
    line: int | None = None,
    version_id: int | None = None,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """The function comment, or with ``line`` the comment of the instruction at that offset;
    ``text`` None (or empty from a person) clears it."""
    f = resolve_function(conn, target, version_id)
    value: dict[str, Any] | None = (
        None if text is None or (provenance == "human" and text == "") else {"text": text}
    )
    if line is None:
        return upsert_knowledge(
            conn,
            "comment",
            f["stable_id"],
            "",
            value,
            provenance=provenance,
            confidence=confidence,
            actor=_who(provenance, actor),
            lock=lock,
            version_id=f["version_id"],
            evidence=evidence,
        )
    if not isinstance(line, int) or isinstance(line, bool) or line < 0:
        raise KnowledgeError(
            f"bad line offset {line!r}: a non-negative offset from the disassembly"
        )
    key, anchor, ordinal = _line_key(_Code(conn, f["version_id"]), f["index"], line)
    if value is not None:
        value.update(anchor=anchor, ordinal=ordinal)
    return upsert_knowledge(
        conn,
        "line_comment",
        f["stable_id"],
        key,
        value,
        provenance=provenance,
        confidence=confidence,
        actor=_who(provenance, actor),
        lock=lock,
        version_id=f["version_id"],
        evidence=evidence,
    )


def set_prototype(
    conn: sqlite3.Connection,
    target: str,
    prototype: str | None,
    *,
    version_id: int | None = None,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """The function's prototype (``int f(sqlite3 *db, const char *zSql)``), checked against
    its wasm signature by the gate; None clears it."""
    f = resolve_function(conn, target, version_id)
    value = None if prototype is None else {"text": prototype}
    return upsert_knowledge(
        conn,
        "prototype",
        f["stable_id"],
        "",
        value,
        provenance=provenance,
        confidence=confidence,
        actor=_who(provenance, actor),
        lock=lock,
        version_id=f["version_id"],
        evidence=evidence,
    )


def local_index(
    conn: sqlite3.Connection, f: dict[str, Any], local: str | int, code: _Code | None = None
) -> int:
    """A local by wasm index (``3``, ``l3``, ``p0``) or by its current name."""
    code = code or _Code(conn, f["version_id"])
    _start, _instrs, types = code.body(f["index"])
    s = str(local).strip()
    m = re.fullmatch(r"[lp]?(\d+)", s)
    idx = None
    if m:
        idx = int(m.group(1))
    else:
        for k, name in local_names(conn, f["stable_id"]).items():
            if name == s:
                idx = k
        proto = kn.get(conn, "prototype", f["stable_id"])
        if idx is None and proto:
            for k, p in enumerate(proto["value"]["params"]):
                if p.get("name") == s:
                    idx = k
    if idx is None or idx >= len(types):
        raise KnowledgeError(
            f"unknown local {s[:60]!r}: function {f['index']} has locals 0..{len(types) - 1}"
            " (parameters first)"
        )
    return idx


def rename_local(
    conn: sqlite3.Connection,
    target: str,
    local: str | int,
    name: str | None,
    *,
    version_id: int | None = None,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """Name wasm local ``local`` (index, ``lN``/``pN`` or its current name) of a function."""
    f = resolve_function(conn, target, version_id)
    idx = local_index(conn, f, local)
    value = None if name is None else {"name": name}
    return upsert_knowledge(
        conn,
        "local",
        f["stable_id"],
        str(idx),
        value,
        provenance=provenance,
        confidence=confidence,
        actor=_who(provenance, actor),
        lock=lock,
        version_id=f["version_id"],
        evidence=evidence,
    )


def global_key(g: dict[str, Any]) -> str:
    """The version-independent key of a global: its import name, export, toolchain name or index."""
    if g.get("import_name"):
        return f"g:{g['import_name']}"
    if g.get("exports"):
        return f"g:{g['exports'][0]}"
    if g.get("name"):
        return f"g:{g['name']}"
    return f"g:#{g['index']}"


def resolve_data(conn: sqlite3.Connection, version_id: int, target: str) -> dict[str, Any]:
    """A data item or global as ``kbtool xrefs`` takes it (0xADDR, a label, "text, g:NAME) ->
    ``{kind: data|global, key, address|index, label}``."""
    queries.get_version(conn, version_id)
    if dm_store.model_info(conn, version_id) is None:
        raise KnowledgeError(
            f"version {version_id} has no data model yet: run `kbtool analyze {version_id}`"
        )
    t = (target or "").strip()
    if not t or len(t) > 512:
        raise KnowledgeError('give a data target: 0xADDRESS, a data label, "text or g:GLOBAL')
    m = re.fullmatch(r"g:(.+)", t, re.I)
    if m:
        key = m.group(1)
        for g in dm_store.globals_of(conn, version_id):
            names = {g["name"], g.get("import_name"), *(g.get("exports") or [])}
            if (
                (key.lstrip("#").isdigit() and g["index"] == int(key.lstrip("#")))
                or key in names
                or global_key(g) == t
            ):
                return {
                    "kind": "global",
                    "key": global_key(g),
                    "index": g["index"],
                    "label": g["name"],
                }
        raise KnowledgeError(f"no global {key[:60]!r} in version {version_id}")
    it = None
    if t.startswith('"'):
        found = dm_store.items_by_text(conn, version_id, t[1:].rstrip('"'), limit=1)
        it = found[0] if found else None
    elif re.fullmatch(r"0x[0-9a-f]+|\d+", t, re.I):
        it = dm_store.item_at(conn, version_id, int(t, 0))
    else:
        it = dm_store.item_by_label(conn, version_id, t)
        if it is None:
            it = item_by_given_name(conn, version_id, t)
    if it is None:
        raise KnowledgeError(f"no data item {t[:60]!r} in version {version_id}")
    return {"kind": "data", "key": it["data_id"], "address": it["address"], "label": it["label"]}


def _item_by_id(conn: sqlite3.Connection, version_id: int, data_id: str) -> dict[str, Any] | None:
    items, _n = dm_store.list_items(conn, version_id, offset=0, limit=1_000_000)
    return next((i for i in items if i["data_id"] == data_id), None)


def name_data(
    conn: sqlite3.Connection,
    version_id: int,
    target: str,
    name: str | None,
    *,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """Name a data item (by content identity) or a global (by its version-independent key)."""
    d = resolve_data(conn, version_id, target)
    value = None if name is None else {"name": name}
    return upsert_knowledge(
        conn,
        "data_name",
        d["key"],
        "",
        value,
        provenance=provenance,
        confidence=confidence,
        actor=_who(provenance, actor),
        lock=lock,
        version_id=version_id,
        evidence=evidence,
    )


# --------------------------------------------------------------------------- reads


def local_names(conn: sqlite3.Connection, stable_id: str) -> dict[int, str]:
    return {
        int(r["key"]): r["value"]["name"]
        for r in kn.for_target(conn, stable_id)
        if r["kind"] == "local"
    }


def function_knowledge(
    conn: sqlite3.Connection, stable_id: str, version_id: int | None = None
) -> dict[str, Any]:
    """Everything known about one function beyond its name (JSON-ready). Line comments carry
    ``offset`` (from the body start) and, with ``version_id``, ``address`` (the file offset
    the disassembly of that version shows)."""
    out: dict[str, Any] = {"comment": None, "prototype": None, "line_comments": [], "locals": []}
    start = None
    recs = kn.for_target(conn, stable_id)
    if version_id is not None and any(r["kind"] == "line_comment" for r in recs):
        try:
            f = _entry(conn, stable_id, version_id)
            start = _Code(conn, version_id).body(f["index"])[0]
        except KBError:
            start = None
    for r in recs:
        meta = {
            "provenance": r["provenance"],
            "confidence": r["confidence"],
            "locked": r["locked"],
            "carried": _carried(r),
        }
        if r["kind"] == "comment":
            out["comment"] = {"text": r["value"]["text"], **meta}
        elif r["kind"] == "prototype":
            out["prototype"] = {
                "text": r["value"]["text"],
                "params": r["value"].get("params", []),
                **meta,
            }
        elif r["kind"] == "line_comment":
            out["line_comments"].append(
                {
                    "offset": int(r["key"]),
                    "text": r["value"]["text"],
                    "address": start + int(r["key"]) if start is not None else None,
                    **meta,
                }
            )
        elif r["kind"] == "local":
            out["locals"].append({"index": int(r["key"]), "name": r["value"]["name"], **meta})
    return out


def _carried(r: dict[str, Any]) -> dict[str, Any] | None:
    ev = r["evidence"][0] if r["evidence"] else {}
    if r["provenance"] == "diff-carry" and isinstance(ev, dict):
        return {"from_version_id": ev.get("carried_from"), "how": ev.get("how")}
    return None


def code_knowledge(conn: sqlite3.Connection, version_id: int) -> dict[int, dict[str, Any]]:
    """function index -> {comment, prototype, lines: {file offset: text}, locals: {i: name}}
    for the version's annotated functions (what the lifter and the disassembly show)."""
    rows = kn.version_targets(conn, version_id)
    if not rows:
        return {}
    by_sid = kn.for_targets(conn, [sid for _i, sid, _t in rows])
    code: _Code | None = None
    out: dict[int, dict[str, Any]] = {}
    for idx, sid, _sig in rows:
        recs = by_sid.get(sid) or []
        k: dict[str, Any] = {"comment": None, "prototype": None, "lines": {}, "locals": {}}
        for r in recs:
            if r["kind"] == "comment":
                k["comment"] = r["value"]["text"]
            elif r["kind"] == "prototype":
                k["prototype"] = r["value"]
            elif r["kind"] == "local":
                k["locals"][int(r["key"])] = r["value"]["name"]
            elif r["kind"] == "line_comment":
                if code is None:
                    code = _Code(conn, version_id)
                try:
                    start, instrs, _types = code.body(idx)
                except KnowledgeError:
                    continue
                pos = locate_line(r["value"], int(r["key"]), start, instrs)
                if pos is not None:
                    k["lines"][instrs[pos][0]] = r["value"]["text"]
        out[idx] = k
    return out


def data_names(conn: sqlite3.Connection) -> dict[str, str]:
    """data_id / global key -> the annotated name."""
    return {r["target"]: r["value"]["name"] for r in kn.of_kind(conn, "data_name")}


def global_names(conn: sqlite3.Connection, version_id: int) -> dict[int, str]:
    """global index -> the name given to it (by its version-independent key); needs the data model."""
    given = {t: n for t, n in data_names(conn).items() if t.startswith("g:")}
    if not given or dm_store.model_info(conn, version_id) is None:
        return {}
    return {
        g["index"]: given[global_key(g)]
        for g in dm_store.globals_of(conn, version_id)
        if global_key(g) in given
    }


def merged_locals(
    module_locals: Any, known: dict[int, dict[str, Any]]
) -> dict[int, dict[int, str]]:
    """Local names the code shows: the module's own (name section), then the declared
    prototype's parameter names, then the local names given in the KB."""
    out: dict[int, dict[int, str]] = {i: dict(d) for i, d in module_locals.items()}
    for idx, k in known.items():
        d = out.setdefault(idx, {})
        proto = k.get("prototype")
        if proto:
            for pos, p in enumerate(p for p in proto.get("params", []) if not p.get("varargs")):
                if p.get("name"):
                    d[pos] = p["name"]
        d.update(k.get("locals") or {})
    return out


def history(conn: sqlite3.Connection, target: str, kind: str | None = None) -> list[dict[str, Any]]:
    return kn.events(conn, target, kind)


# --------------------------------------------------------------------------- carry-over


def apply_data_names(conn: sqlite3.Connection, version_id: int) -> dict[str, int]:
    """Data names carry by content: a name given to a data item in one release names the item
    with the same ``data_id`` in every release (the annotation is keyed by it, nothing to copy);
    this counts how many of the version's items and globals carry one."""
    if dm_store.model_info(conn, version_id) is None:
        return {"items": 0, "globals": 0}
    names = data_names(conn)
    if not names:
        return {"items": 0, "globals": 0}
    items, _n = dm_store.list_items(conn, version_id, offset=0, limit=1_000_000)
    gl = dm_store.globals_of(conn, version_id)
    return {
        "items": sum(1 for i in items if i["data_id"] in names),
        "globals": sum(1 for g in gl if global_key(g) in names),
    }


# --------------------------------------------------------------------------- agents

AGENT_ACTOR = "agent:mcp"


def agent_check(kind: str, text: str) -> str | None:
    """The agent verifier's word on a proposed local/data name or comment (None: fine): the
    same name rules as ``propose_symbol`` (no placeholder, keyword or instruction), and no
    instruction to the reader in a comment."""
    from kbtool.agents.verifier import check_name, injection

    if kind in ("local", "data_name"):
        if (
            kind == "local"
            and isinstance(text, str)
            and re.fullmatch(r"[a-z]{1,2}", text)
            and text not in ("do", "if")
        ):
            return None  # i, j, n, ch: fine names for a local
        v = check_name(text)
        return None if v.ok else f"verifier: {v.reason}"
    if kind in ("comment", "line_comment") and isinstance(text, str):
        for row in text.splitlines()[:200]:
            why = injection(row)
            if why:
                return f"verifier: the comment {why}"
    return None


def write_understanding(
    conn: sqlite3.Connection,
    version_id: int,
    stable_id: str,
    text: str | None,
    confidence: float,
    rename_map: dict[str, str],
    *,
    actor: str = "agent:deep",
    evidence: dict[str, Any] | None = None,
) -> dict[str, int]:
    """``kbtool deep``'s understanding as the function comment and its variable renames
    (``p0``/``l3`` -> a role name) as local names, as provenance agent through the gate (a
    human or better-founded annotation stays; a refusal only drops that piece)."""
    out = {"written": 0, "refused": 0}
    conf = round(max(0.0, min(1.0, float(confidence))), 4)
    common: dict[str, Any] = {
        "version_id": version_id,
        "provenance": "agent",
        "confidence": conf,
        "actor": actor,
        "evidence": {"source": "deep", **(evidence or {})},
    }
    decisions = []
    try:
        if text and text.strip():
            decisions.append(set_comment(conn, stable_id, text.strip()[: kn.MAX_COMMENT], **common))
        for old, new in list(rename_map.items())[:64]:
            if re.fullmatch(r"[pl]\d+", old) and isinstance(new, str):
                try:
                    decisions.append(rename_local(conn, stable_id, old, new, **common))
                except KnowledgeError:
                    continue
    except KBError:
        return out
    for d in decisions:
        if d["written"]:
            out["written"] += 1
        elif d["reason"] != "no change":
            out["refused"] += 1
    return out


def overlay_items(conn: sqlite3.Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Data items with the names people and agents gave them: ``label`` becomes the given name,
    ``analysis_label`` keeps the analysis' one, ``name_provenance`` says who gave it."""
    given = {r["target"]: r for r in kn.of_kind(conn, "data_name")}
    if not given:
        return items
    out = []
    for it in items:
        r = given.get(it.get("data_id") or "")
        out.append(
            dict(
                it,
                label=r["value"]["name"],
                analysis_label=it["label"],
                name_provenance=r["provenance"],
            )
            if r
            else it
        )
    return out


def overlay_globals(
    conn: sqlite3.Connection, globals_: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Globals with their given names (``name``; ``analysis_name`` keeps the analysis' one)."""
    given = {r["target"]: r for r in kn.of_kind(conn, "data_name") if r["target"].startswith("g:")}
    if not given:
        return globals_
    out = []
    for g in globals_:
        r = given.get(global_key(g))
        out.append(
            dict(
                g, name=r["value"]["name"], analysis_name=g["name"], name_provenance=r["provenance"]
            )
            if r
            else g
        )
    return out


def item_by_given_name(
    conn: sqlite3.Connection, version_id: int, name: str
) -> dict[str, Any] | None:
    """The version's data item a person or agent named ``name`` (None when none)."""
    for rec in kn.of_kind(conn, "data_name"):
        if rec["value"].get("name") == name and rec["target"].startswith("d:"):
            it = _item_by_id(conn, version_id, rec["target"])
            if it is not None:
                return it
    return None
