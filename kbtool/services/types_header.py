"""The KB's types as C (issue 27, types): one parser environment of every declared type, the
header ``kbtool export`` writes, the lifted code's field hook of a version (:func:`code_types`)
and the parse of exported type lines on import. Split from :mod:`kbtool.services.types`, which
re-exports every name here."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from kbtool.analysis import cdecl as cd
from kbtool.kb import knowledge as kn
from kbtool.kb import types as kt
from kbtool.services import knowledge as ks
from kbtool.services.types_code import TypedFields


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


def _mentioned(text: str) -> set[str]:
    """Type names a type text mentions: ``struct foo *`` -> {``struct foo``}, ``u8`` -> {``u8``}."""
    out = set(re.findall(r"\b(?:struct|union|enum) [A-Za-z_][A-Za-z0-9_]*", text))
    rest = re.sub(r"\b(?:struct|union|enum) [A-Za-z_][A-Za-z0-9_]*", " ", text)
    out |= {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rest) if w not in cd.KEYWORDS}
    return out


# --------------------------------------------------------------------------- export


def export_header(conn: sqlite3.Connection) -> str:
    """A C header of the KB's types that compiles on its own (forward declarations first,
    then each definition after the ones it needs by value)."""
    env = kb_env(conn)
    rows = kt.all_types(conn)
    decls = {k: d for k, d in env.types.items()}
    lines = [
        "/* kbtool: the KB's types (wasm32 layouts). */",
        "#ifndef KBTOOL_TYPES_H",
        "#define KBTOOL_TYPES_H",
        "#include <stdint.h>",
        "#include <stddef.h>",
        "#include <stdbool.h>",
    ]
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


def code_types(
    conn: sqlite3.Connection,
    version_id: int,
    known: dict[int, dict[str, Any]],
    fallback: Any = None,
) -> TypedFields:
    """The field hook of a version's code: KB types applied to its functions' locals (and
    the struct-pointer parameters of their declared prototypes), over ``fallback``."""
    data_rows = kt.applied(conn, "data_type")
    if not kt.all_types(conn) and not data_rows:
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
    tf = TypedFields(env, apps, fallback, taken)
    if data_rows:
        tf.items, tf.globals = _data_types(conn, version_id, env, data_rows)
    return tf


def _data_types(
    conn: sqlite3.Connection, version_id: int, env: cd.Env, rows: list[dict[str, Any]]
) -> tuple[dict[int, Any], dict[int, tuple[str, Any]]]:
    """The ``data_type`` annotations of this version's data items (address -> type) and
    globals (index -> (text, type)), found by content id and global key."""
    from kbtool.kb import datamodel as dm_store

    if dm_store.model_info(conn, version_id) is None:
        return {}, {}
    want = {
        r["target"]: r["value"]["text"] for r in rows if r.get("value") and r["value"].get("text")
    }
    items: dict[int, Any] = {}
    gl: dict[int, tuple[str, Any]] = {}
    keys = {ks.global_key(g): g["index"] for g in dm_store.globals_of(conn, version_id)}
    addr: dict[str, int] = {}
    if any(not t.startswith("g:") for t in want):
        its, _n = dm_store.list_items(conn, version_id, offset=0, limit=1_000_000)
        addr = {i["data_id"]: i["address"] for i in its}
    for target, text in want.items():
        try:
            ty = cd.parse_type(text, env)
        except cd.CDeclError:
            continue
        if target in keys:
            gl[keys[target]] = (text, ty)
        elif target in addr:
            items[addr[target]] = ty
    return items, gl


def import_values(
    conn: sqlite3.Connection, lines: list[tuple[str, str]]
) -> dict[str, dict[str, Any] | None]:
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
