"""Knowledge beyond names (issue 27): the kinds, their value rules, the prototype parser, reads.

Every kind is one row of ``knowledge`` keyed by ``(kind, target, key)`` and written only by
:func:`kbtool.kb.gate.upsert_knowledge` (the same authority order, confidence rules, locks,
events and revert as function names):

| kind           | target                   | key                               | value                         |
|----------------|--------------------------|-----------------------------------|-------------------------------|
| ``comment``    | function stable_id       | ``''``                            | ``{text}``                    |
| ``line_comment``| function stable_id      | body-relative instruction offset  | ``{text, anchor, ordinal}``   |
| ``prototype``  | function stable_id       | ``''``                            | ``{text, ret, name, params}`` |
| ``local``      | function stable_id       | wasm local index                  | ``{name, type?}``             |
| ``data_name``  | ``d:...`` data_id / ``g:KEY`` | ``''``                       | ``{name}``                    |

A type kind (struct/union/enum declarations keyed by type name) plugs in as one more entry of
:data:`VALIDATORS`. The validators here are pure (text rules, the prototype grammar and the
check against the wasm signature); the services check what needs the module (a local index
within the function's locals, a line offset on an instruction).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from typing import Any

from kbtool.textutil import LazyPattern

KINDS: tuple[str, ...] = ("comment", "line_comment", "prototype", "local", "data_name")
FUNCTION_KINDS = frozenset({"comment", "line_comment", "prototype", "local"})
MAX_COMMENT = 4096  # characters of a comment (function or line)
MAX_PROTOTYPE = 1024  # characters of a prototype
MAX_PARAMS = 1000
MAX_NAME = 256
MAX_LOCAL_INDEX = 50_000

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# comments are prose: newlines and tabs allowed, every other control/bidi character refused
_COMMENT_CONTROL = LazyPattern(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_IDENT = LazyPattern(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_PROTO_CHARS = LazyPattern(r"[A-Za-z0-9_$ \t*,()\[\].:&]*\Z")


class PrototypeError(ValueError):
    """A prototype that does not parse, or disagrees with the function's wasm signature."""


# --------------------------------------------------------------------------- prototypes

_QUALIFIERS = {
    "const",
    "volatile",
    "restrict",
    "register",
    "static",
    "extern",
    "inline",
    "__restrict",
    "signed",
    "unsigned",
    "struct",
    "union",
    "enum",
    "_Atomic",
}
_I32 = {
    "char",
    "short",
    "int",
    "long",
    "bool",
    "_Bool",
    "int8_t",
    "int16_t",
    "int32_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "size_t",
    "ssize_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "wchar_t",
    "u8",
    "u16",
    "u32",
    "i8",
    "i16",
    "i32",
    "s8",
    "s16",
    "s32",
    "BOOL",
    "DWORD",
    "WORD",
    "BYTE",
    "UINT",
    "INT",
    "u_int",
    "u_char",
    "u_short",
    "off32_t",
}
_I64 = {
    "int64_t",
    "uint64_t",
    "i64",
    "u64",
    "s64",
    "off_t",
    "time_t",
    "intmax_t",
    "uintmax_t",
    "sqlite3_int64",
    "sqlite3_uint64",
    "sqlite_int64",
    "sqlite_uint64",
    "long_long",
}
_ANY = {"i32", "i64", "f32", "f64"}


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise PrototypeError("unbalanced parentheses")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise PrototypeError("unbalanced parentheses")
    parts.append(cur)
    return [p.strip() for p in parts]


def _wasm_of(ctype: str, *, ret: bool = False) -> set[str]:
    """The wasm value types a C type may lower to (wasm32 C ABI; memory64 pointers: i64)."""
    if "*" in ctype or "[" in ctype or "(" in ctype or "&" in ctype:
        return {"i32", "i64"}
    words = ctype.replace("::", " ").split()
    aggregate = bool(words) and words[0] in ("struct", "union")
    base = [w for w in words if w not in _QUALIFIERS]
    if aggregate:
        return {"sret"} if ret else {"i32", "i64"}  # by value: a pointer to a copy
    if not base:  # "unsigned", "signed"
        return {"i32"}
    if base == ["void"]:
        return {"void"}
    if "void" in base:
        raise PrototypeError(f"bad type {ctype!r}")
    if base in (["float"],):
        return {"f32"}
    if base in (["double"],):
        return {"f64"}
    if base == ["long", "double"]:
        return {"sret"} if ret else {"i64"}  # passed indirectly / split; not checked further
    if base.count("long") >= 2 or any(w in _I64 for w in base):
        return {"i64"}
    if all(w in _I32 for w in base):
        return {"i32"}
    if words and words[0] == "enum":
        return {"i32"}
    return set(_ANY)  # a typedef this KB does not know: not checked


def _ctype_text(tokens: list[str]) -> str:
    out = " ".join(tokens)
    out = re.sub(r"\s*\*\s*", " *", out).replace("* *", "**").replace("* *", "**")
    return out.strip()


_TYPE_WORDS = _I32 | _I64 | {"void", "float", "double", "long"}


def _pop_name(toks: list[str]) -> str | None:
    """Take the declarator name off the end of ``toks`` when there is one: ``char *s`` ->
    ``s``, ``unsigned x`` -> ``x``; ``unsigned int``, ``sqlite3``, ``struct foo`` have none."""
    if (
        len(toks) < 2
        or toks[-1] in ("*", "&")
        or toks[-1] in _TYPE_WORDS
        or toks[-1] in _QUALIFIERS
    ):
        return None
    if toks[-2] in ("struct", "union", "enum"):
        return None
    return toks.pop()


def _param(text: str, k: int) -> dict[str, Any]:
    if not text:
        raise PrototypeError(f"parameter {k + 1} is empty")
    if text == "...":
        return {"name": None, "type": "...", "varargs": True}
    fp = re.fullmatch(r"(.*?)\(\s*\*\s*([A-Za-z_$][A-Za-z0-9_$]*)?\s*\)\s*\((.*)\)", text)
    if fp:  # a function pointer: ret (*name)(args)
        name = fp.group(2)
        return {"name": name, "type": f"{fp.group(1).strip()} (*)({fp.group(3).strip()})"}
    arr = re.fullmatch(r"(.*?)\[\s*[0-9A-Za-z_]*\s*\]", text)
    suffix = ""
    if arr:
        text, suffix = arr.group(1).strip(), " *"
    toks = re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*(?:::[A-Za-z_$][A-Za-z0-9_$]*)*|\*|&", text)
    if "".join(toks).replace(" ", "") != re.sub(r"\s+", "", text):
        raise PrototypeError(f"cannot parse parameter {k + 1}: {text[:60]!r}")
    name = _pop_name(toks)
    if not [t for t in toks if t not in ("*", "&")]:
        raise PrototypeError(f"parameter {k + 1} has no type: {text[:60]!r}")
    return {"name": name, "type": _ctype_text(toks) + suffix}


def _decl(ctype: str, name: str | None) -> str:
    """A C declaration of ``name`` with type ``ctype`` (``char *s``, ``int (*cb)(int)``)."""
    if not name:
        return ctype
    if "(*)" in ctype:
        return ctype.replace("(*)", f"(*{name})", 1)
    return f"{ctype}{'' if ctype.endswith('*') else ' '}{name}"


def parse_prototype(text: Any) -> dict[str, Any]:
    """``int f(sqlite3 *db, const char *zSql)`` -> ``{text, ret, name, params: [{name, type}]}``;
    the function name may be left out (``int (int a)``). Raises :class:`PrototypeError`."""
    if not isinstance(text, str) or not text.strip():
        raise PrototypeError("empty prototype")
    if len(text) > MAX_PROTOTYPE:
        raise PrototypeError(f"prototype longer than {MAX_PROTOTYPE} characters")
    t = text.strip().rstrip(";").strip()
    if not _PROTO_CHARS.match(t):
        bad = next(ch for ch in t if not _PROTO_CHARS.match(ch))
        raise PrototypeError(f"unexpected character {bad!r} in prototype")
    m = re.fullmatch(r"(.*?)\((.*)\)", t, re.S)
    if m is None:
        raise PrototypeError("not a prototype: expected RET NAME(PARAMS)")
    head, args = m.group(1).strip(), m.group(2).strip()
    toks = re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*(?:::[A-Za-z_$][A-Za-z0-9_$]*)*|\*|&", head)
    if "".join(toks) != re.sub(r"\s+", "", head):
        raise PrototypeError(f"cannot parse the return type and name: {head[:60]!r}")
    name = _pop_name(toks)
    if not toks:
        raise PrototypeError("no return type (write void for none)")
    ret = _ctype_text(toks)
    params: list[dict[str, Any]] = []
    if args and args != "void":
        raw = _split_top(args)
        if len(raw) > MAX_PARAMS:
            raise PrototypeError(f"more than {MAX_PARAMS} parameters")
        params = [_param(p, k) for k, p in enumerate(raw)]
        if any(p.get("varargs") for p in params[:-1]):
            raise PrototypeError("... must be the last parameter")
    seen: set[str] = set()
    for p in params:
        n = p["name"]
        if n is None:
            continue
        if not _IDENT.match(n) or len(n) > MAX_NAME:
            raise PrototypeError(f"parameter name {n[:60]!r} is not a C identifier")
        if n in seen:
            raise PrototypeError(f"parameter name {n!r} is used twice")
        seen.add(n)
    _wasm_of(ret, ret=True)
    for p in params:
        if not p.get("varargs"):
            _wasm_of(p["type"])
    head_text = _decl(ret, name) if name else ret
    canon = (
        f"{head_text}(" + (", ".join(_decl(p["type"], p["name"]) for p in params) or "void") + ")"
    )
    return {"text": canon, "ret": ret, "name": name, "params": params}


def parse_type_sig(sig: str) -> tuple[list[str], list[str]]:
    """``(i32, i32) -> i32`` -> (params, results)."""
    m = re.fullmatch(r"\((.*)\)\s*->\s*(.*)", sig.strip())
    if m is None:
        return [], []
    ps = [p.strip() for p in m.group(1).split(",") if p.strip()]
    r = m.group(2).strip()
    if r.startswith("("):
        r = r[1:-1]
    rs = [x.strip() for x in r.split(",") if x.strip()]
    return ps, rs


def check_prototype(proto: dict[str, Any], type_sig: str) -> str | None:
    """Why ``proto`` disagrees with the wasm signature ``type_sig``, or None when it fits."""
    params, results = parse_type_sig(type_sig)
    fixed = [p for p in proto["params"] if not p.get("varargs")]
    varargs = len(fixed) != len(proto["params"])
    ret = _wasm_of(proto["ret"], ret=True)
    sret = "sret" in ret
    want = len(fixed) + int(varargs) + int(sret)
    if want != len(params):
        return (
            f"prototype has {len(fixed)} parameter(s){' and ...' if varargs else ''}"
            f"{' and a struct return' if sret else ''}; the wasm signature {type_sig}"
            f" takes {len(params)}"
        )
    wparams = params[1:] if sret else params
    if sret and results:
        return f"a struct returned by value has no wasm result, but the signature is {type_sig}"
    if not sret:
        if ret == {"void"}:
            if results:
                return f"prototype returns void; the wasm signature {type_sig} returns {', '.join(results)}"
        elif len(results) != 1:
            return (
                f"prototype returns {proto['ret']}; the wasm signature {type_sig} returns nothing"
            )
        elif results[0] not in ret:
            return f"return type {proto['ret']} is not wasm {results[0]} (signature {type_sig})"
    for k, (p, w) in enumerate(zip(fixed, wparams, strict=False)):
        ok = _wasm_of(p["type"])
        if w not in ok:
            return f"parameter {k + 1} ({p['type']}) is not wasm {w} (signature {type_sig})"
    return None


# --------------------------------------------------------------------------- value rules


def _text_problem(text: Any, what: str) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return f"invalid {what}: empty"
    if len(text) > MAX_COMMENT:
        return f"invalid {what}: longer than {MAX_COMMENT} characters ({len(text)})"
    if _COMMENT_CONTROL.search(text):
        return f"invalid {what}: control or bidi characters (only newlines and tabs are allowed)"
    return None


def _index_key(key: str, what: str, limit: int) -> str | None:
    if not key.isdigit() or int(key) > limit:
        return f"invalid {what}: {key[:20]!r} is not an index within 0..{limit}"
    return None


def _ident_problem(name: Any, what: str) -> str | None:
    if not isinstance(name, str) or not name:
        return f"invalid {what}: empty"
    if len(name) > MAX_NAME:
        return f"invalid {what}: longer than {MAX_NAME} characters"
    if not _IDENT.match(name):
        return f"invalid {what}: {name[:60]!r} is not a C identifier"
    return None


def _v_comment(key: str, value: dict[str, Any]) -> str | None:
    if key:
        return "invalid comment: a function comment has no key"
    return _text_problem(value.get("text"), "comment")


def _v_line(key: str, value: dict[str, Any]) -> str | None:
    return _index_key(key, "line offset", 1 << 32) or _text_problem(
        value.get("text"), "line comment"
    )


def _v_proto(key: str, value: dict[str, Any]) -> str | None:
    if key:
        return "invalid prototype: a prototype has no key"
    try:
        parse_prototype(value.get("text"))
    except PrototypeError as exc:
        return f"invalid prototype: {exc}"
    return None


def _v_local(key: str, value: dict[str, Any]) -> str | None:
    return _index_key(key, "local index", MAX_LOCAL_INDEX) or _ident_problem(
        value.get("name"), "local name"
    )


def _v_data(key: str, value: dict[str, Any]) -> str | None:
    if key:
        return "invalid data name: no key"
    return _ident_problem(value.get("name"), "data name")


#: kind -> value rule (``(key, value) -> problem or None``); a type kind adds its own entry
VALIDATORS: dict[str, Callable[[str, dict[str, Any]], str | None]] = {
    "comment": _v_comment,
    "line_comment": _v_line,
    "prototype": _v_proto,
    "local": _v_local,
    "data_name": _v_data,
}

_TARGET = LazyPattern(r"(d:[0-9a-f]{1,64}(#\d{1,9})?|g:[^\x00-\x1f\x7f]{1,256})\Z")


def validate_target(kind: str, target: Any) -> str | None:
    """Why ``target`` cannot carry ``kind`` (function kinds: checked by the gate)."""
    if not isinstance(target, str) or not target:
        return "empty target"
    if kind in ("data_name", "data_type") and not _TARGET.match(target):
        return f"invalid data target {target[:60]!r}: a data_id (d:...) or g:GLOBAL"
    if kind == "type" and (why := _types.validate_target(kind, target)):  # types (issue 27)
        return why
    if len(target) > 300:
        return "target longer than 300 characters"
    return None


def display(kind: str, value: dict[str, Any] | None) -> str | None:
    """The one-line text an event shows for a value (old_name/new_name columns)."""
    if not value:
        return None
    t = value.get("name") if kind in ("local", "data_name") else value.get("text")
    return str(t)[:200] if t is not None else None


# --------------------------------------------------------------------------- reads


def _row(r: sqlite3.Row | tuple) -> dict[str, Any]:
    kind, target, key, value, prov, conf, locked, evidence, vid, at = tuple(r)
    return {
        "kind": kind,
        "target": target,
        "key": key,
        "value": json.loads(value),
        "provenance": prov,
        "confidence": conf,
        "locked": bool(locked),
        "evidence": json.loads(evidence or "[]"),
        "version_id": vid,
        "updated_at": at,
    }


_COLS = "kind, target, key, value, provenance, confidence, locked, evidence, version_id, updated_at"


def get(conn: sqlite3.Connection, kind: str, target: str, key: str = "") -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT {_COLS} FROM knowledge WHERE kind = ? AND target = ? AND key = ?",
        (kind, target, key),
    ).fetchone()
    return _row(row) if row else None


def for_target(conn: sqlite3.Connection, target: str) -> list[dict[str, Any]]:
    """Every annotation of one target (a function's comments, prototype, locals)."""
    rows = conn.execute(
        f"SELECT {_COLS} FROM knowledge WHERE target = ? ORDER BY kind, key", (target,)
    ).fetchall()
    out = [_row(r) for r in rows]
    out.sort(key=lambda r: (r["kind"], int(r["key"]) if r["key"].isdigit() else 0, r["key"]))
    return out


def for_targets(
    conn: sqlite3.Connection, targets: list[str], kinds: tuple[str, ...] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """target -> annotations, for many targets (a version's functions), in chunks."""
    out: dict[str, list[dict[str, Any]]] = {}
    for k in range(0, len(targets), 500):
        chunk = targets[k : k + 500]
        q = f"SELECT {_COLS} FROM knowledge WHERE target IN ({','.join('?' * len(chunk))})"
        args: list[Any] = list(chunk)
        if kinds:
            q += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += list(kinds)
        for r in conn.execute(q, args):
            rec = _row(r)
            out.setdefault(rec["target"], []).append(rec)
    for recs in out.values():
        recs.sort(key=lambda r: (r["kind"], int(r["key"]) if r["key"].isdigit() else 0, r["key"]))
    return out


def of_kind(conn: sqlite3.Connection, kind: str) -> list[dict[str, Any]]:
    return [
        _row(r)
        for r in conn.execute(
            f"SELECT {_COLS} FROM knowledge WHERE kind = ? ORDER BY target, key", (kind,)
        )
    ]


def version_targets(conn: sqlite3.Connection, version_id: int) -> list[tuple[int, str, str]]:
    """``(index, stable_id, type_sig)`` of a version's defined functions that have knowledge."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT f.idx, f.stable_id, f.type_sig FROM functions f WHERE f.version_id = ?"
            " AND f.imported = 0 AND f.stable_id IN (SELECT target FROM knowledge) ORDER BY f.idx",
            (version_id,),
        )
    ]


def events(conn: sqlite3.Connection, target: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The gate's decisions on a target's annotations (oldest first)."""
    q = (
        "SELECT id, subject, akey, kind, written, reason, provenance, confidence, actor, old_name,"
        " new_name, old, new, evidence, version_id, created_at, repeats FROM annotation_events"
        " WHERE target = ?"
    )
    args: list[Any] = [target]
    if kind:
        q += " AND subject = ?"
        args.append(kind)
    out = []
    for r in conn.execute(q + " ORDER BY id", args):
        (
            eid,
            subject,
            akey,
            ekind,
            written,
            reason,
            prov,
            conf,
            actor,
            old_n,
            new_n,
            old,
            new,
            ev,
            vid,
            at,
            rep,
        ) = tuple(r)
        out.append(
            {
                "id": eid,
                "subject": subject,
                "key": akey,
                "kind": ekind,
                "written": bool(written),
                "reason": reason,
                "provenance": prov,
                "confidence": conf,
                "actor": actor,
                "old_text": old_n,
                "new_text": new_n,
                "old": json.loads(old) if old else None,
                "new": json.loads(new) if new else None,
                "evidence": json.loads(ev) if ev else None,
                "version_id": vid,
                "created_at": at,
                "repeats": rep,
            }
        )
    return out


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {k: n for k, n in conn.execute("SELECT kind, COUNT(*) FROM knowledge GROUP BY kind")}


# --------------------------------------------------------------------------- types (issue 27)
# struct/union/enum/typedef declarations and the types applied to locals and data: three more
# kinds through the same gate; their value rules live in kbtool.kb.types.
from kbtool.kb import types as _types  # noqa: E402

KINDS = KINDS + _types.TYPE_KINDS
FUNCTION_KINDS = FUNCTION_KINDS | {"local_type"}
VALIDATORS.update(_types.VALIDATORS)
