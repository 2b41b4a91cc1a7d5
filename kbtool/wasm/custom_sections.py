"""The custom sections kbtool reads (``name``, ``producers``, ``target_features``); others
are kept as bytes (:mod:`kbtool.wasm.reader` dispatches here for section id 0).
"""

from __future__ import annotations

from collections.abc import Callable

from kbtool.wasm.model import CustomSection, Module
from kbtool.wasm.sections import _R

from .errors import WasmFormatError

# ----------------------------------------------------------------------------- customs


def _name_map(r: _R, what: str) -> dict[int, str]:
    out = {}
    n = r.count(f"{what} count", 2)
    for _ in range(n):
        i = r.u32(f"{what} index")
        out[i] = _lenient_name(r, what)
    return out


def _lenient_name(r: _R, what: str) -> str:
    n = r.u32(f"{what} length")
    b = r.raw(n, what)
    return b.decode("utf-8", "replace")


def _name_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    base = c.offset
    try:
        while r.pos < r.end:
            sid = r.u8("name subsection id")
            size = r.u32("name subsection size")
            if size > r.end - r.pos:
                raise WasmFormatError(r.pos, "name subsection", "size past the end")
            sub = _R(c.data, r.pos, r.pos + size)
            r.pos += size
            if sid == 0:
                m.module_name = _lenient_name(sub, "module name")
            elif sid == 1:
                m.func_names = _name_map(sub, "function name")
            elif sid == 2:
                n = sub.count("local name group count", 2)
                for _ in range(n):
                    fi = sub.u32("function index")
                    m.local_names[fi] = _name_map(sub, "local name")
            # other subsections (labels, types, tables, memories, globals, ...) tolerated
    except WasmFormatError as e:
        m.warnings.append(
            f"name section: malformed at offset 0x{base + e.offset:x}: expected {e.expected}"
        )


def _producers_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    out: dict[str, list[str]] = {}
    try:
        n = r.count("producers field count")
        for _ in range(n):
            fname = _lenient_name(r, "producers field name")
            k = r.count("producers value count")
            vals = out.setdefault(fname, [])
            for _ in range(k):
                name = _lenient_name(r, "producer name")
                ver = _lenient_name(r, "producer version")
                vals.append(f"{name} {ver}" if ver else name)
    except WasmFormatError as e:
        m.warnings.append(
            f"producers section: malformed at offset 0x{c.offset + e.offset:x}: "
            f"expected {e.expected}"
        )
    m.producers = out


def _target_features_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    out = []
    try:
        n = r.count("feature count", 2)
        for _ in range(n):
            prefix = r.u8("feature prefix")
            name = _lenient_name(r, "feature name")
            out.append(chr(prefix) + name)
    except WasmFormatError as e:
        m.warnings.append(
            f"target_features section: malformed at offset 0x{c.offset + e.offset:x}: "
            f"expected {e.expected}"
        )
    m.target_features = out


# ----------------------------------------------------------------------------- entry

# --------------------------------------------------------------------------- sections


def _custom_section(r: _R, m: Module) -> None:
    name = r.name("custom section name")
    c = CustomSection(name, r.pos, r.data[r.pos : r.end])
    m.customs.append(c)
    parse = _CUSTOM_PARSERS.get(name)
    if parse is not None:
        parse(c, m)
    r.pos = r.end


# custom sections kbtool reads (others are kept as bytes)
_CUSTOM_PARSERS: dict[str, Callable[[CustomSection, Module], None]] = {
    "name": _name_section,
    "producers": _producers_section,
    "target_features": _target_features_section,
}
