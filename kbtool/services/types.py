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

MAX_HEADER = cd.MAX_TEXT
MAX_LIST = 1000


class TypesError(KBError):
    """A types request that cannot be served: a declaration that does not parse, an unknown
    type, a type that does not fit where it is applied."""


def _who(provenance: str, actor: str | None) -> str:
    return actor or ("human:cli" if provenance == "human" else provenance)


# --------------------------------------------------------------------------- the KB's types


def kb_env(conn: sqlite3.Connection) -> cd.Env:
    """A parser environment holding every type of the KB (parsed in dependency order; a
    type whose declaration no longer parses is left out)."""
    env = cd.Env()
    pending = [r["value"]["text"] for r in kt.all_types(conn)]
    # forward declarations first so a pointer to any of them resolves
    for _round in range(len(pending) + 1):
        left = []
        for text in pending:
            try:
                cd.parse_decls(text, env)
            except cd.CDeclError:
                left.append(text)
        if not left or len(left) == len(pending):
            break
        pending = left
    return env


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


def add_types(conn: sqlite3.Connection, text: str, *, provenance: str = "human", confidence: float = 1.0,
              actor: str | None = None, lock: bool | None = None, version_id: int | None = None,
              evidence: dict[str, Any] | None = None) -> dict[str, Any]:
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
        dec = upsert_knowledge(conn, "type", key, "", value, provenance=provenance, confidence=confidence,
                               actor=_who(provenance, actor), lock=lock, version_id=version_id,
                               evidence=evidence)
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
        out.append({"name": r["target"], "kind": v.get("kind"), "size": v.get("size"), "align": v.get("align"),
                    "fields": len(v.get("fields") or v.get("enumerators") or []),
                    "provenance": r["provenance"], "confidence": r["confidence"], "locked": r["locked"],
                    "uses": uses.get(r["target"], 0) + (uses.get(v.get("name"), 0) if v.get("kind") != "typedef" else 0)})
    return {"total": len(rows), "offset": offset, "types": out}


def _mentioned(text: str) -> set[str]:
    """Type names a type text mentions: ``struct foo *`` -> {``struct foo``}, ``u8`` -> {``u8``}."""
    out = set(re.findall(r"\b(?:struct|union|enum) [A-Za-z_][A-Za-z0-9_]*", text))
    rest = re.sub(r"\b(?:struct|union|enum) [A-Za-z_][A-Za-z0-9_]*", " ", text)
    out |= {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rest) if w not in cd.KEYWORDS}
    return out


def show_type(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    """One type: its record (value, provenance, lock), where it is applied and its history."""
    r = resolve_name(conn, name)
    applied = []
    for kind in ("local_type", "data_type"):
        for a in kt.applied(conn, kind):
            if r["target"] in _mentioned(a["value"]["text"]) or (
                    r["value"].get("kind") != "typedef" and r["value"].get("name") in _mentioned(a["value"]["text"])
                    and r["target"] in _typedef_targets(conn, a["value"]["text"])):
                applied.append({"kind": kind, "target": a["target"], "key": a["key"], "type": a["value"]["text"],
                                "provenance": a["provenance"]})
    return {"name": r["target"], **r["value"], "provenance": r["provenance"], "confidence": r["confidence"],
            "locked": r["locked"], "applied": applied, "history": kn.events(conn, r["target"], "type")}


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
        raise TypesError(f"{what} is a wasm {wasm} value: it holds a scalar or a pointer, not"
                         f" {cd.type_text(ty)!r} (give a pointer such as '{cd.type_text(ty)} *')")
    low = cd.wasm_lowering(ty, env)
    if low != [wasm]:
        raise TypesError(f"{what} is a wasm {wasm} value; {cd.type_text(ty)!r} is {', '.join(low)}")


def apply_local(conn: sqlite3.Connection, function: str, local: str | int, type_text: str | None, *,
                param: bool = False, version_id: int | None = None, provenance: str = "human",
                confidence: float = 1.0, actor: str | None = None, lock: bool | None = None,
                evidence: dict[str, Any] | None = None) -> Decision:
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
            raise TypesError(f"function {f['index']} has {nparams} parameter(s): give 0..{nparams - 1}")
        idx = int(s)
    else:
        idx = ks.local_index(conn, f, local, code)
    value = None
    if type_text is not None:
        env = kb_env(conn)
        ty = _parse_use(env, type_text)
        _fits_value(env, ty, types[idx], f"{'parameter' if idx < nparams else 'local'} {idx}")
        value = {"text": cd.type_text(ty)}
    return upsert_knowledge(conn, "local_type", f["stable_id"], str(idx), value, provenance=provenance,
                            confidence=confidence, actor=_who(provenance, actor), lock=lock,
                            version_id=f["version_id"], evidence=evidence)


def apply_data(conn: sqlite3.Connection, version_id: int, target: str, type_text: str | None, *,
               provenance: str = "human", confidence: float = 1.0, actor: str | None = None,
               lock: bool | None = None, evidence: dict[str, Any] | None = None) -> Decision:
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

            g = next((g for g in dm_store.globals_of(conn, version_id) if g["index"] == d["index"]), None)
            wasm = (g or {}).get("type") or (g or {}).get("valtype") or "i32"
            _fits_value(env, ty, str(wasm).split()[-1], f"global {d['label'] or d['index']}")
        else:
            try:
                cd.layout(ty, env)
            except cd.CDeclError as exc:
                raise TypesError(f"{cd.type_text(ty)!r} cannot lay out a data item: {exc}") from None
        value = {"text": cd.type_text(ty)}
    return upsert_knowledge(conn, "data_type", d["key"], "", value, provenance=provenance,
                            confidence=confidence, actor=_who(provenance, actor), lock=lock,
                            version_id=version_id, evidence=evidence)


# --------------------------------------------------------------------------- renaming


def _recovered(conn: sqlite3.Connection, name: str, version_id: int | None) -> tuple[int, dict[str, Any]] | None:
    vid = version_id or queries.latest_version_id(conn)
    if vid is None:
        return None
    want = name.removeprefix("struct ").strip()
    for st in queries.structs(conn, vid):
        tag = str(st.get("name") or "")
        if tag in (want, f"struct_{want}") or tag.removeprefix("struct_") == want:
            return vid, st
    return None


_ANALYSIS_C = {("i32", 4): "int", ("ptr", 4): "void *", ("i64", 8): "long long", ("f32", 4): "float",
               ("f64", 8): "double", ("i8", 1): "signed char", ("u8", 1): "unsigned char",
               ("i16", 2): "short", ("u16", 2): "unsigned short"}


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
        fname = f.get("name") if isinstance(f.get("name"), str) and cd.IDENT.match(f["name"]) else f"field_{off}"
        parts.append(f"{ct} {'*' if ct.endswith('*') else ''}{fname};".replace("* *", " *"))
        end = off + size
    return f"struct {name} {{ {' '.join(parts)} }};"


def rename_type(conn: sqlite3.Connection, old: str, new: str, *, version_id: int | None = None,
                provenance: str = "human", confidence: float = 1.0, actor: str | None = None) -> dict[str, Any]:
    """Rename a KB type, or name a struct the analysis recovered (``f41_p0``): it becomes a
    KB type (its fields at their offsets), applied (provenance agent, actor analysis) to
    every parameter the analysis found it in. Applications of a renamed KB type follow it."""
    if not isinstance(new, str) or not cd.IDENT.match(new) or new in cd.KEYWORDS or len(new) > kt.MAX_TYPE_NAME:
        raise TypesError(f"new name {str(new)[:60]!r} is not a C identifier")
    who = _who(provenance, actor)
    try:
        cur = resolve_name(conn, old)
    except TypesError:
        cur = None
    if cur is None:
        hit = _recovered(conn, old, version_id)
        if hit is None:
            raise TypesError(f"no type {old[:60]!r}: neither a KB type nor a struct the analysis recovered"
                             " (kbtool types list; kbtool analyze VERSION)")
        vid, st = hit
        res = add_types(conn, recovered_decl(st, new), provenance=provenance, confidence=confidence,
                        actor=who, version_id=vid,
                        evidence={"recovered_from": st.get("name"), "version_id": vid})
        applied = 0
        for m in st.get("members") or []:
            b = re.fullmatch(r"p(\d+)", str(m.get("base", "")))
            row = queries.function_at_index(conn, vid, int(m.get("func_index", -1))) if b else None
            if row is None:
                continue
            d = upsert_knowledge(conn, "local_type", row["stable_id"], b.group(1), {"text": f"struct {new} *"},
                                 provenance="agent", confidence=0.6, actor="analysis:structs", version_id=vid,
                                 evidence={"recovered_from": st.get("name"), "renamed_by": who})
            applied += int(d["written"])
        return {**res, "applied": applied, "from": st.get("name"), "name": f"struct {new}"}
    v = cur["value"]
    if v.get("kind") not in ("struct", "union", "enum"):
        raise TypesError("rename a struct, union or enum (a typedef: declare the new one, then clear the old)")
    kind, oldname = v["kind"], v["name"]
    if kn.get(conn, "type", f"{kind} {new}") is not None:
        raise TypesError(f"{kind} {new} already exists")
    text = re.sub(rf"^{kind} (__attribute__\(\([^)]*(?:\([^)]*\))?\)\) )?{re.escape(oldname)}\b",
                  lambda m: f"{kind} {m.group(1) or ''}{new}", v["text"])
    res = add_types(conn, text, provenance=provenance, confidence=confidence, actor=who,
                    evidence={"renamed_from": cur["target"]})
    moved = 0
    pat = re.compile(rf"\b{kind} {re.escape(oldname)}\b")
    for akind in ("local_type", "data_type"):
        for a in kt.applied(conn, akind):
            if pat.search(a["value"]["text"]):
                d = upsert_knowledge(conn, akind, a["target"], a["key"],
                                     {"text": pat.sub(f"{kind} {new}", a["value"]["text"])},
                                     provenance=a["provenance"], confidence=a["confidence"], actor=who,
                                     lock=a["locked"], evidence={"renamed_type": cur["target"]})
                moved += int(d["written"])
    for t in kt.all_types(conn):  # types that mention it (typedefs, members)
        if t["target"] != cur["target"] and pat.search(t["value"]["text"]):
            add_types(conn, pat.sub(f"{kind} {new}", t["value"]["text"]), provenance=t["provenance"],
                      confidence=t["confidence"], actor=who, evidence={"renamed_type": cur["target"]})
    upsert_knowledge(conn, "type", cur["target"], "", None, provenance=provenance, confidence=confidence,
                     actor=who, evidence={"renamed_to": f"{kind} {new}"})
    return {**res, "applied": moved, "from": cur["target"], "name": f"{kind} {new}"}


def rename_field(conn: sqlite3.Connection, type_name: str, field: str, new: str, *,
                 provenance: str = "human", confidence: float = 1.0, actor: str | None = None,
                 version_id: int | None = None) -> Decision:
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
    offs = {f["name"]: f["offset"] for f in cd.record_layout(("rec", d.kind, d.name), env)["fields"]}
    pick = None
    if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", s):
        off = int(s, 0)
        pick = next((n for n, o in offs.items() if n and o == off), None)
    elif s in offs:
        pick = s
    if pick is None:
        raise TypesError(f"{cur['target']} has no member {s[:60]!r} (members: "
                         f"{', '.join(f'{n}@{o}' for n, o in offs.items() if n)[:300]})")
    if new in offs and new != pick:
        raise TypesError(f"{cur['target']} already has a member {new!r}")
    nd = cd.Decl(d.kind, d.name, (tuple((new if n == pick else n, t, a) for n, t, a in fields), attrs))
    env.add(nd)
    value = cd.summary(nd, env)
    return upsert_knowledge(conn, "type", cur["target"], "", value, provenance=provenance, confidence=confidence,
                            actor=_who(provenance, actor), version_id=version_id,
                            evidence={"renamed_field": [pick, new]})


# --------------------------------------------------------------------------- export


def export_header(conn: sqlite3.Connection) -> str:
    """A C header of the KB's types that compiles on its own (forward declarations first,
    then each definition after the ones it needs by value)."""
    env = kb_env(conn)
    rows = kt.all_types(conn)
    decls = {k: d for k, d in env.types.items()}
    lines = ["/* kbtool: the KB's types (wasm32 layouts). */", "#ifndef KBTOOL_TYPES_H",
             "#define KBTOOL_TYPES_H", "#include <stdint.h>", "#include <stddef.h>", "#include <stdbool.h>"]
    used = set()
    for r in rows:
        used |= _mentioned(r["value"]["text"])
    for name in sorted(used):
        if name in cd.BUILTIN_TYPEDEFS and name not in cd.STD_TYPEDEFS and name not in decls:
            lines.append(f"typedef {cd.BUILTIN_TYPEDEFS[name]} {name};")
    for k, d in sorted(decls.items()):
        if d.kind in ("struct", "union"):
            lines.append(f"{k};")
    done: set[str] = set()
    order: list[cd.Decl] = []

    def visit(key: str, depth: int = 0) -> None:
        d = decls.get(key)
        if d is None or key in done or depth > 200:
            return
        done.add(key)
        for dep in sorted(_needs(d)):
            visit(dep, depth + 1)
        order.append(d)

    for k in sorted(decls):
        visit(k)
    for d in order:
        if d.body is not None or d.kind == "typedef":
            lines.append(cd.print_decl(d))
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def _needs(d: cd.Decl) -> set[str]:
    """What must be declared before ``d``: typedef names it uses, enums, and the records it
    holds by value (a record behind a pointer needs only its forward declaration)."""
    out: set[str] = set()

    def walk(t: Any, by_value: bool, depth: int = 0) -> None:
        if depth > 200:
            return
        k = t[0]
        if k == "name":
            out.add(t[1])
        elif k == "enum":
            out.add(f"enum {t[1]}")
        elif k == "rec":
            if by_value:
                out.add(f"{t[1]} {t[2]}")
        elif k == "ptr":
            walk(t[1], False, depth + 1)
        elif k == "arr":
            walk(t[1], by_value, depth + 1)
        elif k == "fn":
            walk(t[1], False, depth + 1)
            for _n, pt in t[2]:
                walk(pt, False, depth + 1)
        elif k == "anon":
            for _n, ft, _a in t[2]:
                walk(ft, True, depth + 1)

    if d.kind in ("struct", "union") and d.body:
        for _n, ft, _a in d.body[0]:
            walk(ft, True)
    elif d.kind == "typedef":
        walk(d.body, False)
    out.discard(d.key)
    return out


# --------------------------------------------------------------------------- the code


_PRELUDE_TAGS = {"v128", "wasm_ref_s"}
# a member name after `->` only clashes with a macro: the prelude's and <stdint.h>'s
_MACRO = re.compile(r"(KB_\w*|KBTOOL_\w*|REF_FUNC|REF_NULL|HT_SHARED|U?INT\w*_(?:MAX|MIN|C)|SIZE_MAX"
                    r"|PTRDIFF_\w+|SIG_ATOMIC_\w+|WCHAR_\w+|WINT_\w+|NULL|__\w*)\Z")


def _member(name: str) -> str:
    from kbtool.lift.names import C_KEYWORDS

    return f"{name}_" if name in C_KEYWORDS or _MACRO.match(name) else name


class TypedFields:
    """The lifter's field hook for the KB's types: a load or store at a constant offset from
    a parameter or local whose applied type (``local_type``, else its declared prototype's
    parameter type) is a pointer to a KB struct or union becomes
    ``((struct sqlite3 *)(M + db))->mallocFailed`` (``[k].field`` past the first element),
    with the struct declared before the function (guarded, packed, padded to the declared
    offsets, members as the fixed-width types wasm memory holds), so the C still compiles.
    A member is used when its width and kind are the access's (a 1-byte signedness mismatch
    reads through ``*(int8_t *)&...->f``); else the plain access stays. Locals without a KB
    type fall back to ``fallback`` (the analysis' recovered structs)."""

    def __init__(self, env: cd.Env, apps: dict[int, dict[int, Any]], fallback: Any = None,
                 taken: set[str] | None = None) -> None:
        self.env = env
        self.apps = apps
        self.fallback = fallback
        self.lm: Any = None
        self.taken = set(taken or ())
        self._tags: dict[str, str] = {}
        self._decls: dict[str, str] = {}
        self._names: dict[int, dict[str, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.apps) or bool(self.fallback)

    # -- C declarations
    def tag(self, kind: str, name: str) -> str:
        key = f"{kind} {name}"
        t = self._tags.get(key)
        if t is None:
            from kbtool.lift.names import C_KEYWORDS, c_ident

            t = c_ident(name)
            if t in self.taken or t in _PRELUDE_TAGS or t.startswith("R_") or t in C_KEYWORDS:
                t = f"kb_{t}"
            self._tags[key] = t
        return t

    def _member_type(self, t: Any, name: str, deps: list[str], depth: int) -> str:
        """A member declaration with wasm memory's fixed-width types."""
        r = cd._resolve(t, self.env)
        if r[0] == "arr":
            inner = self._member_type(r[1], "X", deps, depth + 1)
            return inner.replace(" X", f" {name}[{'' if r[2] is None else r[2]}]", 1) if " X" in inner \
                else f"uint8_t {name}[{cd.layout(r, self.env)[0]}]"
        if r[0] == "rec":
            deps.append(self.decl(r[1], r[2], depth + 1))
            return f"{r[1]} {self.tag(r[1], r[2])} {name}"
        if r[0] == "anon":
            return f"{self._body(r, deps, depth + 1)} {name}".rstrip()
        ct = cd.repr_ctype(r, self.env)
        if ct is None:
            return f"uint8_t {name}[{cd.layout(r, self.env)[0]}]"
        return f"{ct} {name}"

    def _body(self, t: Any, deps: list[str], depth: int, tag: str | None = None) -> str:
        if depth > cd.MAX_DEPTH * 2:
            raise cd.CDeclError("nested too deeply")
        rl = cd.record_layout(t, self.env)
        parts: list[str] = []
        end = 0
        for f in rl["fields"]:
            name = _member(f["name"]) if f["name"] else ""
            if rl["kind"] == "struct" and f["offset"] > end:
                parts.append(f"uint8_t _pad{end}[{f['offset'] - end}];")
            parts.append(self._member_type(f["type"], name, deps, depth) + ";")
            end = max(end, f["offset"] + f["size"])
        if rl["size"] > end:
            parts.append(f"uint8_t _pad{end}[{rl['size'] - end}];" if rl["kind"] == "struct"
                         else f"uint8_t _size[{rl['size']}];")
        head = f"{rl['kind']} __attribute__((packed)) {tag + ' ' if tag else ''}"
        return head + "{ " + " ".join(parts) + " }"

    def decl(self, kind: str, name: str, depth: int = 0) -> str:
        key = f"{kind} {name}"
        hit = self._decls.get(key)
        if hit is not None:
            return hit
        tag = self.tag(kind, name)
        self._decls[key] = ""  # a struct holding itself by value does not lay out anyway
        deps: list[str] = []
        body = self._body(("rec", kind, name), deps, depth, tag)
        text = "\n".join([*(d for d in deps if d), f"#ifndef KB_T_{tag}\n#define KB_T_{tag}\n{body};\n#endif"])
        self._decls[key] = text
        return text

    # -- access paths
    def _find(self, t: Any, off: int, size: int, ct: str, depth: int = 0) -> tuple[str, str] | None:
        """``(path, member ctype)`` of the scalar member at ``off`` of width ``size``."""
        if depth > cd.MAX_DEPTH * 2:
            return None
        r = cd._resolve(t, self.env)
        if r[0] in ("rec", "anon"):
            rl = cd.record_layout(r, self.env)
            best = None
            for f in rl["fields"]:
                if f["offset"] <= off < f["offset"] + max(f["size"], 1) or (
                        f["size"] == 0 and off >= f["offset"]):
                    hit = self._find(f["type"], off - f["offset"], size, ct, depth + 1)
                    if hit is not None:
                        name = _member(f["name"]) if f["name"] else ""
                        cand = (f".{name}{hit[0]}" if name else hit[0], hit[1])
                        if hit[1] == ct:
                            return cand
                        best = best or cand
            return best
        if r[0] == "arr":
            es = cd.layout(r[1], self.env)[0]
            if es <= 0:
                return None
            k = off // es
            if r[2] is not None and k >= r[2]:
                return None
            hit = self._find(r[1], off - k * es, size, ct, depth + 1)
            return (f"[{k}]{hit[0]}", hit[1]) if hit else None
        if off != 0:
            return None
        mt = cd.repr_ctype(r, self.env)
        if mt is None or cd.layout(r, self.env)[0] != size:
            return None
        return "", mt

    def _local_names(self, fi: int) -> dict[str, int]:
        got = self._names.get(fi)
        if got is None:
            got = {}
            try:
                from kbtool.lift.active import IMPL
                from kbtool.wasm.instr import read_local_decls

                m = self.lm.module
                start, end = m.code[fi - m.num_func_imports]
                decls, _p = read_local_decls(self.lm.data, start, end)
                n = len(m.func_type(fi).params)
                names = IMPL._local_names(self.lm, fi, n, n + sum(c for c, _t in decls))
                got = {name: k for k, name in enumerate(names)}
            except (IndexError, ValueError, AttributeError):
                got = {}
            self._names[fi] = got
        return got

    def hook(self, func_index: int, base: str, offset: int, ctype: str):
        apps = self.apps.get(func_index)
        if apps and self.lm is not None:
            idx = self._local_names(func_index).get(base)
            ty = apps.get(idx) if idx is not None else None
            if ty is not None:
                try:
                    return self._access(ty, base, offset, ctype)
                except cd.CDeclError:
                    return None
        if self.fallback:
            return self.fallback.hook(func_index, base, offset, ctype)
        return None

    def _access(self, ty: Any, base: str, offset: int, ctype: str):
        r = cd._resolve(ty, self.env)
        if r[0] != "ptr":
            return None
        target = cd._resolve(r[1], self.env)
        if target[0] != "rec":
            return None
        size = cd.layout(target, self.env)[0]
        if size <= 0:
            return None
        width = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
                 "int64_t": 8, "float": 4, "double": 8}.get(ctype)
        if width is None:
            return None
        k, rem = divmod(offset, size)
        hit = self._find(target, rem, width, ctype)
        if hit is None:
            return None
        path, mt = hit
        tag = self.tag(target[1], target[2])
        ref = f"((struct {tag} *)(M + {base}))" if target[1] == "struct" else f"((union {tag} *)(M + {base}))"
        text = f"{ref}{f'[{k}]' if k else ''}"
        text = f"{text}{path}" if path.startswith("[") else f"{text}{'.' if k else '->'}{path.lstrip('.')}"
        if mt != ctype:
            if width == 1 and mt in ("int8_t", "uint8_t") and ctype in ("int8_t", "uint8_t"):
                text = f"*({ctype} *)&{text}"
            else:
                return None
        return text, f"T_{tag}", self.decl(target[1], target[2])


def code_types(conn: sqlite3.Connection, version_id: int, known: dict[int, dict[str, Any]],
               fallback: Any = None) -> TypedFields:
    """The field hook of a version's code: KB types applied to its functions' locals (and
    the struct-pointer parameters of their declared prototypes), over ``fallback``."""
    if not kt.all_types(conn):
        return TypedFields(cd.Env(), {}, fallback)
    env = kb_env(conn)
    apps: dict[int, dict[int, Any]] = {}
    rows = {sid: idx for idx, sid, _sig in kn.version_targets(conn, version_id)}
    for r in kt.applied(conn, "local_type"):
        idx = rows.get(r["target"])
        if idx is None:
            continue
        try:
            apps.setdefault(idx, {})[int(r["key"])] = cd.parse_type(r["value"]["text"], env)
        except cd.CDeclError:
            continue
    for idx, k in known.items():
        proto = k.get("prototype")
        if not proto:
            continue
        try:
            p = cd.parse_prototype(proto["text"], env)
        except cd.CDeclError:
            continue
        for pos, (_n, pt) in enumerate(p["params"]):
            apps.setdefault(idx, {}).setdefault(pos, pt)
    taken = {lay[0] for lay in getattr(fallback, "layouts", [])}
    return TypedFields(env, apps, fallback, taken)


def import_values(conn: sqlite3.Connection, lines: list[tuple[str, str]]) -> dict[str, dict[str, Any] | None]:
    """``{target: value}`` of exported type lines ``(target, declaration)`` (parsed in any
    order, each after the ones it needs; None for one that does not parse)."""
    env = kb_env(conn)
    out: dict[str, dict[str, Any] | None] = {t: None for t, _x in lines}
    pending = list(lines)
    while pending:
        left = []
        for target, text in pending:
            trial = env.copy()
            try:
                decls = cd.parse_decls(text or "", trial)
            except cd.CDeclError:
                left.append((target, text))
                continue
            d = next((d for d in reversed(decls) if d.key == target), None)
            if d is not None:
                env.types, env.consts = trial.types, trial.consts
                out[target] = cd.summary(d, env)
        if len(left) == len(pending):
            break
        pending = left
    return out
