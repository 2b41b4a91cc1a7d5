"""wasm32 layouts of parsed C types as clang computes them: sizes, alignments, field offsets,
the scalar leaves of a record (:mod:`kbtool.analysis.cdecl`).
"""

from __future__ import annotations

from typing import Any

from kbtool.analysis.cdecl_tokens import (
    BUILTIN_TYPEDEFS,
    MAX_DEPTH,
    MAX_SIZE,
    PRIMS,
    CDeclError,
    Env,
    _builtin,
)

# ------------------------------------------------------------------------------ layout


def _resolve(t: Any, env: Env, depth: int = 0) -> Any:
    """``t`` with typedef names replaced by what they stand for (the outermost level only)."""
    while t[0] == "name":
        depth += 1
        if depth > 64:
            raise CDeclError("typedef chain too long (a cycle?)")
        d = env.types.get(t[1])
        if d is not None and d.kind == "typedef":
            t = d.body
        elif t[1] in BUILTIN_TYPEDEFS:
            return _builtin(t[1])
        else:
            raise CDeclError(f"unknown type {t[1]!r}")
    return t


def layout(t: Any, env: Env, _depth: int = 0, _seen: tuple = ()) -> tuple[int, int]:
    """``(size, align)`` of a type on wasm32; incomplete types are an error."""
    if _depth > MAX_DEPTH * 2:
        raise CDeclError("types nested too deeply")
    t = _resolve(t, env)
    if t[0] == "rec":
        if (t[1], t[2]) in _seen:
            raise CDeclError(f"{t[1]} {t[2]} contains itself (use a pointer)")
        _seen = (*_seen, (t[1], t[2]))
    k = t[0]
    if k == "prim":
        size, align, cls = PRIMS[t[1]]
        if cls == "void":
            raise CDeclError("void has no size")
        return size, align
    if k == "ptr":
        return 4, 4
    if k == "enum":
        return 4, 4
    if k == "fn":
        raise CDeclError("a function has no size (use a pointer to it)")
    if k == "arr":
        if t[2] is None:
            return 0, layout(t[1], env, _depth + 1, _seen)[1]
        size, align = layout(t[1], env, _depth + 1, _seen)
        total = size * t[2]
        if total > MAX_SIZE:
            raise CDeclError(f"array of {t[2]} elements larger than {MAX_SIZE} bytes")
        return total, align
    if k in ("rec", "anon"):
        rl = record_layout(t, env, _depth + 1, _seen)
        return rl["size"], rl["align"]
    raise CDeclError(f"unknown type form {k!r}")


def record_body(t: Any, env: Env) -> tuple[str, str | None, tuple, dict[str, Any]]:
    """``(struct|union, tag or None, fields, attrs)`` of a record type; error if incomplete."""
    t = _resolve(t, env)
    if t[0] == "anon":
        return t[1], None, t[2], dict(t[3])
    if t[0] != "rec":
        raise CDeclError("not a struct or union")
    d = env.types.get(f"{t[1]} {t[2]}")
    if d is None or d.body is None:
        raise CDeclError(f"{t[1]} {t[2]} is incomplete (declare its members)")
    fields, attrs = d.body
    return t[1], t[2], fields, dict(attrs)


def record_layout(t: Any, env: Env, _depth: int = 0, _seen: tuple = ()) -> dict[str, Any]:
    """``{kind, size, align, fields: [{name, type, offset, size, align}]}`` of a record
    (anonymous members keep ``name`` None and their own ``type``)."""
    kind, _tag, fields, attrs = record_body(t, env)
    packed = bool(attrs.get("packed"))
    off = 0
    size = 0
    align = 1
    out = []
    for k, (name, ft, fattrs) in enumerate(fields):
        fs, fa = layout(ft, env, _depth + 1, _seen)
        rt = _resolve(ft, env)
        if rt[0] == "arr" and rt[2] is None and (kind != "struct" or k != len(fields) - 1):
            raise CDeclError(f"flexible array member {name!r} must be the last member of a struct")
        if packed or fattrs.get("packed"):
            fa = 1
        if fattrs.get("aligned"):
            fa = max(fa, int(fattrs["aligned"]))
        align = max(align, fa)
        if kind == "struct":
            off = (off + fa - 1) // fa * fa
            out.append({"name": name, "type": ft, "offset": off, "size": fs, "align": fa})
            off += fs
            size = off
        else:
            out.append({"name": name, "type": ft, "offset": 0, "size": fs, "align": fa})
            size = max(size, fs)
        if size > MAX_SIZE:
            raise CDeclError(f"larger than {MAX_SIZE} bytes")
    if attrs.get("aligned"):
        align = max(align, int(attrs["aligned"]))
    size = (size + align - 1) // align * align
    return {"kind": kind, "size": size, "align": align, "fields": out}


def leaves(
    t: Any, env: Env, base: int = 0, path: str = "", limit: int = 100_000
) -> list[tuple[int, int, Any, str]]:
    """Scalar members of a type, flattened: ``[(offset, size, scalar type, C access path)]``
    (paths like ``.a``, ``.in.x``, ``.arr[3]``, ``.u.f``), arrays of up to 64 elements
    expanded, at most ``limit`` leaves."""
    out: list[tuple[int, int, Any, str]] = []

    def walk(t: Any, off: int, p: str, depth: int) -> None:
        if len(out) >= limit or depth > MAX_DEPTH * 2:
            return
        r = _resolve(t, env)
        if r[0] in ("rec", "anon"):
            rl = record_layout(r, env)
            for f in rl["fields"]:
                walk(
                    f["type"],
                    off + f["offset"],
                    p + (f".{f['name']}" if f["name"] else ""),
                    depth + 1,
                )
        elif r[0] == "arr":
            if r[2] is None:
                return
            es = layout(r[1], env)[0]
            for k in range(min(r[2], 64)):
                walk(r[1], off + k * es, f"{p}[{k}]", depth + 1)
        else:
            out.append((off, layout(r, env)[0], r, p))

    walk(t, base, path, 0)
    return out


def scalar_class(t: Any, env: Env) -> str:
    """``int``/``uint``/``float``/``ptr``/``enum``/``bool``/``void``/``record``/``array``/``fn``."""
    r = _resolve(t, env)
    if r[0] == "prim":
        return PRIMS[r[1]][2]
    return {
        "ptr": "ptr",
        "enum": "enum",
        "rec": "record",
        "anon": "record",
        "arr": "array",
        "fn": "fn",
    }[r[0]]
