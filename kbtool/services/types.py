"""Types as knowledge (issue 27, types): struct, union, enum and typedef declarations kept in
the KB through the gate, applied to parameters, locals, globals and data items, shown in the
lifted C, exported as a header.

Every front-end (``kbtool types ...``, the MCP ``declare_type``/``apply_type``/``list_types``
tools, ``kbtool export``/``import-names``) calls here. Declarations are parsed by
:mod:`kbtool.analysis.cdecl` against the KB's own types (a header may use the types declared
before it); a parse error is one line and nothing is written. Each named type is one
``type`` annotation keyed by its name (version-independent: every release sees it); an
applied type is a ``local_type`` annotation of its function (carried with it) or a
``data_type`` annotation of its data item (by content) or global (by key).
The lifted C's field hook (:class:`TypedFields`) is in :mod:`kbtool.services.types_code`; the
KB's parser environment, the header export and the code's hook per version in
:mod:`kbtool.services.types_header` (re-exported here).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from kbtool.analysis import cdecl as cd
from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb import types as kt
from kbtool.kb.errors import KBError
from kbtool.kb.gate import Decision, upsert_knowledge
from kbtool.services import knowledge as ks
from kbtool.services.types_code import (  # noqa: F401  (re-exported: the names stay importable here)
    TypedFields,
)
from kbtool.services.types_header import (  # noqa: F401  (re-exported: the names stay importable here)
    _data_types,
    _mentioned,
    _needs,
    code_types,
    export_header,
    import_values,
    kb_env,
)

MAX_HEADER = cd.MAX_TEXT


MAX_LIST = 1000


class TypesError(KBError):
    """A types request that cannot be served: a declaration that does not parse, an unknown
    type, a type that does not fit where it is applied."""


def _who(provenance: str, actor: str | None) -> str:
    return actor or ("human:cli" if provenance == "human" else provenance)


# --------------------------------------------------------------------------- the KB's types


def resolve_name(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    """A KB type by ``struct NAME``/``union NAME``/``enum NAME`` or a bare name (a typedef
    first, then a struct, union or enum of that tag)."""
    t = (name or "").strip()
    if not t or len(t) > 300:
        raise TypesError("give a type name: NAME, struct NAME, union NAME or enum NAME")
    cands = [t] if " " in t else [t, f"struct {t}", f"union {t}", f"enum {t}"]
    for c in cands:
        r = kn.get(conn, "type", c)
        if r is not None:
            return r
    raise TypesError(f"no type {t[:60]!r} in the KB (kbtool types list)")


def add_types(
    conn: sqlite3.Connection,
    text: str,
    *,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    version_id: int | None = None,
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Parse a header and store each named type it defines through the gate (a type
    redeclared differently is a new revision; the same one is unchanged). Returns
    ``{types: [{name, kind, written, reason}], written, unchanged, refused}``."""
    if not isinstance(text, str) or not text.strip():
        raise TypesError("empty header: nothing to declare")
    if len(text) > MAX_HEADER:
        raise TypesError(f"header longer than {MAX_HEADER} characters")
    env = kb_env(conn)
    try:
        decls = cd.parse_decls(text, env)
    except cd.CDeclError as exc:
        raise TypesError(f"cannot parse the declarations: {exc}") from None
    chosen: dict[str, cd.Decl] = {}
    for d in decls:
        if d.kind == "enum" and d.name.startswith("__anon_enum_"):
            continue
        if d.body is None and (d.key in chosen or kn.get(conn, "type", d.key) is not None):
            continue  # a forward declaration of a known type
        chosen[d.key] = d
    if not chosen:
        raise TypesError("no named struct, union, enum or typedef in the declarations")
    out: dict[str, Any] = {"types": [], "written": 0, "unchanged": 0, "refused": 0}
    for key, d in chosen.items():
        value = cd.summary(d, env)
        dec = upsert_knowledge(
            conn,
            "type",
            key,
            "",
            value,
            provenance=provenance,
            confidence=confidence,
            actor=_who(provenance, actor),
            lock=lock,
            version_id=version_id,
            evidence=evidence,
        )
        out["types"].append({"name": key, "kind": d.kind, "size": value.get("size"), **dec})
        if dec["written"]:
            out["written"] += 1
        elif dec["reason"] == "no change":
            out["unchanged"] += 1
        else:
            out["refused"] += 1
    return out


def list_types(conn: sqlite3.Connection, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """``{total, offset, types: [{name, kind, size, align, fields, provenance, confidence,
    locked, uses}]}`` (``uses``: how many locals and data items it is applied to)."""
    offset, limit = max(0, int(offset)), max(1, min(MAX_LIST, int(limit)))
    rows = kt.all_types(conn)
    uses: dict[str, int] = {}
    for kind in ("local_type", "data_type"):
        for r in kt.applied(conn, kind):
            for name in _mentioned(r["value"]["text"]):
                uses[name] = uses.get(name, 0) + 1
    out = []
    for r in rows[offset : offset + limit]:
        v = r["value"]
        out.append(
            {
                "name": r["target"],
                "kind": v.get("kind"),
                "size": v.get("size"),
                "align": v.get("align"),
                "fields": len(v.get("fields") or v.get("enumerators") or []),
                "provenance": r["provenance"],
                "confidence": r["confidence"],
                "locked": r["locked"],
                "uses": uses.get(r["target"], 0)
                + (uses.get(v.get("name"), 0) if v.get("kind") != "typedef" else 0),
            }
        )
    return {"total": len(rows), "offset": offset, "types": out}


def show_type(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    """One type: its record (value, provenance, lock), where it is applied and its history."""
    r = resolve_name(conn, name)
    applied = []
    for kind in ("local_type", "data_type"):
        for a in kt.applied(conn, kind):
            if r["target"] in _mentioned(a["value"]["text"]) or (
                r["value"].get("kind") != "typedef"
                and r["value"].get("name") in _mentioned(a["value"]["text"])
                and r["target"] in _typedef_targets(conn, a["value"]["text"])
            ):
                applied.append(
                    {
                        "kind": kind,
                        "target": a["target"],
                        "key": a["key"],
                        "type": a["value"]["text"],
                        "provenance": a["provenance"],
                    }
                )
    return {
        "name": r["target"],
        **r["value"],
        "provenance": r["provenance"],
        "confidence": r["confidence"],
        "locked": r["locked"],
        "applied": applied,
        "history": kn.events(conn, r["target"], "type"),
    }


def _typedef_targets(conn: sqlite3.Connection, text: str) -> set[str]:
    out = set()
    for w in _mentioned(text):
        r = kn.get(conn, "type", w)
        if r is not None and r["value"].get("kind") == "typedef":
            out |= _mentioned(r["value"].get("type") or "")
    return out


# --------------------------------------------------------------------------- applying


def _parse_use(env: cd.Env, text: str) -> Any:
    try:
        return cd.parse_type(text, env)
    except cd.CDeclError as exc:
        raise TypesError(f"cannot parse the type {text[:60]!r}: {exc}") from None


def _fits_value(env: cd.Env, ty: Any, wasm: str, what: str) -> None:
    """Refuse a type a wasm value of type ``wasm`` cannot hold."""
    cls = cd.scalar_class(ty, env)
    if cls in ("record", "array", "fn", "void"):
        raise TypesError(
            f"{what} is a wasm {wasm} value: it holds a scalar or a pointer, not"
            f" {cd.type_text(ty)!r} (give a pointer such as '{cd.type_text(ty)} *')"
        )
    low = cd.wasm_lowering(ty, env)
    if low != [wasm]:
        raise TypesError(f"{what} is a wasm {wasm} value; {cd.type_text(ty)!r} is {', '.join(low)}")


def apply_local(
    conn: sqlite3.Connection,
    function: str,
    local: str | int,
    type_text: str | None,
    *,
    param: bool = False,
    version_id: int | None = None,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """Give wasm local ``local`` (with ``param``: parameter N, which is local N) of a
    function a C type (``struct sqlite3 *``), checked against the local's wasm type; None
    clears it."""
    f = ks.resolve_function(conn, function, version_id)
    code = ks._Code(conn, f["version_id"])
    _start, _instrs, types = code.body(f["index"])
    nparams = len(code.module.func_type(f["index"]).params)
    if param:
        s = str(local).strip().lstrip("p")
        if not s.isdigit() or int(s) >= nparams:
            raise TypesError(
                f"function {f['index']} has {nparams} parameter(s): give 0..{nparams - 1}"
            )
        idx = int(s)
    else:
        idx = ks.local_index(conn, f, local, code)
    value = None
    if type_text is not None:
        env = kb_env(conn)
        ty = _parse_use(env, type_text)
        _fits_value(env, ty, types[idx], f"{'parameter' if idx < nparams else 'local'} {idx}")
        value = {"text": cd.type_text(ty)}
    return upsert_knowledge(
        conn,
        "local_type",
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


def apply_data(
    conn: sqlite3.Connection,
    version_id: int,
    target: str,
    type_text: str | None,
    *,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    lock: bool | None = None,
    evidence: dict[str, Any] | None = None,
) -> Decision:
    """Give a data item (by content) or a global (``g:NAME``, by key) a C type: a global
    holds a scalar or a pointer of its wasm type; a data item any complete type."""
    try:
        d = ks.resolve_data(conn, version_id, target)
    except ks.KnowledgeError as exc:
        raise TypesError(str(exc)) from None
    value = None
    if type_text is not None:
        env = kb_env(conn)
        ty = _parse_use(env, type_text)
        if d["kind"] == "global":
            from kbtool.kb import datamodel as dm_store

            g = next(
                (g for g in dm_store.globals_of(conn, version_id) if g["index"] == d["index"]), None
            )
            wasm = (g or {}).get("type") or (g or {}).get("valtype") or "i32"
            _fits_value(env, ty, str(wasm).split()[-1], f"global {d['label'] or d['index']}")
        else:
            try:
                cd.layout(ty, env)
            except cd.CDeclError as exc:
                raise TypesError(
                    f"{cd.type_text(ty)!r} cannot lay out a data item: {exc}"
                ) from None
        value = {"text": cd.type_text(ty)}
    return upsert_knowledge(
        conn,
        "data_type",
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


# --------------------------------------------------------------------------- renaming


def _recovered(
    conn: sqlite3.Connection, name: str, version_id: int | None
) -> tuple[int, dict[str, Any]] | None:
    vid = version_id or queries.latest_version_id(conn)
    if vid is None:
        return None
    want = name.removeprefix("struct ").strip()
    for st in queries.structs(conn, vid):
        tag = str(st.get("name") or "")
        if tag in (want, f"struct_{want}") or tag.removeprefix("struct_") == want:
            return vid, st
    return None


_ANALYSIS_C = {
    ("i32", 4): "int",
    ("ptr", 4): "void *",
    ("i64", 8): "long long",
    ("f32", 4): "float",
    ("f64", 8): "double",
    ("i8", 1): "signed char",
    ("u8", 1): "unsigned char",
    ("i16", 2): "short",
    ("u16", 2): "unsigned short",
}


def recovered_decl(st: dict[str, Any], name: str) -> str:
    """A recovered struct as a declaration: its fields at their offsets, gaps as byte arrays
    (``gap_8``), overlapping or unknown accesses left out."""
    parts, end = [], 0
    for f in sorted(st.get("fields") or [], key=lambda f: (f.get("offset", -1), -f.get("size", 0))):
        off, size = f.get("offset"), f.get("size")
        ct = _ANALYSIS_C.get((f.get("type"), size))
        if ct is None or not isinstance(off, int) or off < end or off % min(size, 8):
            continue
        if off > end:
            parts.append(f"unsigned char gap_{end}[{off - end}];")
        fname = (
            f.get("name")
            if isinstance(f.get("name"), str) and cd.IDENT.match(f["name"])
            else f"field_{off}"
        )
        parts.append(f"{ct} {'*' if ct.endswith('*') else ''}{fname};".replace("* *", " *"))
        end = off + size
    return f"struct {name} {{ {' '.join(parts)} }};"


def rename_type(
    conn: sqlite3.Connection,
    old: str,
    new: str,
    *,
    version_id: int | None = None,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
) -> dict[str, Any]:
    """Rename a KB type, or name a struct the analysis recovered (``f41_p0``): it becomes a
    KB type (its fields at their offsets), applied (provenance agent, actor analysis) to
    every parameter the analysis found it in. Applications of a renamed KB type follow it."""
    if (
        not isinstance(new, str)
        or not cd.IDENT.match(new)
        or new in cd.KEYWORDS
        or len(new) > kt.MAX_TYPE_NAME
    ):
        raise TypesError(f"new name {str(new)[:60]!r} is not a C identifier")
    who = _who(provenance, actor)
    try:
        cur = resolve_name(conn, old)
    except TypesError:
        cur = None
    if cur is None:
        hit = _recovered(conn, old, version_id)
        if hit is None:
            raise TypesError(
                f"no type {old[:60]!r}: neither a KB type nor a struct the analysis recovered"
                " (kbtool types list; kbtool analyze VERSION)"
            )
        vid, st = hit
        res = add_types(
            conn,
            recovered_decl(st, new),
            provenance=provenance,
            confidence=confidence,
            actor=who,
            version_id=vid,
            evidence={"recovered_from": st.get("name"), "version_id": vid},
        )
        applied = 0
        for m in st.get("members") or []:
            b = re.fullmatch(r"p(\d+)", str(m.get("base", "")))
            row = queries.function_at_index(conn, vid, int(m.get("func_index", -1))) if b else None
            if row is None:
                continue
            d = upsert_knowledge(
                conn,
                "local_type",
                row["stable_id"],
                b.group(1),
                {"text": f"struct {new} *"},
                provenance="agent",
                confidence=0.6,
                actor="analysis:structs",
                version_id=vid,
                evidence={"recovered_from": st.get("name"), "renamed_by": who},
            )
            applied += int(d["written"])
        return {**res, "applied": applied, "from": st.get("name"), "name": f"struct {new}"}
    v = cur["value"]
    if v.get("kind") not in ("struct", "union", "enum"):
        raise TypesError(
            "rename a struct, union or enum (a typedef: declare the new one, then clear the old)"
        )
    kind, oldname = v["kind"], v["name"]
    if kn.get(conn, "type", f"{kind} {new}") is not None:
        raise TypesError(f"{kind} {new} already exists")
    text = re.sub(
        rf"^{kind} (__attribute__\(\([^)]*(?:\([^)]*\))?\)\) )?{re.escape(oldname)}\b",
        lambda m: f"{kind} {m.group(1) or ''}{new}",
        v["text"],
    )
    res = add_types(
        conn,
        text,
        provenance=provenance,
        confidence=confidence,
        actor=who,
        evidence={"renamed_from": cur["target"]},
    )
    moved = 0
    pat = re.compile(rf"\b{kind} {re.escape(oldname)}\b")
    for akind in ("local_type", "data_type"):
        for a in kt.applied(conn, akind):
            if pat.search(a["value"]["text"]):
                d = upsert_knowledge(
                    conn,
                    akind,
                    a["target"],
                    a["key"],
                    {"text": pat.sub(f"{kind} {new}", a["value"]["text"])},
                    provenance=a["provenance"],
                    confidence=a["confidence"],
                    actor=who,
                    lock=a["locked"],
                    evidence={"renamed_type": cur["target"]},
                )
                moved += int(d["written"])
    for t in kt.all_types(conn):  # types that mention it (typedefs, members)
        if t["target"] != cur["target"] and pat.search(t["value"]["text"]):
            add_types(
                conn,
                pat.sub(f"{kind} {new}", t["value"]["text"]),
                provenance=t["provenance"],
                confidence=t["confidence"],
                actor=who,
                evidence={"renamed_type": cur["target"]},
            )
    upsert_knowledge(
        conn,
        "type",
        cur["target"],
        "",
        None,
        provenance=provenance,
        confidence=confidence,
        actor=who,
        evidence={"renamed_to": f"{kind} {new}"},
    )
    return {**res, "applied": moved, "from": cur["target"], "name": f"{kind} {new}"}


def rename_field(
    conn: sqlite3.Connection,
    type_name: str,
    field: str,
    new: str,
    *,
    provenance: str = "human",
    confidence: float = 1.0,
    actor: str | None = None,
    version_id: int | None = None,
) -> Decision:
    """Rename one member (by name or byte offset) of a KB struct or union: a new revision of
    the type through the gate. A recovered struct is named first (``types rename``)."""
    if not isinstance(new, str) or not cd.IDENT.match(new) or new in cd.KEYWORDS:
        raise TypesError(f"new field name {str(new)[:60]!r} is not a C identifier")
    cur = resolve_name(conn, type_name)
    v = cur["value"]
    if v.get("kind") == "typedef" and re.fullmatch(r"(struct|union) \w+", v.get("type") or ""):
        cur = resolve_name(conn, v["type"])  # typedef struct sqlite3 sqlite3: the struct
        v = cur["value"]
    if v.get("kind") not in ("struct", "union"):
        raise TypesError(f"{cur['target']} is not a struct or union")
    env = kb_env(conn)
    d = env.types.get(cur["target"])
    if d is None or d.body is None:
        raise TypesError(f"{cur['target']} does not parse any more; declare it again")
    fields, attrs = d.body
    s = str(field).strip()
    offs = {
        f["name"]: f["offset"] for f in cd.record_layout(("rec", d.kind, d.name), env)["fields"]
    }
    pick = None
    if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", s):
        off = int(s, 0)
        pick = next((n for n, o in offs.items() if n and o == off), None)
    elif s in offs:
        pick = s
    if pick is None:
        raise TypesError(
            f"{cur['target']} has no member {s[:60]!r} (members: "
            f"{', '.join(f'{n}@{o}' for n, o in offs.items() if n)[:300]})"
        )
    if new in offs and new != pick:
        raise TypesError(f"{cur['target']} already has a member {new!r}")
    nd = cd.Decl(
        d.kind, d.name, (tuple((new if n == pick else n, t, a) for n, t, a in fields), attrs)
    )
    env.add(nd)
    value = cd.summary(nd, env)
    return upsert_knowledge(
        conn,
        "type",
        cur["target"],
        "",
        value,
        provenance=provenance,
        confidence=confidence,
        actor=_who(provenance, actor),
        version_id=version_id,
        evidence={"renamed_field": [pick, new]},
    )
