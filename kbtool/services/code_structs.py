"""C struct members for the lifter from ``kbtool analyze``'s recovered structs."""

from __future__ import annotations

import re
from typing import Any

from kbtool.lift import LiftModule, param_c_names
from kbtool.lift.names import C_KEYWORDS, c_ident

# C type of a struct field the lifter can render as a member: (analysis type, size) -> C
_FIELD_C = {
    ("i32", 4): "int32_t",
    ("ptr", 4): "int32_t",
    ("i64", 8): "int64_t",
    ("f32", 4): "float",
    ("f64", 8): "double",
}
_PARAM_BASE = re.compile(r"p(\d+)\Z")


class StructFields:
    """The lifter's field hook from ``kbtool analyze``'s recovered structs: a load or store
    at a constant offset from a struct parameter (``p<k>``, never reassigned: the analysis
    proves it) whose C type is the field's becomes ``((struct S *)(M + p0))->field_8``, with
    ``struct S`` declared before the function (packed, padded to the recorded offsets), so
    the C still compiles. Overlapping or narrow fields keep the plain typed access. Struct
    and field names are untrusted: sanitised as C identifiers, in the struct-tag namespace."""

    def __init__(self, structs: list[dict[str, Any]]) -> None:
        self.lm: LiftModule | None = None
        self.layouts: list[tuple[str, dict[int, tuple[str, str]], str]] = []
        self.members: dict[tuple[int, int], int] = {}  # (func, param) -> layout
        self._params: dict[int, dict[str, int]] = {}
        tags: set[str] = set()
        for st in structs:
            layout = self._layout(st, tags)
            if layout is None:
                continue
            for m in st.get("members") or []:
                base = _PARAM_BASE.match(str(m.get("base", ""))) if isinstance(m, dict) else None
                fi = m.get("func_index") if base else None
                if isinstance(fi, int):
                    self.members.setdefault((fi, int(base.group(1))), len(self.layouts))
            self.layouts.append(layout)

    def __bool__(self) -> bool:
        return bool(self.members)

    @staticmethod
    def _layout(st: dict[str, Any], tags: set[str]):
        tag = c_ident(str(st.get("name") or "struct"))
        if tag.startswith("struct_") and not tag[7:8].isdigit() and len(tag) > 7:
            tag = tag[7:]  # `struct f34_p0`, not `struct struct_f34_p0`
        if tag in C_KEYWORDS or tag in tags:
            tag = f"{tag}_{len(tags)}"
        fields: dict[int, tuple[str, str]] = {}
        parts: list[str] = []
        names: set[str] = set()
        end = 0
        for f in sorted(
            st.get("fields") or [], key=lambda f: (f.get("offset", -1), -f.get("size", 0))
        ):
            off, size = f.get("offset"), f.get("size")
            ct = _FIELD_C.get((f.get("type"), size))
            if ct is None or not isinstance(off, int) or off < end or off > 1 << 16:
                continue  # narrow, unknown or overlapping the previous field
            name = c_ident(str(f.get("name") or f"field_{off}"))
            if name in C_KEYWORDS or name in names or name.startswith("_pad"):
                name = f"{name}_{off}"
            names.add(name)
            if off > end:
                parts.append(f"uint8_t _pad{end}[{off - end}];")
            parts.append(f"{ct} {name};")
            fields[off] = (ct, name)
            end = off + size
        if not fields:
            return None
        tags.add(tag)
        decl = (
            f"#ifndef KB_S_{tag}\n#define KB_S_{tag}\n"
            f"struct __attribute__((packed)) {tag} {{ {' '.join(parts)} }};\n#endif"
        )
        return tag, fields, decl

    def hook(self, func_index: int, base: str, offset: int, ctype: str):
        if self.lm is None:
            return None
        params = self._params.get(func_index)
        if params is None:
            try:
                params = {n: k for k, n in enumerate(param_c_names(self.lm, func_index))}
            except (IndexError, ValueError):
                params = {}
            self._params[func_index] = params
        k = params.get(base)
        li = self.members.get((func_index, k)) if k is not None else None
        if li is None:
            return None
        tag, fields, decl = self.layouts[li]
        f = fields.get(offset)
        if f is None or f[0] != ctype:
            return None
        return f"((struct {tag} *)(M + {base}))->{f[1]}", f"S_{tag}", decl
