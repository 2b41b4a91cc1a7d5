"""Field types of GC proposal struct/array types (the reader keeps only their kind).

:func:`gc_types` re-reads the type section: per type index ``None`` (a func type),
``("struct", [storage types])`` or ``("array", storage type)``; a storage type is a value
type text or the packed ``"i8"`` / ``"i16"``. Only called when the module has GC types.
"""

from __future__ import annotations

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.instr import read_valtype
from kbtool.wasm.leb import read_uleb
from kbtool.wasm.reader import Module


def _count(data, p: int, end: int, what: str) -> tuple[int, int]:
    n, p = read_uleb(data, p, end, 32, what)
    if n > end - p:
        raise WasmFormatError(p, what, "count larger than the section")
    return n, p


def _storage(data, p: int, end: int) -> tuple[str, int]:
    if p < end and data[p] in (0x78, 0x77):
        t, p = ("i8" if data[p] == 0x78 else "i16"), p + 1
    else:
        t, p = read_valtype(data, p, end, "field type")
    return t, p + 1  # mutability byte


def _subtype(data, p: int, end: int, form: int):
    if form in (0x50, 0x4F):
        k, p = _count(data, p, end, "supertype count")
        for _ in range(k):
            _, p = read_uleb(data, p, end, 32, "supertype index")
        form, p = data[p], p + 1
    seen: set[int] = set()
    while form in (0x4C, 0x4D, 0x65) and form not in seen:
        seen.add(form)
        if form != 0x65:
            _, p = read_uleb(data, p, end, 32, "descriptor type index")
        form, p = data[p], p + 1
    if form == 0x60:
        for what in ("parameter count", "result count"):
            n, p = _count(data, p, end, what)
            for _ in range(n):
                _, p = read_valtype(data, p, end)
        return None, p
    if form == 0x5F:
        k, p = _count(data, p, end, "field count")
        fields = []
        for _ in range(k):
            t, p = _storage(data, p, end)
            fields.append(t)
        return ("struct", fields), p
    if form == 0x5E:
        t, p = _storage(data, p, end)
        return ("array", t), p
    raise WasmFormatError(p - 1, "composite type form", f"got 0x{form:02x}")


def gc_types(data: bytes, m: Module) -> list:
    """One entry per type index (see the module docstring); ``[]`` without GC types."""
    if all(t.kind == "func" for t in m.types):
        return []
    sec = next((s for s in m.sections if s.id == 1), None)
    if sec is None:
        return []
    p, end = sec.offset, sec.offset + sec.size
    out: list = []
    n, p = _count(data, p, end, "type count")
    try:
        for _ in range(n):
            form, p = data[p], p + 1
            if form == 0x4E:
                k, p = _count(data, p, end, "rec group size")
                for _ in range(k):
                    t, p = _subtype(data, p + 1, end, data[p])
                    out.append(t)
            else:
                t, p = _subtype(data, p, end, form)
                out.append(t)
    except IndexError as e:
        raise WasmFormatError(p, "type section", "unexpected end of data") from e
    return out
