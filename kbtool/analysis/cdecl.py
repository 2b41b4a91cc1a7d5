"""A small C declaration parser with wasm32 layouts (pure; issue 27, types).

``parse_decls(text, env)`` reads struct, union, enum and typedef declarations (nested types,
arrays, pointers, function pointers, anonymous members, ``__attribute__((packed))`` and
``aligned(N)``; bit-fields are refused) and returns the named types it declares;
``layout(t, env)`` computes sizes, alignments and field offsets as clang does for
``--target=wasm32`` (pointers 4 bytes, ``long`` 4, ``long long`` 8 aligned 8, ``long double``
16 aligned 16). ``print_decl`` prints a named type back as one canonical declaration that
parses to the same layout. ``parse_prototype`` reads ``int f(struct sqlite3 *db, const char
*zSql)`` and ``check_signature`` checks it against a wasm signature with the wasm32 C ABI.

Types are plain tuples so they can be compared and stored as JSON:

* ``("prim", name)``: ``int``, ``unsigned char``, ``double``, ``void`` ...
* ``("ptr", T)``, ``("arr", T, n)`` (``n`` None: a flexible array member),
  ``("fn", RET, (params...), variadic)``
* ``("rec", "struct"|"union", tag)``: a reference to a named record (complete or not);
  ``("anon", "struct"|"union", fields, attrs)``: an anonymous record defined in place
* ``("enum", tag)``, ``("name", typedef)``

Input is bounded (:data:`MAX_TEXT` characters, :data:`MAX_DEPTH` nesting, :data:`MAX_TYPES`
declarations, :data:`MAX_FIELDS` members); every error is one line with its position.

Parts: ``cdecl_tokens`` (vocabulary, tokenizer, :class:`Env`), ``cdecl_parse`` (the parser),
``cdecl_layout`` (wasm32 layouts), ``cdecl_text`` (back to C text); this module holds the
prototype checks and re-exports the parts' names (``from kbtool.analysis import cdecl``).
"""

from __future__ import annotations

from typing import Any

from kbtool.analysis.cdecl_layout import (  # noqa: F401  (re-exported: the names stay importable here)
    _resolve,
    layout,
    leaves,
    record_body,
    record_layout,
    scalar_class,
)
from kbtool.analysis.cdecl_parse import (  # noqa: F401  (re-exported: the names stay importable here)
    _Parser,
    parse_decls,
    parse_type,
)
from kbtool.analysis.cdecl_text import (  # noqa: F401  (re-exported: the names stay importable here)
    decl_text,
    print_decl,
    references,
    repr_ctype,
    summary,
    type_text,
)
from kbtool.analysis.cdecl_tokens import (  # noqa: F401  (re-exported: the names stay importable here)
    BUILTIN_TYPEDEFS,
    IDENT,
    KEYWORDS,
    MAX_DEPTH,
    MAX_ENUMERATORS,
    MAX_FIELDS,
    MAX_NAME,
    MAX_SIZE,
    MAX_TEXT,
    MAX_TYPES,
    PRIMS,
    STD_TYPEDEFS,
    CDeclError,
    Decl,
    Env,
    Tok,
    tokenize,
)

# ------------------------------------------------------------------------------ prototypes


def parse_prototype(text: str, env: Env | None = None) -> dict[str, Any]:
    """``int f(struct sqlite3 *db, const char *zSql)`` -> ``{name, ret, params: [(name,
    type)], variadic}`` (types as tuples)."""
    if not isinstance(text, str) or not text.strip():
        raise CDeclError("empty prototype")
    if len(text) > 4096:
        raise CDeclError("prototype longer than 4096 characters")
    p = _Parser(text.strip().rstrip(";"), (env or Env()).copy())
    base, _storage = p.specifiers({})
    name, ty = p.declarator(base, abstract=True)
    if p.tok.kind != "eof":
        raise p.err("unexpected text after the prototype")
    if ty[0] != "fn":
        raise CDeclError("not a prototype: expected RET NAME(PARAMS)")
    return {"name": name, "ret": ty[1], "params": list(ty[2]), "variadic": ty[3]}


def wasm_lowering(t: Any, env: Env, *, ret: bool = False) -> list[str]:
    """The wasm value types a C type becomes under the wasm32 C ABI (``[]`` for void; a
    struct by value: its single scalar, else a pointer, or for a result a hidden first
    parameter written ``["sret"]``)."""
    r = _resolve(t, env)
    cls = scalar_class(r, env)
    if cls == "void":
        return []
    if cls in ("ptr", "enum", "array", "fn"):
        return ["i32"]
    if cls == "float":
        size = layout(r, env)[0]
        return {4: ["f32"], 8: ["f64"]}.get(size, ["sret"] if ret else ["i64", "i64"])
    if cls in ("int", "uint", "bool"):
        return ["i64"] if layout(r, env)[0] == 8 else ["i32"]
    # a record by value
    ls = leaves(r, env, limit=3)
    if len(ls) == 1 and layout(r, env)[0] == ls[0][1]:
        return wasm_lowering(ls[0][2], env, ret=ret)
    return ["sret"] if ret else ["i32"]


def check_signature(
    proto: dict[str, Any], params: list[str], results: list[str], env: Env
) -> str | None:
    """Why ``proto`` disagrees with the wasm signature ``(params) -> results`` (None: fits)."""
    want_p: list[str] = []
    ret = wasm_lowering(proto["ret"], env, ret=True)
    want_r = ret
    if ret == ["sret"]:
        want_p.append("i32")
        want_r = []
    for _n, pt in proto["params"]:
        want_p += wasm_lowering(pt, env)
    if proto["variadic"]:
        want_p.append("i32")
    sig = f"({', '.join(params)}) -> {', '.join(results) or '()'}"
    if want_p != list(params):
        return f"the C parameters lower to ({', '.join(want_p)}), the wasm signature is {sig}"
    if want_r != list(results):
        return f"the C result lowers to ({', '.join(want_r)}), the wasm signature is {sig}"
    return None
