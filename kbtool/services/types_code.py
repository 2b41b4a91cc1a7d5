"""KB types in the lifted C: the field hook that turns a typed local's or parameter's loads and
stores into member accesses (``p->len``) and declares the records it uses (:mod:`kbtool.services.types`).
"""

from __future__ import annotations

import re
from typing import Any

from kbtool.analysis import cdecl as cd

# --------------------------------------------------------------------------- the code


_PRELUDE_TAGS = {"v128", "wasm_ref_s"}


# a member name after `->` only clashes with a macro: the prelude's and <stdint.h>'s
_MACRO = re.compile(
    r"(KB_\w*|KBTOOL_\w*|REF_FUNC|REF_NULL|HT_SHARED|U?INT\w*_(?:MAX|MIN|C)|SIZE_MAX"
    r"|PTRDIFF_\w+|SIG_ATOMIC_\w+|WCHAR_\w+|WINT_\w+|NULL|__\w*)\Z"
)


def _member(name: str) -> str:
    from kbtool.lift.names import C_KEYWORDS

    return f"{name}_" if name in C_KEYWORDS or _MACRO.match(name) else name


_WIDTH = {
    "int8_t": 1,
    "uint8_t": 1,
    "int16_t": 2,
    "uint16_t": 2,
    "int32_t": 4,
    "uint32_t": 4,
    "int64_t": 8,
    "float": 4,
    "double": 8,
}


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

    def __init__(
        self,
        env: cd.Env,
        apps: dict[int, dict[int, Any]],
        fallback: Any = None,
        taken: set[str] | None = None,
    ) -> None:
        self.env = env
        self.apps = apps
        self.fallback = fallback
        self.lm: Any = None
        self.taken = set(taken or ())
        self._tags: dict[str, str] = {}
        self._decls: dict[str, str] = {}
        self._names: dict[int, dict[str, int]] = {}
        #: types applied to data items (by address) and globals (index -> (text, type))
        self.items: dict[int, Any] = {}
        self.globals: dict[int, tuple[str, Any]] = {}
        self._item_types: dict[int, tuple[str, str, str] | None] = {}

    def data_hook(self) -> TypedFields | None:
        """Itself when types are applied to data items or globals (the lifter's
        :class:`kbtool.lift.names.DataTypes`), else None."""
        return self if self.items or self.globals else None

    # -- data items and globals (kbtool.lift.names.DataTypes)
    def item_type(self, address: int) -> tuple[str, str, str] | None:
        """``(pointer type, guard, declaration)`` of the typed item at ``address``:
        ``struct cfg *``, ``struct op (*)[3]``, ``uint8_t (*)[256]``."""
        if address in self._item_types:
            return self._item_types[address]
        ty = self.items.get(address)
        out = None
        if ty is not None:
            try:
                out = self._pointer_to(ty)
            except cd.CDeclError:
                out = None
        self._item_types[address] = out
        return out

    def _pointer_to(self, ty: Any) -> tuple[str, str, str] | None:
        r = cd._resolve(ty, self.env)
        dims = ""
        while r[0] == "arr" and len(dims) < 40:
            dims += f"[{'' if r[2] is None else r[2]}]"
            r = cd._resolve(r[1], self.env)
        if r[0] == "rec":
            tag = self.tag(r[1], r[2])
            base, guard, decl = f"{r[1]} {tag}", f"T_{tag}", self.decl(r[1], r[2])
        else:
            ct = cd.repr_ctype(r, self.env)
            if ct is None:
                return None
            base, guard, decl = ct, "", ""
        return (f"{base} (*){dims}" if dims else f"{base} *"), guard, decl

    def item_field(self, address: int, offset: int, ctype: str) -> tuple[str, str] | None:
        """``(member path, member C type)`` of an access at ``offset`` into the typed item."""
        ty = self.items.get(address)
        width = _WIDTH.get(ctype)
        if ty is None or width is None:
            return None
        try:
            return self._find(ty, offset, width, ctype)
        except cd.CDeclError:
            return None

    def item_stride(self, address: int) -> int:
        """The element size of the typed item at ``address`` when it is an array, else 0."""
        ty = self.items.get(address)
        if ty is None:
            return 0
        try:
            r = cd._resolve(ty, self.env)
            return cd.layout(r[1], self.env)[0] if r[0] == "arr" else 0
        except cd.CDeclError:
            return 0

    def global_type(self, index: int) -> str | None:
        g = self.globals.get(index)
        return g[0] if g else None

    def global_field(
        self, index: int, base: str, offset: int, ctype: str
    ) -> tuple[str, str, str] | None:
        g = self.globals.get(index)
        if g is None:
            return None
        try:
            return self._access(g[1], base, offset, ctype)
        except cd.CDeclError:
            return None

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
            return (
                inner.replace(" X", f" {name}[{'' if r[2] is None else r[2]}]", 1)
                if " X" in inner
                else f"uint8_t {name}[{cd.layout(r, self.env)[0]}]"
            )
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
            parts.append(
                f"uint8_t _pad{end}[{rl['size'] - end}];"
                if rl["kind"] == "struct"
                else f"uint8_t _size[{rl['size']}];"
            )
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
        text = "\n".join(
            [*(d for d in deps if d), f"#ifndef KB_T_{tag}\n#define KB_T_{tag}\n{body};\n#endif"]
        )
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
                    f["size"] == 0 and off >= f["offset"]
                ):
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
        width = _WIDTH.get(ctype)
        if width is None:
            return None
        k, rem = divmod(offset, size)
        hit = self._find(target, rem, width, ctype)
        if hit is None:
            return None
        path, mt = hit
        tag = self.tag(target[1], target[2])
        ref = (
            f"((struct {tag} *)(M + {base}))"
            if target[1] == "struct"
            else f"((union {tag} *)(M + {base}))"
        )
        text = f"{ref}{f'[{k}]' if k else ''}"
        text = (
            f"{text}{path}"
            if path.startswith("[")
            else f"{text}{'.' if k else '->'}{path.lstrip('.')}"
        )
        if mt != ctype:
            if width == 1 and mt in ("int8_t", "uint8_t") and ctype in ("int8_t", "uint8_t"):
                text = f"*({ctype} *)&{text}"
            else:
                return None
        return text, f"T_{tag}", self.decl(target[1], target[2])
