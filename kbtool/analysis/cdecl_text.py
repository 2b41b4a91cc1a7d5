"""C types back to text: one canonical declaration per named type that parses to the same
layout, type names, what a declaration references, its summary (:mod:`kbtool.analysis.cdecl`).
"""

from __future__ import annotations

from typing import Any

from kbtool.analysis.cdecl_layout import _resolve, layout, record_layout, scalar_class
from kbtool.analysis.cdecl_tokens import CDeclError, Decl, Env


def repr_ctype(t: Any, env: Env) -> str | None:
    """The fixed-width C type of a scalar as the lifter's memory accesses see it
    (``int32_t`` for pointers, enums and ints, ``uint8_t`` for unsigned char ...)."""
    r = _resolve(t, env)
    cls = scalar_class(r, env)
    if cls in ("ptr", "enum"):
        return "int32_t"
    if cls == "float":
        return {4: "float", 8: "double"}.get(layout(r, env)[0])
    if cls in ("int", "uint", "bool"):
        size = layout(r, env)[0]
        if size >= 4:
            return {4: "int32_t", 8: "int64_t"}.get(size)
        return ("uint" if cls in ("uint", "bool") else "int") + f"{size * 8}_t"
    return None


# ------------------------------------------------------------------------------ printing


def type_text(t: Any) -> str:
    """A type as a C type name: ``struct sqlite3 *``, ``char [16]``, ``int (*)(int)``."""
    return decl_text(t, None)


def _spec(t: Any) -> str:
    k = t[0]
    if k == "prim":
        return t[1]
    if k == "name":
        return t[1]
    if k == "rec":
        return f"{t[1]} {t[2]}"
    if k == "enum":
        return f"enum {t[1]}"
    if k == "anon":
        return _record_def(t[1], None, t[2], dict(t[3]))
    raise CDeclError(f"no specifier for {k}")


def decl_text(t: Any, name: str | None) -> str:
    """``t`` declaring ``name`` (``char *s``, ``int a[4]``, ``int (*cb)(int)``)."""
    inner = name or ""
    while True:
        k = t[0]
        if k == "ptr":
            inner = "*" + inner
            t = t[1]
        elif k == "arr":
            if inner.startswith("*"):
                inner = f"({inner})"
            inner = f"{inner}[{'' if t[2] is None else t[2]}]"
            t = t[1]
        elif k == "fn":
            if inner.startswith("*"):
                inner = f"({inner})"
            ps = ", ".join(decl_text(pt, pn) for pn, pt in t[2])
            if t[3]:
                ps = f"{ps}, ..." if ps else "..."
            inner = f"{inner}({ps or 'void'})"
            t = t[1]
        else:
            spec = _spec(t)
            return f"{spec} {inner}".rstrip() if inner else spec


def _attr_text(attrs: dict[str, Any]) -> str:
    out = []
    if attrs.get("packed"):
        out.append("packed")
    if attrs.get("aligned"):
        out.append(f"aligned({int(attrs['aligned'])})")
    return f"__attribute__(({', '.join(out)})) " if out else ""


def _record_def(kind: str, tag: str | None, fields: tuple, attrs: dict[str, Any]) -> str:
    members = []
    for name, ft, fattrs in fields:
        fa = _attr_text(dict(fattrs)).strip()
        members.append(decl_text(ft, name) + (f" {fa}" if fa else "") + ";")
    head = f"{kind} {_attr_text(attrs)}{tag + ' ' if tag else ''}"
    return f"{head}{{ {' '.join(members)} }}" if members else f"{head}{{ }}"


def print_decl(d: Decl) -> str:
    """One canonical declaration of ``d`` (one line, ends with ``;``)."""
    if d.kind in ("struct", "union"):
        if d.body is None:
            return f"{d.kind} {d.name};"
        fields, attrs = d.body
        return _record_def(d.kind, d.name, fields, dict(attrs)) + ";"
    if d.kind == "enum":
        if d.body is None:
            return f"enum {d.name};"
        items = ", ".join(f"{n} = {v}" for n, v in d.body)
        return f"enum {d.name} {{ {items} }};"
    return f"typedef {decl_text(d.body, d.name)};"


def references(d: Decl) -> set[str]:
    """Keys of the named types ``d``'s definition mentions (``struct foo``, ``u8``...)."""
    out: set[str] = set()

    def walk(t: Any, depth: int = 0) -> None:
        if depth > 200:
            return
        k = t[0]
        if k == "name":
            out.add(t[1])
        elif k == "rec":
            out.add(f"{t[1]} {t[2]}")
        elif k == "enum":
            out.add(f"enum {t[1]}")
        elif k in ("ptr", "arr"):
            walk(t[1], depth + 1)
        elif k == "fn":
            walk(t[1], depth + 1)
            for _n, pt in t[2]:
                walk(pt, depth + 1)
        elif k == "anon":
            for _n, ft, _a in t[2]:
                walk(ft, depth + 1)

    if d.kind in ("struct", "union") and d.body:
        for _n, ft, _a in d.body[0]:
            walk(ft)
    elif d.kind == "typedef":
        walk(d.body)
    out.discard(d.key)
    return out


def summary(d: Decl, env: Env) -> dict[str, Any]:
    """A JSON-able description: ``{kind, name, text, size, align, fields, enumerators}``."""
    out: dict[str, Any] = {"kind": d.kind, "name": d.name, "text": print_decl(d)}
    if d.kind in ("struct", "union") and d.body is not None:
        rl = record_layout(("rec", d.kind, d.name), env)
        out.update(
            size=rl["size"],
            align=rl["align"],
            fields=[
                {
                    "name": f["name"],
                    "type": type_text(f["type"]),
                    "offset": f["offset"],
                    "size": f["size"],
                }
                for f in rl["fields"]
            ],
        )
    elif d.kind == "enum":
        out.update(size=4, align=4, enumerators=[[n, v] for n, v in (d.body or ())])
    elif d.kind == "typedef":
        out["type"] = type_text(d.body)
        try:
            s, a = layout(d.body, env)
            out.update(size=s, align=a)
        except CDeclError:
            out.update(size=None, align=None)
    return out
